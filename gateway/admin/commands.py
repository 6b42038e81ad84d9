"""The admin subcommands. Each takes the parsed arguments and returns what to print (rows or a
dict) and the table columns; refusals raise AdminError (gateway.admin.endpoints)."""
from __future__ import annotations

import datetime
from urllib.parse import quote

from codec.remoting import RequestCode, ResponseCode
from codec.remoting.message import parse_msg_id
from gateway.admin.endpoints import AdminError, Http, kafka_admin, metadata, remoting_call, wait
from gateway.admin.output import Progress

# Topics the gateway keeps for itself; `topics list` shows them with --all.
SYSTEM_TOPICS = ("SCHEDULE_TOPIC_XXXX", "RMQ_SYS_", "TBW102")


# ---- topics (Kafka AdminClient) ----------------------------------------------------------------
def topics_list(args):
    meta = metadata(kafka_admin(args))
    rows = [{"topic": name, "partitions": len(t.partitions)} for name, t in sorted(meta.topics.items())
            if args.all or not name.startswith(SYSTEM_TOPICS)]
    return rows, ["topic", "partitions"]


def topics_create(args):
    from confluent_kafka.admin import NewTopic
    configs = dict(_key_value(c) for c in args.config)
    topic = NewTopic(args.topic, num_partitions=args.partitions, replication_factor=1, config=configs)
    admin = kafka_admin(args)  # kept alive until the future is done
    wait(admin.create_topics([topic])[args.topic], f"cannot create topic {args.topic!r}", admin)
    return {"created": args.topic, "partitions": args.partitions, "config": configs}, None


def topics_delete(args):
    admin = kafka_admin(args)  # kept alive until the future is done
    wait(admin.delete_topics([args.topic])[args.topic], f"cannot delete topic {args.topic!r}", admin)
    return {"deleted": args.topic}, None


def topics_describe(args):
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec
    admin = kafka_admin(args)
    partitions = _partitions(admin, args.topic)
    ends = {}
    for name, spec in (("first", OffsetSpec.earliest()), ("end", OffsetSpec.latest())):
        futures = admin.list_offsets({TopicPartition(args.topic, p): spec for p in partitions})
        ends[name] = {tp.partition: wait(f, f"cannot list offsets of {args.topic!r}").offset for tp, f in futures.items()}
    rows = [{"topic": args.topic, "partition": p, "first": ends["first"][p], "end": ends["end"][p],
             "messages": ends["end"][p] - ends["first"][p]} for p in partitions]
    return rows, ["topic", "partition", "first", "end", "messages"]


def _partitions(admin, topic: str) -> list[int]:
    meta = metadata(admin)
    t = meta.topics.get(topic)
    if t is None or t.error is not None or not t.partitions:
        raise AdminError(f"topic {topic!r} does not exist")
    return sorted(t.partitions)


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise AdminError(f"--config {text!r}: expected KEY=VALUE", 2)
    return key, value


# ---- groups (HTTP API: both protocols from the one offset table) -------------------------------
def groups_list(args):
    return Http(args.http).get("/api/groups"), ["group", "lag", "kafka_members", "rocketmq_clients", "topics"]


def groups_describe(args):
    rows = Http(args.http).get(f"/api/groups/{quote(args.group, safe='')}")
    return rows, ["group", "topic", "queue", "committed", "end", "lag"]


# ---- offsets (Kafka AdminClient) ---------------------------------------------------------------
def offsets_reset(args):
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import OffsetSpec
    admin = kafka_admin(args)
    spec = _offset_spec(args.to, OffsetSpec)
    futures = admin.list_offsets({TopicPartition(args.topic, p): spec for p in _partitions(admin, args.topic)})
    targets = sorted((tp.partition, wait(f, f"cannot list offsets of {args.topic!r}").offset)
                     for tp, f in futures.items())
    request = ConsumerGroupTopicPartitions(args.group, [TopicPartition(args.topic, p, o) for p, o in targets])
    result = wait(admin.alter_consumer_group_offsets([request])[args.group],
                  f"cannot reset offsets of group {args.group!r}")
    for tp in result.topic_partitions:
        if tp.error is not None:
            raise AdminError(f"cannot reset offsets of group {args.group!r}: {tp.error.str()}")
    rows = [{"group": args.group, "topic": args.topic, "partition": p, "offset": o} for p, o in targets]
    return rows, ["group", "topic", "partition", "offset"]


