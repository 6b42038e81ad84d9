"""The offline store tool behind `rocketgate store dump|verify|rebuild DATA_DIR` (docs/admin.md):
reads a data dir's files through the construct definitions (codec.formats) and the store's own
code, read-only for dump and verify (also on a live gateway's dir), and rebuilds the derived
ConsumeQueues and IndexFiles from the CommitLog offline."""
