"""Admin APIs: CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs, DescribeCluster."""
from __future__ import annotations

import gateway.kafka.errors as errors
import gateway.kafka.topics as topics
from codec.kafka import apis
from gateway.kafka.metadata import broker_list
from gateway.kafka.registry import CLUSTER_ID, NODE_ID, RequestContext, handler
from gateway.kafka.state import kafka_state
from semantics import views

RESOURCE_TOPIC, RESOURCE_BROKER = 2, 4
SOURCE_DYNAMIC_TOPIC, SOURCE_STATIC_BROKER, SOURCE_DEFAULT = 1, 4, 5
TYPE_STRING, TYPE_INT, TYPE_LONG, TYPE_BOOLEAN, TYPE_LIST = 2, 3, 5, 1, 7
CONFIG_TYPES = {"cleanup.policy": TYPE_LIST, "retention.ms": TYPE_LONG, "retention.bytes": TYPE_LONG,
                "segment.bytes": TYPE_INT, "max.message.bytes": TYPE_INT, "min.insync.replicas": TYPE_INT}
MAX_PARTITIONS = 10_000  # a sanity bound: Metadata lists every partition of a topic
CLEANUP_POLICIES = {"delete", "compact", "compact,delete", "delete,compact"}


def _validate_configs(configs: dict) -> str | None:
    policy = configs.get("cleanup.policy")
    if policy is not None and policy.replace(" ", "") not in CLEANUP_POLICIES:
        return f"invalid cleanup.policy {policy!r}"
    for key in ("retention.ms", "retention.bytes", "max.message.bytes", "segment.bytes"):
        if key in configs:
            try:
                int(configs[key])
            except ValueError:
                return f"invalid {key} {configs[key]!r}"
    ts_type = configs.get("message.timestamp.type")
    if ts_type is not None and ts_type not in ("CreateTime", "LogAppendTime"):
        return f"invalid message.timestamp.type {ts_type!r}"
    return None


@handler(apis.CREATE_TOPICS)
async def create_topics(ctx: RequestContext):
    app, req = ctx.app, ctx.request
    out = []
    for t in req["topics"]:
        name = t["name"]
        configs = {c["name"]: c["value"] for c in t["configs"] if c["value"] is not None}
        n = t["num_partitions"]
        if n == -1:
            n = len(t["assignments"]) or app.config.default_partitions
            base = app.store.topics.get(configs.get("filter.source.topic", "")) if configs.get(
                "filter.source.topic") else None
            if base is not None:
                n = topics.partition_count(base)
        rf = t["replication_factor"]
        entry = {"name": name, "num_partitions": n, "replication_factor": 1}
        problem = _validate_configs(configs)
        if not topics.legal_name(name):
            entry.update(error_code=errors.INVALID_TOPIC_EXCEPTION, error_message=f"illegal topic name {name!r}")
        elif app.store.topics.get(name) is not None:
            entry.update(error_code=errors.TOPIC_ALREADY_EXISTS, error_message=f"topic {name!r} already exists")
        elif not 0 < n <= MAX_PARTITIONS:
            entry.update(error_code=errors.INVALID_PARTITIONS,
                         error_message=f"number of partitions must be in 1..{MAX_PARTITIONS}")
        elif rf not in (-1, 1):
            entry.update(error_code=errors.INVALID_REPLICATION_FACTOR,
                         error_message="replication factor above the broker count (1)")
        elif problem:
            entry.update(error_code=errors.INVALID_CONFIG, error_message=problem)
        else:
            entry["error_code"] = errors.NONE
            source = configs.get(views.ATTR_SOURCE)
            if source is not None:
                try:
                    cfg = _create_view(app, name, source, configs, req.get("validate_only"))
                except views.ViewError as exc:
                    cfg = None
                    entry.update(error_code=errors.INVALID_CONFIG, error_message=str(exc))
                if cfg is not None:
                    entry["num_partitions"] = topics.partition_count(cfg)
            elif not req.get("validate_only"):
                cfg = topics.create(app, name, n, configs)
            if not req.get("validate_only") and not entry["error_code"]:
                entry["configs"] = _config_entries(app, cfg, None, ctx.version)
        if entry["error_code"]:
            entry.update(num_partitions=-1, replication_factor=-1)
        out.append(entry)
    return {"topics": out}


def _create_view(app, name: str, source: str, configs: dict, validate_only: bool):
    """A filtered view topic (ARCHITECTURE.md): the base's partitions, backfilled at once; with
    validate_only only the definition is checked. Raises ViewError."""
    base = app.store.topics.get(source)
    if base is None or views.definition(base) is not None:
        raise views.ViewError(f"source topic {source!r} does not exist" if base is None
                              else f"source topic {source!r} is itself a view")
    if validate_only:
        return base
    expression = configs.get(views.ATTR_EXPRESSION) or "*"
    others = {k: v for k, v in configs.items() if k not in (views.ATTR_SOURCE, views.ATTR_EXPRESSION)}
    return app.views.create_view(name, source, expression, others)


