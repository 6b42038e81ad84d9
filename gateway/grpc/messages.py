"""apache.rocketmq.v2.Message <-> the store's messages (docs/mapping.md, "gRPC").

Sent: tag -> TAGS, keys -> KEYS (space separated), message_id -> UNIQ_KEY, message_group ->
__SHARDINGKEY, delivery_timestamp -> __STARTDELIVERTIME, TRANSACTION type -> TRAN_MSG=true,
orphaned_transaction_recovery_duration -> CHECK_IMMUNITY_TIME_IN_SECONDS; user properties as they
are. A GZIP body is stored inflated, so every protocol reads the plain bytes. Received: the same
in reverse, plus the store's facts (offsets, timestamps, hosts) and the CRC32 body digest the SDKs
verify.
"""
from __future__ import annotations

import gzip
import zlib

import store
from gateway.grpc.common import Code, RpcError, d
from semantics import lite, priority, routing

TAGS, KEYS, UNIQ_KEY, MESSAGE_GROUP = "TAGS", "KEYS", "UNIQ_KEY", "__SHARDINGKEY"
IMMUNITY = "CHECK_IMMUNITY_TIME_IN_SECONDS"
LITE_TOPIC = lite.PROPERTY_LITE_TOPIC  # RocketMQ 5.5's MessageConst.PROPERTY_LITE_TOPIC
# Properties the store or RocketMQ keeps for itself: never shown as user properties.
SYSTEM_PROPERTIES = {TAGS, KEYS, UNIQ_KEY, MESSAGE_GROUP, IMMUNITY, "CLUSTER", "MIN_OFFSET", "MAX_OFFSET",
                     routing.PROPERTY_START_DELIVER_TIME, routing.PROPERTY_DELAY, routing.PROPERTY_TRANSACTION,
                     routing.PROPERTY_PRODUCER_GROUP, routing.PROPERTY_REAL_TOPIC, routing.PROPERTY_REAL_QID,
                     routing.PROPERTY_SCHEDULE_OFFSET, routing.PROPERTY_SCHEDULE_SOURCE,
                     "TRAN_PREPARED_QUEUE_OFFSET", "TRANSACTION_CHECK_TIMES",
                     "POP_CK", "WAIT", "INNER_NUM", "TAGS_CODES", "INNER_KEYS", "MSG_REGION", "TRACE_ON",
                     "__RECALL_HANDLE", priority.PROPERTY_PRIORITY, LITE_TOPIC}


def _ms(ts) -> int:
    return ts.seconds * 1000 + ts.nanos // 1_000_000


def to_store(msg, qid: int, born_host: tuple) -> store.Message:
    """The store message of one sent Message (RpcError for a bad one)."""
    sp = msg.system_properties
    body = msg.body
    if sp.body_encoding == d.Encoding.GZIP:
        try:
            body = gzip.decompress(body)
        except (OSError, EOFError, zlib.error) as exc:
            raise RpcError(Code.MESSAGE_CORRUPTED, f"cannot inflate the GZIP body: {exc}") from None
    props = dict(msg.user_properties)
    for key in props:
        if key in SYSTEM_PROPERTIES:
            raise RpcError(Code.ILLEGAL_MESSAGE_PROPERTY_KEY, f"property key {key!r} is reserved")
    if sp.tag:
        props[TAGS] = sp.tag
    if sp.keys:
        props[KEYS] = " ".join(sp.keys)
    if sp.message_id:
        props[UNIQ_KEY] = sp.message_id
    kind = sp.message_type
    if sp.message_group:
        props[MESSAGE_GROUP] = sp.message_group
    if sp.HasField("delivery_timestamp"):  # checked by the delay rule (routing.delay_refusal) with the others
        props[routing.PROPERTY_START_DELIVER_TIME] = str(_ms(sp.delivery_timestamp))
    if kind == d.MessageType.TRANSACTION:
        props[routing.PROPERTY_TRANSACTION] = "true"
        if sp.HasField("orphaned_transaction_recovery_duration"):
            props[IMMUNITY] = str(max(0, sp.orphaned_transaction_recovery_duration.seconds))
    if sp.HasField("lite_topic"):  # placed in its queue by semantics.lite
        refused = lite.name_error(sp.lite_topic)
        if refused:
            raise RpcError(Code.ILLEGAL_LITE_TOPIC, refused)
        props[LITE_TOPIC] = sp.lite_topic
    if sp.HasField("priority"):  # placed in its queue by semantics.priority
        if sp.priority < 0:  # the 5.5 proxy's answer (its Message.setPriority throws)
            raise RpcError(Code.INTERNAL_SERVER_ERROR, "The priority must be greater than or equal to 0.")
        props[priority.PROPERTY_PRIORITY] = str(sp.priority)
    props["CLUSTER"] = "DefaultCluster"
    born = _ms(sp.born_timestamp) if sp.HasField("born_timestamp") else 0
    fields = dict(topic=msg.topic.name, queue_id=qid, body=body, properties=props, born_host=born_host)
    if born > 0:
        fields["born_timestamp"] = born
    return store.Message(**fields)


