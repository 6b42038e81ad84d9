"""The remote tier (docs/tiered-storage.md, "Tiering"): sealed CommitLog files regrouped into per-queue
segment objects, committed by one manifest per file, served below the local start by `TieredStore`."""
