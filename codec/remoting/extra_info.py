"""RocketMQ 5 POP strings: the `ExtraInfo` receipt a consumer echoes back on ack / change
invisible time, and the per-queue info of a POP_MESSAGE answer (startOffsetInfo, msgOffsetInfo).

ExtraInfo is space-separated: `ckQueueOffset popTime invisibleTime reviveQid retry brokerName
queueId [queueOffset]`, where `retry` is "0" for the topic itself, "1" for its POP retry topic
`%RETRY%<group>_<topic>` and "2" for the v2 name `%RETRY%<group>+<topic>`. The offset infos are
`;`-joined `retry queueId value` items (value: the checkpoint start offset, or a `,`-joined list of
the message offsets in answer order).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

RETRY_PREFIX = "%RETRY%"


def pop_retry_topic(group: str, topic: str, v2: bool = False) -> str:
    return f"{RETRY_PREFIX}{group}{'+' if v2 else '_'}{topic}"


def retry_mark(topic: str) -> str:
    if topic.startswith(RETRY_PREFIX):
        return "2" if "+" in topic else "1"
    return "0"


def real_topic(topic: str, group: str, mark: str) -> str:
    """The topic a receipt is about: the consumer's topic or one of its POP retry topics."""
    if mark == "0":
        return topic
    if mark in ("1", "2"):
        return pop_retry_topic(group, topic, v2=mark == "2")
    raise ValueError(f"bad retry mark {mark!r}")


@dataclass(frozen=True)
class ExtraInfo:
    ck_offset: int
    pop_time: int
    invisible_time: int
    revive_qid: int
    retry: str
    broker_name: str
    queue_id: int
    queue_offset: int | None = None

    def __str__(self) -> str:
        fields = [self.ck_offset, self.pop_time, self.invisible_time, self.revive_qid, self.retry,
                  self.broker_name, self.queue_id]
        if self.queue_offset is not None:
            fields.append(self.queue_offset)
        return " ".join(str(f) for f in fields)


# The common shape (7 or 8 ASCII fields; numbers of at most 18 digits are always in a Java long's
# range): one match instead of a check per field. Anything else takes the field-by-field path below.
_USUAL = re.compile(r"(-?[0-9]{1,18}) (-?[0-9]{1,18}) (-?[0-9]{1,18}) (-?[0-9]{1,18}) ([012]) ([^ ]*) "
                    r"(-?[0-9]{1,18})(?: (-?[0-9]{1,18}))?")


def parse_extra_info(text: str | None) -> ExtraInfo:
    """Raises ValueError when `text` is not an ExtraInfo string."""
    if not text:
        raise ValueError("extraInfo is empty")
    usual = _USUAL.fullmatch(text)
    if usual is not None:
        ck, pop_time, invisible, revive, retry, broker, qid, queue_offset = usual.groups()
        return ExtraInfo(int(ck), int(pop_time), int(invisible), int(revive), retry, broker, int(qid),
                         None if queue_offset is None else int(queue_offset))
    parts = text.split(" ")
    if len(parts) < 7:
        raise ValueError(f"extraInfo has {len(parts)} fields, needs 7 or 8")
    if parts[4] not in ("0", "1", "2"):
        raise ValueError(f"bad retry mark {parts[4]!r}")
    numbers = [_long(p) for p in parts[:4]]
    return ExtraInfo(numbers[0], numbers[1], numbers[2], numbers[3], parts[4], parts[5], _long(parts[6]),
                     _long(parts[7]) if len(parts) > 7 else None)


def _long(text: str) -> int:
    if not text.lstrip("-").isdigit():
        raise ValueError(f"not a number: {text!r}")
    value = int(text)
    if not -2 ** 63 <= value < 2 ** 63:
        raise ValueError(f"out of range: {text!r}")
    return value


def offset_info(items: list[tuple[str, int, object]]) -> str:
    """`retry queueId value;...`; a list value is `,`-joined."""
    return ";".join(f"{mark} {qid} {','.join(map(str, v)) if isinstance(v, list) else v}" for mark, qid, v in items)


def parse_offset_info(text: str | None) -> dict[str, list[int]]:
    """`{"<retry>@<queueId>": [values]}` (a startOffsetInfo has one value per key)."""
    out: dict[str, list[int]] = {}
    for item in (text or "").split(";"):
        if not item:
            continue
        parts = item.split(" ")
        if len(parts) != 3:
            raise ValueError(f"bad offset info item {item!r}")
        out[f"{parts[0]}@{parts[1]}"] = [int(v) for v in parts[2].split(",")]
    return out
