"""DescribeLogDirs (35): one log dir (the store's data directory) with every partition's real size
(the bytes of the CommitLog entries its queue still serves: `semantics.retention.partition_bytes`)
and the filesystem's total and usable bytes. AlterReplicaLogDirs (34): with one log dir there is
nowhere to move a replica; answered as Kafka answers: LOG_DIR_NOT_FOUND for another path, the one
dir accepted for an existing partition (it is there already), UNKNOWN_TOPIC_OR_PARTITION otherwise."""
from __future__ import annotations

import os

import gateway.kafka.authz as authz
import gateway.kafka.errors as errors
import gateway.kafka.topics as topics
from codec.kafka import apis
from gateway.kafka.registry import RequestContext, handler
from security.acl import Operation as Op
from semantics.retention import partition_bytes


def _log_dir(app) -> str:
    return os.path.abspath(app.config.data_dir)


def _move_error(app, path: str, topic: str, index: int) -> int:
    if path != _log_dir(app):
        return errors.LOG_DIR_NOT_FOUND
    return errors.NONE if topics.has_partition(topics.existing(app, topic), index) else errors.UNKNOWN_TOPIC_OR_PARTITION


@handler(apis.ALTER_REPLICA_LOG_DIRS)
async def alter_replica_log_dirs(ctx: RequestContext):
    denied = authz.cluster_error(ctx, Op.ALTER)
    by_topic: dict[str, list[dict]] = {}
    for d in ctx.request["dirs"]:
        for t in d["topics"]:
            by_topic.setdefault(t["name"], []).extend(
                {"partition_index": i, "error_code": denied or _move_error(ctx.app, d["path"], t["name"], i)}
                for i in t["partitions"])
    return {"throttle_time_ms": 0,
            "results": [{"topic_name": name, "partitions": parts} for name, parts in sorted(by_topic.items())]}


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
    log_dir = _log_dir(app)
    try:
        fs = os.statvfs(log_dir)
        total, usable = fs.f_blocks * fs.f_frsize, fs.f_bavail * fs.f_frsize
    except OSError:
        total = usable = -1
    return {"error_code": errors.NONE, "results": [{"error_code": errors.NONE, "log_dir": log_dir, "topics": out,
                                                   "total_bytes": total, "usable_bytes": usable}]}
