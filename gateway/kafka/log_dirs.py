"""DescribeLogDirs (35): one log dir (the store's data directory) with every partition's real size
(the bytes of the CommitLog entries its queue still serves: `semantics.retention.partition_bytes`)
and the filesystem's total and usable bytes."""
from __future__ import annotations

import os

import gateway.kafka.errors as errors
import gateway.kafka.topics as topics
from codec.kafka import apis
from gateway.kafka.registry import RequestContext, handler
from semantics.retention import partition_bytes


def _partition(store, topic: str, index: int) -> dict:
    return {"partition_index": index, "partition_size": partition_bytes(store, topic, index), "offset_lag": 0,
            "is_future_key": False}


@handler(apis.DESCRIBE_LOG_DIRS)
async def describe_log_dirs(ctx: RequestContext):
    app = ctx.app
    store = app.store
    wanted = ctx.request["topics"]
    if wanted is None:
        wanted = [{"topic": name, "partitions": list(range(topics.partition_count(store.topics.get(name))))}
                  for name in sorted(store.topics.names()) if store.topics.get(name) is not None]
    out = []
    for t in wanted:
        cfg = topics.existing(app, t["topic"])
        parts = [_partition(store, t["topic"], i) for i in t["partitions"] if topics.has_partition(cfg, i)]
        if parts:
            out.append({"name": t["topic"], "partitions": parts})
    log_dir = os.path.abspath(app.config.data_dir)
    try:
        fs = os.statvfs(log_dir)
        total, usable = fs.f_blocks * fs.f_frsize, fs.f_bavail * fs.f_frsize
    except OSError:
        total = usable = -1
    return {"error_code": errors.NONE, "results": [{"error_code": errors.NONE, "log_dir": log_dir, "topics": out,
                                                   "total_bytes": total, "usable_bytes": usable}]}