def _offset_spec(to: str, OffsetSpec):
    if to == "earliest":
        return OffsetSpec.earliest()
    if to == "latest":
        return OffsetSpec.latest()
    if to.isdigit():
        return OffsetSpec.for_timestamp(int(to))
    try:
        when = datetime.datetime.fromisoformat(to)
    except ValueError:
        raise AdminError(f"--to {to!r}: use earliest, latest, epoch ms or an ISO time "
                         "(2026-01-31T12:00:00+00:00)", 2) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return OffsetSpec.for_timestamp(int(when.timestamp() * 1000))


# ---- messages (HTTP API) -----------------------------------------------------------------------
MESSAGE_COLUMNS = ["topic", "queue", "offset", "msg_id", "keys", "tags", "body_size", "body"]


def query_key(args):
    rows = Http(args.http).get("/api/messages", topic=args.topic, key=args.key)
    if not rows:
        raise AdminError(f"no message with key {args.key!r} in topic {args.topic!r}")
    return rows, MESSAGE_COLUMNS


def query_msgid(args):
    return Http(args.http).get(f"/api/messages/{quote(args.msg_id, safe='')}"), None


# ---- schemas (HTTP API: the registry's subjects, the topics that validate) -----------------------
def schemas_subjects(args):
    found = Http(args.http).get("/api/schemas")
    if not found["registry"]:
        raise AdminError("this gateway runs no schema registry (its --schema-registry-port is off)")
    return found["subjects"], ["subject", "versions", "latest_version", "latest_id", "type", "compatibility"]


def schemas_topics(args):
    return Http(args.http).get("/api/schemas")["topics"], [
        "topic", "key_validation", "key_strategy", "key_refused", "value_validation", "value_strategy", "value_refused"]


# ---- dead letters ------------------------------------------------------------------------------
DLQ_COLUMNS = ["offset", "msg_id", "topic", "keys", "tags", "reconsume_times"]


def dlq_list(args):
    page = Http(args.http).get(f"/api/dlq/{quote(args.group, safe='')}", start=args.start, limit=args.limit)
    return page["messages"], DLQ_COLUMNS


def dlq_resend(args):
    if args.msg_id:
        return [_resend(args, args.msg_id)], ["msg_id", "topic", "queue", "offset", "new_msg_id"]
    letters = _all_dead_letters(Http(args.http), args.group)
    if not letters:
        raise AdminError(f"group {args.group!r} has no dead letters")
    rows = []
    with Progress(len(letters), f"resending {args.group}") as bar:
        for letter in letters:
            rows.append(_resend(args, letter["msg_id"]))
            bar.advance()
    return rows, ["msg_id", "topic", "queue", "offset", "new_msg_id"]


def _all_dead_letters(http: Http, group: str) -> list[dict]:
    out, start = [], 0
    while True:
        page = http.get(f"/api/dlq/{quote(group, safe='')}", start=start, limit=1000)
        out += page["messages"]
        if not page["messages"] or page["next"] >= page["end"]:
            return out
        start = page["next"]


def _resend(args, msg_id: str) -> dict:
    try:
        _host, _port, offset = parse_msg_id(msg_id)
    except ValueError:
        raise AdminError(f"{msg_id!r} is not a msgId", 2) from None
    resp = remoting_call(args, RequestCode.RESEND_DLQ_MESSAGE, {"commitLogOffset": offset})
    if resp.code != ResponseCode.SUCCESS:
        raise AdminError(f"cannot resend {msg_id}: {resp.remark or f'error {resp.code}'}")
    return {"msg_id": msg_id, "topic": resp.get_str("topic"), "queue": resp.get_int("queueId", -1),
            "offset": resp.get_int("queueOffset", -1), "new_msg_id": resp.get_str("msgId")}
