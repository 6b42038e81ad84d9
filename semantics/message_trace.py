"""RocketMQ client trace records, decoded for people (sans-I/O). With message trace on, the Java
clients write the body of a trace-topic message as records separated by char 2, each a type and its
fields separated by char 1, in the order of the client's TraceDataEncoder: Pub (a send), SubBefore /
SubAfter (a consume and its outcome), EndTransaction (a commit or rollback), Recall. A body that is
not such text, or a record with fields missing or malformed, yields what could be read and nothing
else: trace data comes from any client and never breaks the page showing it."""
from __future__ import annotations

CONTENT_SPLITOR = "\x01"  # between the fields of one record
FIELD_SPLITOR = "\x02"  # between records
MAX_RECORDS = 256  # records read from one trace message at most
MESSAGE_TYPES = ("Normal", "Trans_Half", "Trans_Commit", "Delay", "Order")  # MessageType ordinals

# the fields of each record type, after the type itself; None: a field the view does not show
LAYOUT = {
    "Pub": ("timestamp", "region", "group", "topic", "msg_id", "tags", "keys", "store_host", "body_length",
            "cost_ms", "msg_type", "offset_msg_id", "success", "client_host"),
    "SubBefore": ("timestamp", "region", "group", "request_id", "msg_id", "retry_times", "keys"),
    "SubAfter": ("request_id", "msg_id", "cost_ms", "success", "keys", "context_code", "timestamp", "group"),
    "EndTransaction": ("timestamp", "region", "group", "topic", "msg_id", "tags", "keys", "store_host", "msg_type",
                       "transaction_id", "transaction_state", "from_check"),
    "Recall": ("timestamp", "region", "group", "topic", "msg_id", "success"),
}
NUMBERS = {"timestamp", "body_length", "cost_ms", "retry_times", "context_code"}
FLAGS = {"success", "from_check"}
ORDER = {"Pub": 0, "EndTransaction": 1, "SubBefore": 2, "SubAfter": 3, "Recall": 4}


def decode(body: bytes) -> list[dict]:
    """The records of one trace message body, each a dict with "type" and the fields it has (numbers
    as int, flags as bool); records of unknown types and unreadable fields are left out."""
    try:
        text = bytes(body).decode("utf-8")
    except UnicodeDecodeError:
        return []
    out = []
    for chunk in text.split(FIELD_SPLITOR, MAX_RECORDS)[:MAX_RECORDS]:
        fields = chunk.split(CONTENT_SPLITOR)
        layout = LAYOUT.get(fields[0])
        if layout is None:
            continue
        if fields[0] == "Pub" and len(fields) == 13:  # an old client's Pub: no offsetMsgId before success
            layout = layout[:11] + ("success",)
        record = {"type": fields[0]}
        for name, value in zip(layout, fields[1:]):
            parsed = _field(name, value)
            if parsed is not None:
                record[name] = parsed
        if record.get("msg_id"):
            out.append(record)
    return out


def _field(name: str, value: str):
    if name in NUMBERS or name == "msg_type":
        try:
            number = int(value) if len(value) < 20 else None
        except ValueError:
            return None
        if name != "msg_type":
            return number
        return MESSAGE_TYPES[number] if number is not None and 0 <= number < len(MESSAGE_TYPES) else None
    if name in FLAGS:
        return {"true": True, "false": False}.get(value.strip().lower())
    return value if value and value != "null" else None


def of_message(records: list[dict], msg_id: str) -> list[dict]:
    """The records about `msg_id` in time order, a send before its consumes at the same millisecond
    (a SubAfter without a time, from a cloud client, last)."""
    mine = [r for r in records if r.get("msg_id") == msg_id]
    return sorted(mine, key=lambda r: (r.get("timestamp") is None, r.get("timestamp") or 0, ORDER.get(r["type"], 9)))