def message_type(props: dict) -> int:
    if props.get(routing.PROPERTY_TRANSACTION, "").lower() == "true":
        return d.MessageType.TRANSACTION
    if MESSAGE_GROUP in props:
        return d.MessageType.FIFO
    if routing.PROPERTY_START_DELIVER_TIME in props or routing.PROPERTY_DELAY in props:
        return d.MessageType.DELAY
    if priority.PROPERTY_PRIORITY in props:
        return d.MessageType.PRIORITY
    if LITE_TOPIC in props:
        return d.MessageType.LITE
    return d.MessageType.NORMAL


def _host(host: tuple) -> str:
    return f"{host[0]}:{host[1]}"


def to_pb(stored, *, topic: str | None = None, queue_id: int | None = None, body: bytes | None = None,
          properties: dict | None = None, queue_offset: int | None = None, receipt_handle: str = "",
          invisible_ms: int = 0, attempt: int = 0, deliver_at: int = 0):
    """The Message a consumer receives for one stored message (a Kafka record of an inner batch
    passes its own body and properties). Filled in place: a message given to a constructor is
    copied, and up to 32 of these make one ReceiveMessage answer."""
    props = stored.properties if properties is None else properties
    body = stored.body if body is None else body
    out = d.Message(user_properties={k: v for k, v in props.items() if k not in SYSTEM_PROPERTIES}, body=body)
    out.topic.name = topic or stored.topic
    sp = out.system_properties
    sp.message_id = props.get(UNIQ_KEY) or stored.msg_id
    sp.body_digest.type = d.DigestType.CRC32
    sp.body_digest.checksum = format(zlib.crc32(body), "X")
    sp.body_encoding = d.Encoding.IDENTITY
    sp.message_type = message_type(props)
    sp.born_host = _host(stored.born_host)
    sp.store_host = _host(stored.store_host)
    sp.queue_id = stored.queue_id if queue_id is None else queue_id
    sp.queue_offset = stored.queue_offset if queue_offset is None else queue_offset
    sp.delivery_attempt = attempt
    _set_ms(sp.born_timestamp, stored.born_timestamp)
    _set_ms(sp.store_timestamp, stored.store_timestamp)
    if props.get(TAGS):
        sp.tag = props[TAGS]
    if props.get(KEYS):
        sp.keys.extend(k for k in props[KEYS].split(" ") if k)
    if props.get(MESSAGE_GROUP):
        sp.message_group = props[MESSAGE_GROUP]
    if props.get(LITE_TOPIC):
        sp.lite_topic = props[LITE_TOPIC]
    rank = priority.priority_of(props)
    if rank >= 0:
        sp.priority = rank
    due = deliver_at or _int(props.get(routing.PROPERTY_START_DELIVER_TIME))
    if due:
        _set_ms(sp.delivery_timestamp, due)
    if receipt_handle:
        sp.receipt_handle = receipt_handle
        _set_ms(sp.invisible_duration, invisible_ms)
    return out


def _set_ms(field, ms: int) -> None:
    """Timestamp/Duration.FromMilliseconds without its Python-level helper."""
    field.seconds = ms // 1000
    field.nanos = (ms % 1000) * 1_000_000


def _int(text) -> int:
    try:
        return int(text)
    except (TypeError, ValueError):
        return 0
