"""Config APIs: DescribeConfigs, AlterConfigs, IncrementalAlterConfigs (topics, the broker, groups),
ListConfigResources (KIP-1142: which resources have configs).

Topic configs live in the topic's `TopicConfig.attributes` (validated by `semantics.topic_configs`);
attributes that are not Kafka topic configs (a view's `filter.*`, RocketMQ's own) are reported
read-only and cannot be altered. The broker's and consumer groups' configs are the gateway's
start-up settings: described, never changed at run time (docs/mapping.md); share-group configs
and streams-group configs (`share.*`, `streams.*`: `gateway.kafka.share_configs`) are per group and
can be altered.
"""
from __future__ import annotations

import gateway.kafka.errors as errors
from codec.kafka import apis
from gateway.kafka.groups import TRANSACTION_MAX_TIMEOUT_MS
from gateway.kafka.metadata import OFFSETS_PARTITIONS, OFFSETS_TOPIC, broker_list, visible_names
from gateway.kafka.registry import NODE_ID, RequestContext, handler
from gateway.kafka.share_configs import alter_share_configs, is_group_config, share_config_entries
from gateway.kafka.share_configs import publish as publish_group_configs
from gateway.kafka.state import kafka_state
from semantics import schema_validation, table_configs, tier_configs, topic_configs as tc

RESOURCE_TOPIC, RESOURCE_BROKER, RESOURCE_GROUP = 2, 4, 32
RESOURCE_BROKER_LOGGER, RESOURCE_CLIENT_METRICS = 8, 16
# ListConfigResources v1's types, in the order Kafka 4.3 lists them when none is named.
LISTED_TYPES = (RESOURCE_BROKER_LOGGER, RESOURCE_BROKER, RESOURCE_TOPIC, RESOURCE_GROUP, RESOURCE_CLIENT_METRICS)
SHORT = 4  # ConfigType SHORT (the other types are named in semantics.topic_configs)
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3  # IncrementalAlterConfigs operations
# Consumer-group configs (Kafka's GroupConfig) with the values this gateway's coordinator uses.
GROUP_CONFIGS = {"consumer.heartbeat.interval.ms": ("5000", "group.consumer.heartbeat.interval.ms"),
                 "consumer.session.timeout.ms": ("45000", "group.consumer.session.timeout.ms")}
# The configs Kafka gives its offsets topic (listed by Metadata; the gateway's offsets are one table).
OFFSETS_TOPIC_CONFIGS = {"cleanup.policy": "compact", "compression.type": "producer", "segment.bytes": "104857600"}


def topic_entries(app, cfg) -> list[tc.Entry]:
    attrs = cfg.attributes or {}
    extras = tuple(sorted(k for k in attrs if k not in tc.TOPIC_CONFIGS))
    return tc.describe(attrs, app.config.max_message_bytes, app.config.commitlog_file_size, extras)


def create_topic_problem(app, configs: dict, fixed: tuple) -> str | None:
    """The INVALID_CONFIG message for CreateTopics configs (names in `fixed` are checked elsewhere)."""
    for name, value in configs.items():
        if value is None or name not in fixed:
            why = tc.problem(name, value, app.config.store_max_message_bytes, tiered(app))
            if why:
                return why
    return tier_configs.problem({}, configs) or schema_validation.registry_problem(app.schema_registry, configs)


def tiered(app) -> bool:
    """The store has a remote tier (--tier-url): topics may set remote.storage.enable=true."""
    return getattr(app.store, "remote", None) is not None


