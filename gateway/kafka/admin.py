"""Admin APIs: CreateTopics, DeleteTopics, CreatePartitions, DescribeCluster (configs: `configs`)."""
from __future__ import annotations

import functools

import gateway.cluster.routes as routes
import gateway.kafka.configs as config_apis
import gateway.kafka.errors as errors
import gateway.kafka.topics as topics
import gateway.diskless as diskless
import gateway.diskless_topics as diskless_topics
from codec.kafka import apis, protocol
from gateway.kafka.metadata import OFFSETS_TOPIC, broker_list, is_internal
from gateway.kafka.registry import CLUSTER_ID, NODE_ID, RequestContext, handler
from gateway.kafka.state import kafka_state
from semantics import topic_configs as tc, views
from semantics.diskless import is_diskless

MAX_PARTITIONS = 10_000  # a sanity bound: Metadata lists every partition of a topic
CONFIGS_LISTED_FROM = 5  # the CreateTopics version whose answer lists the created topic's configs
VIEW_CONFIGS = (views.ATTR_SOURCE, views.ATTR_EXPRESSION)  # checked by semantics.views
FIXED_CONFIGS = VIEW_CONFIGS + (diskless.ATTRIBUTE,)  # and gateway.diskless


@handler(apis.CREATE_TOPICS)
async def create_topics(ctx: RequestContext):
    app, req = ctx.app, ctx.request
    out = []
    for t in req["topics"]:
        name = t["name"]
        configs = {c["name"]: c["value"] for c in t["configs"]}
        n = t["num_partitions"]
        if n == -1:
            n = len(t["assignments"]) or app.config.default_partitions
            base = app.store.topics.get(configs.get("filter.source.topic", "")) if configs.get(
                "filter.source.topic") else None
            if base is not None:
                n = topics.partition_count(base)
        rf = t["replication_factor"]
        brokers = len(app.ownership.live()) if app.ownership.clustered else 1
        entry = {"name": name, "num_partitions": n, "replication_factor": max(rf, 1)}
        problem = config_apis.create_topic_problem(app, configs, FIXED_CONFIGS) or \
            diskless.creation_problem(app, configs)
        if not topics.legal_name(name):
            entry.update(error_code=errors.INVALID_TOPIC_EXCEPTION, error_message=f"illegal topic name {name!r}")
        elif app.store.topics.get(name) is not None or name == OFFSETS_TOPIC:
            entry.update(error_code=errors.TOPIC_ALREADY_EXISTS, error_message=f"topic {name!r} already exists")
        elif not 0 < n <= MAX_PARTITIONS:
            entry.update(error_code=errors.INVALID_PARTITIONS,
                         error_message=f"number of partitions must be in 1..{MAX_PARTITIONS}")
        elif rf not in (-1, *range(1, brokers + 1)):
            entry.update(error_code=errors.INVALID_REPLICATION_FACTOR,
                         error_message=f"replication factor above the broker count ({brokers})")
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
                why = await diskless.publish(app, name, configs, n)  # in the bucket first: every gateway sees it
                if why:
                    entry.update(error_code=errors.KAFKA_STORAGE_ERROR, error_message=why)
                else:
                    app.ownership.expect_topic(name, rf)  # a cluster places its R replicas
                    cfg = topics.create(app, name, n, configs)
            if not req.get("validate_only") and not entry["error_code"]:
                entry["configs"] = _listed_configs(app, cfg, ctx.version)
                entry["topic_id"] = cfg.topic_id
        if entry["error_code"]:
            entry.update(num_partitions=-1, replication_factor=-1)
        out.append(entry)
    # a cluster's other gateways know them now; one etcd has not taken yet is not answered as created
    wait_ms = req.get("timeout_ms") or 0
    unpublished = await app.ownership.published([e["name"] for e in out if not e["error_code"]],
                                                min(wait_ms, 5000) / 1000 if wait_ms > 0 else 5.0)
    for entry in out:
        if entry["name"] in unpublished:
            entry.update(error_code=errors.REQUEST_TIMED_OUT, num_partitions=-1, replication_factor=-1,
                         error_message="not in the cluster's etcd yet (still tried: it may be created later)")
            entry.pop("configs", None)
    return {"topics": out}