@handler(apis.DELETE_TOPICS)
async def delete_topics(ctx: RequestContext):
    app = ctx.app
    names = [t["name"] for t in ctx.request["topics"]] if ctx.version >= 6 else ctx.request["topic_names"]
    out = []
    for name in names:
        if name is None or app.store.topics.get(name) is None:
            out.append({"name": name, "error_code": errors.UNKNOWN_TOPIC_OR_PARTITION})
            continue
        app.store.topics.delete(name)
        kafka_state(app).producers.forget_topic(name)
        app.views.refresh()  # a deleted view or base stops being maintained
        out.append({"name": name, "error_code": errors.NONE})
    return {"responses": out}


@handler(apis.CREATE_PARTITIONS)
async def create_partitions(ctx: RequestContext):
    app = ctx.app
    out = []
    for t in ctx.request["topics"]:
        name = t["name"]
        cfg = app.store.topics.get(name)
        if cfg is None:
            out.append({"name": name, "error_code": errors.UNKNOWN_TOPIC_OR_PARTITION,
                        "error_message": f"topic {name!r} does not exist"})
            continue
        current = topics.partition_count(cfg)
        if not current < t["count"] <= MAX_PARTITIONS:
            out.append({"name": name, "error_code": errors.INVALID_PARTITIONS,
                        "error_message": f"topic has {current} partitions; the count can only grow, "
                                         f"up to {MAX_PARTITIONS}"})
            continue
        if not ctx.request.get("validate_only"):
            cfg.read_queues = cfg.write_queues = t["count"]
            app.store.topics.update(cfg)
        out.append({"name": name, "error_code": errors.NONE})
    return {"results": out}


def _config_entries(app, cfg, keys, version: int) -> list[dict]:
    out = []
    for name, (value, is_default) in sorted(topics.configs(app, cfg).items()):
        if keys is not None and name not in keys:
            continue
        source = SOURCE_DEFAULT if is_default else SOURCE_DYNAMIC_TOPIC
        out.append({"name": name, "value": value, "read_only": False, "is_default": is_default,
                    "config_source": source, "is_sensitive": False,
                    "synonyms": [{"name": name, "value": value, "source": source}],
                    "config_type": CONFIG_TYPES.get(name, TYPE_STRING), "documentation": None})
    return out


def _broker_configs(app) -> dict[str, str]:
    c = app.config
    return {"broker.id": str(NODE_ID), "message.max.bytes": str(c.max_message_bytes),
            "auto.create.topics.enable": str(c.auto_create_topics).lower(),
            "num.partitions": str(c.default_partitions), "socket.request.max.bytes": str(c.max_frame_bytes),
            "log.retention.hours": "72", "default.replication.factor": "1",
            "offsets.topic.replication.factor": "1"}


@handler(apis.DESCRIBE_CONFIGS)
async def describe_configs(ctx: RequestContext):
    app = ctx.app
    out = []
    for r in ctx.request["resources"]:
        keys = set(r["configuration_keys"]) if r["configuration_keys"] is not None else None
        entry = {"resource_type": r["resource_type"], "resource_name": r["resource_name"], "configs": []}
        if r["resource_type"] == RESOURCE_TOPIC:
            cfg = app.store.topics.get(r["resource_name"])
            if cfg is None:
                entry.update(error_code=errors.UNKNOWN_TOPIC_OR_PARTITION, error_message="unknown topic")
            else:
                entry.update(error_code=errors.NONE, configs=_config_entries(app, cfg, keys, ctx.version))
        elif r["resource_type"] == RESOURCE_BROKER:
            entry["error_code"] = errors.NONE
            entry["configs"] = [
                {"name": k, "value": v, "read_only": True, "is_default": False,
                 "config_source": SOURCE_STATIC_BROKER, "is_sensitive": False,
                 "synonyms": [{"name": k, "value": v, "source": SOURCE_STATIC_BROKER}],
                 "config_type": TYPE_STRING}
                for k, v in sorted(_broker_configs(app).items()) if keys is None or k in keys]
        else:
            entry.update(error_code=errors.INVALID_REQUEST, error_message="unsupported resource type")
        out.append(entry)
    return {"results": out}


@handler(apis.DESCRIBE_CLUSTER)
async def describe_cluster(ctx: RequestContext):
    return {"error_code": errors.NONE, "cluster_id": CLUSTER_ID, "controller_id": NODE_ID,
            "brokers": broker_list(ctx)}
