"""Client-side message model: what users send, what they receive, and the small enums."""
from __future__ import annotations

import dataclasses
import enum
import zlib

import cramjam

from codec.remoting import message as smsg

COMPRESS_OVER = 4096          # DefaultMQProducer.compressMsgBodyOverHowmuch
COMPRESSED_ZLIB = 0x1 | 0x300  # COMPRESSED_FLAG + compression type ZLIB


@dataclasses.dataclass(frozen=True, order=True)
class MessageQueue:
    topic: str
    broker_name: str
    queue_id: int

    def to_json(self) -> dict:
        return {"brokerName": self.broker_name, "queueId": self.queue_id, "topic": self.topic}


@dataclasses.dataclass
class Message:
    """A message to send. `keys` may be a string (space separated) or a list."""

    topic: str
    body: bytes
    tags: str | None = None
    keys: str | list[str] | None = None
    properties: dict[str, str] = dataclasses.field(default_factory=dict)
    delay_level: int = 0
    flag: int = 0

    def wire_properties(self) -> dict[str, str]:
        props = dict(self.properties)
        if self.tags:
            props["TAGS"] = self.tags
        if self.keys:
            props["KEYS"] = self.keys if isinstance(self.keys, str) else " ".join(self.keys)
        if self.delay_level > 0:
            props["DELAY"] = str(self.delay_level)
        props.setdefault("WAIT", "true")
        return props


@dataclasses.dataclass
class MessageExt:
    """A received message (decoded MessageDecoder layout)."""

    topic: str
    body: bytes
    properties: dict[str, str]
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    offset_msg_id: str
    born_timestamp: int
    store_timestamp: int
    reconsume_times: int
    flag: int
    sys_flag: int
    broker_name: str = "broker-a"

    @property
    def tags(self) -> str | None:
        return self.properties.get("TAGS")

    @property
    def keys(self) -> list[str]:
        return [k for k in (self.properties.get("KEYS") or "").split(" ") if k]

    @property
    def msg_id(self) -> str:
        """The client id (UNIQ_KEY), falling back to the offsetMsgId like MessageClientExt."""
        return self.properties.get("UNIQ_KEY") or self.offset_msg_id

    @property
    def queue(self) -> MessageQueue:
        return MessageQueue(self.topic, self.broker_name, self.queue_id)


class SendStatus(enum.Enum):
    SEND_OK = 0
    FLUSH_DISK_TIMEOUT = 10
    SLAVE_NOT_AVAILABLE = 11
    FLUSH_SLAVE_TIMEOUT = 12


@dataclasses.dataclass
class SendResult:
    status: SendStatus
    msg_id: str
    offset_msg_id: str
    queue: MessageQueue
    queue_offset: int
    transaction_id: str | None = None


class ConsumeStatus(enum.Enum):
    """Concurrent listeners return CONSUME_SUCCESS / RECONSUME_LATER; orderly ones SUCCESS /
    SUSPEND_CURRENT_QUEUE_A_MOMENT."""

    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"
    SUCCESS = "SUCCESS"
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"


class MessageModel(enum.Enum):
    CLUSTERING = "CLUSTERING"
    BROADCASTING = "BROADCASTING"


class ConsumeFrom(enum.Enum):
    LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


class TransactionState(enum.Enum):
    COMMIT = 8
    ROLLBACK = 12
    UNKNOWN = 0


def compress_body(body: bytes) -> tuple[bytes, int]:
    """Bodies over 4 KiB go out zlib-compressed (level 5) with the compressed sysFlag bits."""
    if len(body) > COMPRESS_OVER:
        return zlib.compress(body, 5), COMPRESSED_ZLIB
    return body, 0


def decompress_body(body: bytes, sys_flag: int) -> bytes:
    """Compression type bits (sysFlag & 0x700) >> 8: 1 LZ4 (frame), 2 ZSTD, 3 or 0 (old clients) ZLIB."""
    kind = (sys_flag & 0x700) >> 8
    if kind == 1:
        return bytes(cramjam.lz4.decompress(body))
    if kind == 2:
        return bytes(cramjam.zstd.decompress(body))
    return zlib.decompress(body)


def decode_messages(buf: bytes, broker_name: str = "broker-a") -> list[MessageExt]:
    """Back-to-back stored messages (a pull, query or view body)."""
    out, pos = [], 0
    while pos < len(buf):
        m = smsg.decode(buf, pos)
        pos += m.size
        body = decompress_body(m.body, m.sys_flag) if m.sys_flag & smsg.COMPRESSED_FLAG else m.body
        out.append(MessageExt(topic=m.topic, body=body, properties=m.properties, queue_id=m.queue_id,
                              queue_offset=m.queue_offset, commit_log_offset=m.physical_offset,
                              offset_msg_id=m.msg_id, born_timestamp=m.born_timestamp,
                              store_timestamp=m.store_timestamp, reconsume_times=m.reconsume_times,
                              flag=m.flag, sys_flag=m.sys_flag, broker_name=broker_name))
    return out
