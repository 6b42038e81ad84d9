"""Diskless topics (docs/diskless.md): WAL objects holding many queues' batches, and a per-queue index
of conditional writes on the object store. Blocking code: the gateway calls it in worker threads."""