def _listed_configs(app, cfg, version: int):
    """The configs a CreateTopics answer lists for a created topic (v5+). A topic that sets none lists
    the same ones as every other such topic: encoded once per version (issue 18: creates are cheap)."""
    if not cfg.attributes and version >= CONFIGS_LISTED_FROM:
        return _default_configs(version, app.config.max_message_bytes, app.config.commitlog_file_size)
    return [_config_entry(e) for e in config_apis.topic_entries(app, cfg)]


@functools.lru_cache(maxsize=16)
def _default_configs(version: int, max_message_bytes: int, segment_bytes: int):
    entries = tc.describe({}, max_message_bytes, segment_bytes)
    return protocol.encoded_response_array(apis.CREATE_TOPICS.key, version, ("topics", "configs"),
                                           [_config_entry(e) for e in entries])


def _config_entry(e) -> dict:
    return {"name": e.name, "value": e.value, "read_only": e.read_only, "config_source": e.source,
            "is_sensitive": False}


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
    wanted = ctx.request["topics"] if ctx.version >= 6 else [{"name": n} for n in ctx.request["topic_names"]]
    out = []
    for t in wanted:
        name, tid = t["name"], bytes(t.get("topic_id") or topics.ZERO_ID)
        if name is None and tid != topics.ZERO_ID:  # v6 names a topic by id
            name = topics.name_of_topic_id(app, tid)
            if name is None:
                out.append({"name": None, "topic_id": tid, "error_code": errors.UNKNOWN_TOPIC_ID})
                continue
        if name is not None and is_internal(name):  # RocketMQ refuses deleting its system topics (Kafka would not)
            out.append({"name": name, "error_code": errors.INVALID_TOPIC_EXCEPTION,
                        "error_message": f"{name} is an internal topic of the broker"})
            continue
        if name is None or app.store.topics.get(name) is None:
            out.append({"name": name, "error_code": errors.UNKNOWN_TOPIC_OR_PARTITION})
            continue
        if is_diskless(app.store.topics.get(name)) and app.diskless is not None:  # the bucket's record first
            why = await diskless_topics.delete(app, name)
            if why is not None:
                out.append({"name": name, "error_code": errors.KAFKA_STORAGE_ERROR, "error_message": why})
                continue
        tid = topics.topic_id(app, name)
        partitions = topics.partition_count(app.store.topics.get(name))
        app.store.topics.delete(name)
        kafka_state(app).producers.forget_topic(name)
        await app.durable(kafka_state(app).shares.forget_topic(name, partitions))
        app.views.refresh()  # a deleted view or base stops being maintained
        out.append({"name": name, "topic_id": tid, "error_code": errors.NONE})
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
        if is_diskless(cfg) and app.diskless is not None and not ctx.request.get("validate_only"):
            why = await diskless_topics.grow(app, name, t["count"])  # the bucket's record every gateway adopts
            if why is not None:
                out.append({"name": name, "error_code": errors.KAFKA_STORAGE_ERROR, "error_message": why})
                continue
        if not ctx.request.get("validate_only"):
            cfg.read_queues = cfg.write_queues = t["count"]
            app.store.topics.update(cfg)
            app.ownership.topic_grown(cfg)  # a cluster places the new partitions
        out.append({"name": name, "error_code": errors.NONE})
    await app.ownership.grown([e["name"] for e in out if not e["error_code"]])  # every gateway follows etcd
    return {"results": out}


@handler(apis.DESCRIBE_CLUSTER)
async def describe_cluster(ctx: RequestContext):
    controller = routes.controller_id(ctx.app) if ctx.app.ownership.clustered else NODE_ID
    return {"error_code": errors.NONE, "cluster_id": CLUSTER_ID, "controller_id": controller,
            "brokers": broker_list(ctx)}
