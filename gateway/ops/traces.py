"""A message's trace on the console's msgId view. RocketMQ clients with message trace on write
records (send, consume, commit/rollback) to a trace topic, keyed by the traced msgId: one index
lookup per trace topic finds them (semantics.message_trace decodes them). A Kafka-produced message
shows its producer (the batch's producer id, epoch and first sequence; the client.id and address
that producer id was handed to; the time stored); any message, the groups whose committed offset of its queue is past it (the offset
table, with when each offset was committed since this start). Every lookup is bounded."""
from __future__ import annotations

import struct

import semantics.message_trace as message_trace
from codec.kafka.records import parse_batches
from codec.kafka.schema import DecodeError
from codec.remoting.message import INNER_BATCH_FLAG, parse_msg_id
from gateway.ops.console import when
from gateway.ops.html import esc, link, q

TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"  # the clients' default trace topic
MAX_TRACE_MESSAGES = 64  # trace messages read per trace topic at most
MAX_GROUPS = 200  # consumer groups listed at most
TRANSACTIONAL = 0x10  # Kafka batch attribute


def attach(app, rows: list[dict], trace_topic: str = "") -> list[dict]:
    """`rows` (messages.describe dicts) with "trace", "produced" and "consumed" added to each."""
    topics = [TRACE_TOPIC] + ([trace_topic] if trace_topic and trace_topic != TRACE_TOPIC else [])
    for row in rows:
        row["trace"] = rocketmq_trace(app.store, row["uniq_key"] or row["msg_id"], topics)
        row["produced"] = kafka_producer(app, row["msg_id"])
        row["consumed"] = app.offsets.past(row["topic"], row["queue"], row["offset"])[:MAX_GROUPS]
    return rows


def rocketmq_trace(store, msg_id: str, trace_topics: list[str]) -> list[dict]:
    """The decoded trace records about `msg_id` in the trace topics (each with the trace_topic and,
    unless the record names it, the client_host that wrote it), in time order."""
    records = []
    for topic in trace_topics:
        if not store.queues(topic):
            continue
        for m in store.query_by_key(topic, msg_id, MAX_TRACE_MESSAGES):
            host, port = m.born_host
            for record in message_trace.decode(m.body):
                record.setdefault("client_host", f"{host}:{port}")
                record["trace_topic"] = topic
                records.append(record)
    return message_trace.of_message(records, msg_id)


def kafka_producer(app, offset_msg_id: str) -> dict | None:
    """Who stored the Kafka batch an offsetMsgId names (the client its producer id was handed to, if
    this gateway handed it out since it started); None for a message not from a Kafka producer."""
    try:
        _host, _port, physical = parse_msg_id(offset_msg_id)
    except ValueError:
        return None
    m = app.store.get(physical)
    if m is None or not m.sys_flag & INNER_BATCH_FLAG:
        return None
    try:
        batch = parse_batches(m.body)[0]
    except (DecodeError, struct.error, ValueError, IndexError):
        return None
    kafka = getattr(app, "kafka", None)
    client = kafka.producer_clients.get(batch.producer_id) if kafka is not None and batch.producer_id >= 0 else None
    return {"producer_id": batch.producer_id, "producer_epoch": batch.producer_epoch,
            "base_sequence": batch.base_sequence, "transactional": bool(batch.attributes & TRANSACTIONAL),
            "records": batch.record_count, "client": client, "stored_ms": m.store_timestamp}


def section(row: dict) -> str:
    """The Trace part of one message of the msgId view ("" when the row was not traced)."""
    if "trace" not in row:
        return ""
    out = ["<h4>Trace</h4>"]
    if row["trace"]:
        out.append("<table><tr><th>type</th><th>time</th><th>client host</th><th>group</th><th>cost ms</th>"
                   "<th>status</th><th>transaction</th><th>trace topic</th></tr>")
        out += [_trace_row(r) for r in row["trace"]]
        out.append("</table>")
    else:
        out.append('<p class="note">No RocketMQ trace records (clients with message trace on write them to '
                   f'{esc(TRACE_TOPIC)} or the trace topic given).</p>')
    produced = row["produced"]
    if produced is not None:
        producer = "none (not idempotent)" if produced["producer_id"] < 0 else \
            f"{produced['producer_id']} epoch {produced['producer_epoch']} first sequence {produced['base_sequence']}"
        client = produced["client"]
        who = "" if client is None else f" · client.id {client['client_id'] or '(none)'} from {client['host']}" + \
            (f" · transactional.id {client['transactional_id']}" if client["transactional_id"] else "")
        out.append(f"<p>Produced by Kafka producer id {esc(producer)}"
                   f"{' (transactional)' if produced['transactional'] else ''}{esc(who)}"
                   f" · stored {esc(when(produced['stored_ms']))} · a batch of {esc(produced['records'])} records</p>")
    if row["consumed"]:
        out.append("<table><tr><th>consumed by group</th><th>committed offset</th><th>committed at</th></tr>")
        out += [f"<tr><td>{link('/groups/' + q(g), g)}</td><td>{esc(off)}</td>"
                f"<td>{esc(when(at) if at else 'before this start')}</td></tr>" for g, off, at in row["consumed"]]
        out.append("</table>")
    else:
        out.append('<p class="note">No group has committed an offset past this message.</p>')
    return "".join(out)


def _trace_row(r: dict) -> str:
    status = {True: "success", False: "failed"}.get(r.get("success"), "")
    if r["type"] == "SubBefore":
        status = f"retry {r['retry_times']}" if r.get("retry_times") else "consuming"
    transaction = r.get("transaction_state", "")
    if transaction and r.get("from_check"):
        transaction += " (from a check)"
    cells = (r["type"], when(r.get("timestamp")), r.get("client_host", ""), r.get("group", ""),
             r.get("cost_ms", ""), status, transaction, r["trace_topic"])
    return "<tr>" + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>"