def _broker_entries(app) -> list[tc.Entry]:
    """The broker's settings, all fixed at start (read-only): those the gateway's flags decide
    (STATIC_BROKER_CONFIG), then Kafka's defaults the gateway follows (DEFAULT_CONFIG)."""
    c = app.config
    values = [("auto.create.topics.enable", str(c.auto_create_topics).lower(), tc.BOOLEAN),
              ("broker.id", str(_node_id(app)), tc.INT),
              ("default.replication.factor", "1", tc.INT),
              ("log.dirs", c.data_dir, tc.LIST),
              ("log.retention.hours", "72", tc.INT),
              ("log.segment.bytes", str(c.commitlog_file_size), tc.INT),
              ("message.max.bytes", str(c.max_message_bytes), tc.INT),
              ("node.id", str(_node_id(app)), tc.INT),
              ("num.partitions", str(c.default_partitions), tc.INT),
              ("offsets.topic.replication.factor", "1", SHORT),
              ("process.roles", "broker,controller", tc.LIST),
              ("socket.request.max.bytes", str(c.max_frame_bytes), tc.INT),
              ("transaction.max.timeout.ms", str(TRANSACTION_MAX_TIMEOUT_MS), tc.INT),
              *_listener_values(c)]
    defaults = [("compression.type", "producer", tc.STRING),
                ("delete.topic.enable", "true", tc.BOOLEAN),
                ("log.cleanup.policy", "delete", tc.LIST),
                ("log.message.timestamp.after.max.ms", tc.TOPIC_CONFIGS["message.timestamp.after.max.ms"].default,
                 tc.LONG),
                ("log.message.timestamp.before.max.ms",
                 tc.TOPIC_CONFIGS["message.timestamp.before.max.ms"].default, tc.LONG),
                ("log.message.timestamp.type", "CreateTime", tc.STRING),
                ("log.retention.bytes", "-1", tc.LONG),
                ("min.insync.replicas", "1", tc.INT),
                ("offsets.topic.num.partitions", str(OFFSETS_PARTITIONS), tc.INT),
                ("unclean.leader.election.enable", "false", tc.BOOLEAN)]
    return sorted([tc.Entry(name, value, source, ctype, True, ((name, value, source),))
                   for entries, source in ((values, tc.SOURCE_STATIC_BROKER), (defaults, tc.SOURCE_DEFAULT))
                   for name, value, ctype in entries], key=lambda e: e.name)


def _listener_values(c) -> list[tuple[str, str, int]]:
    """listeners, advertised.listeners and listener.security.protocol.map as Kafka writes them: the main
    Kafka port (named after its security protocol) and every extra Kafka --listener."""
    main = c.kafka_security_protocol
    extra = [lst for lst in c.listeners if lst.kind == "kafka"]
    bound = [f"{main}://{c.host}:{c.kafka_port}"] + [f"{lst.name}://{lst.host}:{lst.port}" for lst in extra]
    advertised = [f"{main}://{c.advertised}:{c.kafka_port}"] + [
        f"{lst.name}://{lst.advertised_host or c.advertised}:{lst.advertised_port or lst.port}" for lst in extra]
    protocols = [f"{main}:{main}"] + [f"{lst.name}:{lst.protocol}" for lst in extra]
    return [("advertised.listeners", ",".join(advertised), tc.LIST), ("listeners", ",".join(bound), tc.LIST),
            ("listener.security.protocol.map", ",".join(dict.fromkeys(protocols)), tc.STRING)]


def _group_entries(app, group: str) -> list[tc.Entry]:
    return sorted([tc.Entry(name, value, tc.SOURCE_DEFAULT, tc.INT, True, ((synonym, value, tc.SOURCE_DEFAULT),))
                   for name, (value, synonym) in GROUP_CONFIGS.items()] + share_config_entries(app, group),
                  key=lambda e: e.name)


def _node_id(app) -> int:
    """This broker's id: 0 alone, its node id as a cluster member (each shard is a broker)."""
    return app.ownership.node_id if app.ownership.clustered else NODE_ID


def _broker_name_problem(app, name: str) -> str | None:
    if name in ("", str(_node_id(app))):
        return None
    return f"Unexpected broker id, expected {_node_id(app)} or empty string, but received {name}"


def _describe_entry(e: tc.Entry, synonyms: bool) -> dict:
    return {"name": e.name, "value": e.value, "read_only": e.read_only, "is_default": e.source == tc.SOURCE_DEFAULT,
            "config_source": e.source, "is_sensitive": False,
            "synonyms": [{"name": n, "value": v, "source": s} for n, v, s in e.synonyms] if synonyms else [],
            "config_type": e.type, "documentation": None}


