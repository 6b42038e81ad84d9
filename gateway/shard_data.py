"""Data dirs across the one-process / sharded boundary (docs/shards.md "Data dirs").

`--shards N` on a one-process gateway's data dir moves that store into DATA_DIR/shard-0: shard 0
opens it as its own (node 1) and publishes its topics to the cluster led by itself, with their
committed offsets (gateway.cluster.service), so every record, offset and group stays; topics made
afterwards spread over every shard. The move is a rename of each top-level entry (same file
system: no copy) into shard-0.migrating, then one rename to shard-0, so a start cut short by a
crash finishes the move on the next start. A one-process gateway on a sharded data dir is refused:
its stores are the shards', and one process cannot serve them together."""
from __future__ import annotations

import os

from store.lock import LOCK_FILE
from store.topic_journal import _fsync_dir

SHARD_PREFIX = "shard-"
STAGING = "shard-0.migrating"
SHARED_TABLES = "shared-tables"  # the shards' one table catalog and warehouse (docs/shards.md "Table topics")
SUPERVISOR_ENTRIES = frozenset({LOCK_FILE, "etcd", "shards.log", "etcd-url", "inter-broker.json", SHARED_TABLES})
_STORE_MARKERS = ("commitlog", "config")  # what a one-process gateway's store always has at its top


class ShardDataError(Exception):
    """The data dir cannot be used this way; the message is the one line to print."""


def shard_dirs(data_dir: str) -> list[str]:
    try:
        return sorted(e for e in os.listdir(data_dir) if e.startswith(SHARD_PREFIX) and e != STAGING
                      and e.removeprefix(SHARD_PREFIX).isdigit())
    except (FileNotFoundError, NotADirectoryError):
        return []


def refuse_sharded(data_dir: str) -> None:
    """For a one-process gateway: ShardDataError when `data_dir` holds shards' stores."""
    shards = shard_dirs(data_dir)
    if shards:
        raise ShardDataError(f"data dir {data_dir!r} holds the stores of {len(shards)} shards "
                             f"({', '.join(shards)}): start it with --shards {len(shards)}")


def move_into_shard_0(data_dir: str) -> list[str]:
    """Move a one-process store at the top of `data_dir` into shard-0 (the caller holds the data
    dir's lock); the entries moved, [] when there was nothing to move."""
    entries = os.listdir(data_dir)
    staging = os.path.join(data_dir, STAGING)
    if not any(m in entries for m in _STORE_MARKERS) and STAGING not in entries:
        return []
    if f"{SHARD_PREFIX}0" in entries:
        raise ShardDataError(f"data dir {data_dir!r} holds both a one-process store and shard-0; "
                             f"move one of them away")
    os.makedirs(staging, exist_ok=True)
    moved = [e for e in entries if e not in SUPERVISOR_ENTRIES and not e.startswith(SHARD_PREFIX)]
    for entry in moved:
        os.rename(os.path.join(data_dir, entry), os.path.join(staging, entry))
    _fsync_dir(staging)
    os.rename(staging, os.path.join(data_dir, f"{SHARD_PREFIX}0"))
    _fsync_dir(data_dir)
    return moved