def _describe_resource(app, rtype: int, name: str) -> tuple[int, str | None, list[tc.Entry]]:
    if rtype == RESOURCE_TOPIC:
        cfg = app.store.topics.get(name)
        if name == OFFSETS_TOPIC:
            return errors.NONE, None, tc.describe(OFFSETS_TOPIC_CONFIGS, app.config.max_message_bytes,
                                                  app.config.commitlog_file_size)
        if cfg is None:
            return errors.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.", []
        return errors.NONE, None, topic_entries(app, cfg)
    if rtype == RESOURCE_BROKER:
        why = _broker_name_problem(app, name)
        if why:
            return errors.INVALID_REQUEST, why, []
        # The cluster-wide default resource ("") lists dynamic defaults only, and there are none.
        return errors.NONE, None, _broker_entries(app) if name else []
    if rtype == RESOURCE_GROUP:
        return errors.NONE, None, _group_entries(app, name)
    return errors.INVALID_REQUEST, f"Unsupported resource type {rtype}", []


@handler(apis.DESCRIBE_CONFIGS)
async def describe_configs(ctx: RequestContext):
    out = []
    for r in ctx.request["resources"]:
        keys = r["configuration_keys"]
        code, message, entries = _describe_resource(ctx.app, r["resource_type"], r["resource_name"])
        out.append({"error_code": code, "error_message": message, "resource_type": r["resource_type"],
                    "resource_name": r["resource_name"],
                    "configs": [_describe_entry(e, ctx.request.get("include_synonyms", False)) for e in entries
                                if not keys or e.name in keys]})  # Kafka: empty = all
    return {"results": out}


def _alter_topic(app, name: str, ops: list[tuple[str, int, str | None]], replace: bool,
                 validate_only: bool) -> tuple[int, str | None]:
    """Apply (name, operation, value) changes to a topic's configs; `replace` (AlterConfigs) first
    drops every Kafka config the request does not name."""
    if not name:
        return errors.INVALID_REQUEST, "Default topic resources are not allowed."
    cfg = app.store.topics.get(name)
    if cfg is None:
        return errors.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist."
    names = [n for n, _, _ in ops]
    if len(set(names)) != len(names):
        return errors.INVALID_REQUEST, "Error due to duplicate config keys"
    if "diskless.enable" in names:  # as KIP-1150: a topic is diskless or not from its creation on
        return errors.INVALID_CONFIG, "diskless.enable can only be set when the topic is created"
    for n, op, value in ops:
        if op not in (SET, DELETE, APPEND, SUBTRACT):
            return errors.INVALID_REQUEST, f"Unknown config operation {op} for {n}"
        if op == SET and value is None:
            return errors.INVALID_REQUEST, f"Null value not supported for : {n}"
        if n not in tc.TOPIC_CONFIGS:
            fixed = n in (cfg.attributes or {})
            return errors.INVALID_CONFIG, (f"{n} is fixed when the topic is created" if fixed
                                           else f"Unknown topic config name: {n}")
    current = dict(cfg.attributes or {})
    if replace:
        current = {k: v for k, v in current.items() if k not in tc.TOPIC_CONFIGS}
    changed, why = tc.incremental(current, ops)
    if why:
        return errors.INVALID_CONFIG, why
    for n in set(names):
        if n in changed:
            why = tc.problem(n, changed[n], app.config.store_max_message_bytes, tiered(app))
            if why:
                return errors.INVALID_CONFIG, why
            changed[n] = changed[n].strip()
    why = tier_configs.problem(cfg.attributes or {}, changed) or \
        table_configs.switch_problem(cfg.attributes, changed) or \
        schema_validation.registry_problem(app.schema_registry, changed)
    if why:
        return errors.INVALID_CONFIG, why
    if not validate_only:
        cfg.attributes = changed
        app.store.topics.update(cfg)
    return errors.NONE, None


def _alter(app, rtype: int, name: str, ops: list, replace: bool, validate_only: bool) -> tuple[int, str | None]:
    if rtype == RESOURCE_TOPIC:
        return _alter_topic(app, name, ops, replace, validate_only)
    if rtype == RESOURCE_BROKER:
        why = _broker_name_problem(app, name)
        if why:
            return errors.INVALID_REQUEST, why
        names = sorted({n for n, op, _ in ops if op != DELETE})  # nothing is set dynamically: deleting is a no-op
        if names:
            return errors.INVALID_REQUEST, f"Cannot update these configs dynamically: [{', '.join(names)}] " \
                                           "(the gateway's settings are fixed at start)"
        return errors.NONE, None
    if rtype == RESOURCE_GROUP:
        if ops and all(is_group_config(n) for n, _, _ in ops):  # KIP-932 share, KIP-1071 streams configs
            return alter_share_configs(app, name, ops, validate_only)
        return errors.INVALID_REQUEST, "Group configs cannot be changed on this gateway"
    return errors.INVALID_REQUEST, f"Unknown resource type {rtype}"


async def _publish_groups(app, results: list, validate_only: bool) -> None:
    if not validate_only:
        await publish_group_configs(app, [name for rtype, name, code, _ in results
                                          if rtype == RESOURCE_GROUP and code == errors.NONE])


def _alter_response(results: list) -> dict:
    return {"responses": [{"error_code": code, "error_message": message, "resource_type": rtype,
                           "resource_name": name} for rtype, name, code, message in results]}


@handler(apis.ALTER_CONFIGS)
async def alter_configs(ctx: RequestContext):
    validate_only = ctx.request["validate_only"]
    results = []
    for r in ctx.request["resources"]:
        ops = [(c["name"], SET, c["value"]) for c in r["configs"]]
        code, message = _alter(ctx.app, r["resource_type"], r["resource_name"], ops, True, validate_only)
        results.append((r["resource_type"], r["resource_name"], code, message))
    await _publish_groups(ctx.app, results, validate_only)
    return _alter_response(results)


@handler(apis.INCREMENTAL_ALTER_CONFIGS)
async def incremental_alter_configs(ctx: RequestContext):
    validate_only = ctx.request["validate_only"]
    results = []
    for r in ctx.request["resources"]:
        ops = [(c["name"], c["config_operation"], c["value"]) for c in r["configs"]]
        code, message = _alter(ctx.app, r["resource_type"], r["resource_name"], ops, False, validate_only)
        results.append((r["resource_type"], r["resource_name"], code, message))
    await _publish_groups(ctx.app, results, validate_only)
    return _alter_response(results)


@handler(apis.LIST_CONFIG_RESOURCES)
async def list_config_resources(ctx: RequestContext):
    """As Kafka 4.3: v0 lists client-metrics resources only (there are none: the gateway has no client
    metrics subscriptions); v1 the named types, every type when none is named, UNSUPPORTED_VERSION for
    a type without configs. Brokers (and their loggers) by node id, every topic Metadata lists, the
    groups with a config of their own."""
    wanted = (ctx.request["resource_types"] or list(LISTED_TYPES)) if ctx.version >= 1 else [RESOURCE_CLIENT_METRICS]
    if any(t not in LISTED_TYPES for t in wanted):
        return {"error_code": errors.UNSUPPORTED_VERSION, "config_resources": []}
    listed = []
    for rtype in LISTED_TYPES:
        if rtype not in wanted:
            continue
        if rtype in (RESOURCE_BROKER_LOGGER, RESOURCE_BROKER):
            names = [str(b["node_id"]) for b in broker_list(ctx)]
        elif rtype == RESOURCE_TOPIC:
            names = visible_names(ctx.app)
        elif rtype == RESOURCE_GROUP:
            names = sorted(g for g, own in kafka_state(ctx.app).group_configs.values.items() if own)
        else:
            names = []
        listed += [{"resource_name": name, "resource_type": rtype} for name in names]
    return {"error_code": errors.NONE, "config_resources": listed}
