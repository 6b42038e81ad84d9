"""The message browser: a queue from an offset; a search of a topic by store time, tag and property
(bounded: at most SCAN messages read per search); by key (the IndexFile); by msgId (the offsetMsgId
a RocketMQ client or the DLQ page shows, or a client msgId / UNIQ_KEY with its topic), with the
message's trace (gateway.ops.traces). Bodies framed
with a schema id the registry knows are decoded by their schema (gateway.ops.decode)."""
from __future__ import annotations

import datetime
import functools

from starlette.routing import Route

import gateway.ops.decode as decode
import gateway.ops.messages as messages
import gateway.ops.traces as traces
from gateway import tier_reads
from gateway.ops.console import BadInput, when
from gateway.ops.html import esc, form, link, q

SCAN = 10_000  # messages a search reads at most (the page says when it stopped there)
COUNT = 20


def routes(console) -> list[Route]:
    app = console.app

    async def browser(request):
        p = request.query_params
        topic, key, msg_id = p.get("topic", ""), p.get("key", ""), p.get("msg_id", "")
        body = form("/messages", [("topic", "topic", topic), ("queue", "queue", p.get("queue", "0")),
                                  ("offset", "offset", p.get("offset", "0"))], "Browse")
        body += form("/messages", [("topic", "topic", topic), ("queue", "queue (empty: all)", p.get("queue", "")),
                                   ("since", "since (UTC ISO time or epoch ms)", p.get("since", "")),
                                   ("until", "until", p.get("until", "")), ("tag", "tag", p.get("tag", "")),
                                   ("property", "property (name=value)", p.get("property", ""))], "Search")
        body += form("/messages", [("topic", "topic", topic), ("key", "key", key)], "Find by key")
        trace_topic = p.get("trace_topic", "")
        body += form("/messages", [("msg_id", "msgId", msg_id), ("topic", "topic (for a client msgId)", topic),
                                   ("trace_topic", f"trace topic (besides {traces.TRACE_TOPIC})", trace_topic)],
                     "Find by msgId")
        decoder = functools.partial(decode.by_schema, app.schema_registry)
        searching = any(p.get(f) for f in ("since", "until", "tag", "property"))
        rows, note = None, ""
        if msg_id:
            rows = await tier_reads.read(_by_msg_id, app, msg_id, topic, decoder)
            rows = await tier_reads.read(traces.attach, app, rows[:COUNT], trace_topic)
        elif topic and key:
            rows = await tier_reads.read(messages.by_key, app.store, topic, key, decode=decoder)
        elif topic and searching:
            rows, read = await tier_reads.read(_search, console, request, topic, decoder)
            note = f'<p class="note">{read:,} messages read' + \
                   (f" (a search reads at most {SCAN:,}: narrow it by time or queue)" if read >= SCAN else "") + ".</p>"
        elif topic:
            rows = await tier_reads.read(messages.browse, app.store, topic,
                                         console.int_param(request, "queue", 0, high=65535),
                                         console.int_param(request, "offset", 0), decode=decoder)
        if rows is not None:
            body += note + message_list(rows)
        return console.html("Messages", "/messages", body)

    return [Route("/messages", browser)]


def _by_msg_id(app, msg_id: str, topic: str, decoder) -> list[dict]:
    """An offsetMsgId names a CommitLog position; a client msgId (UNIQ_KEY, the same 32 hex digits'
    shape) is looked up in the topic's index."""
    try:
        found = messages.by_msg_id(app.store, msg_id, decode=decoder)
    except ValueError:
        found, malformed = None, True
    else:
        malformed = False
    if found is not None:
        return [found]
    if topic:
        return [r for r in messages.by_key(app.store, topic, msg_id, decode=decoder) if r["uniq_key"] == msg_id]
    if malformed:
        raise BadInput(f"{msg_id!r} is not an offsetMsgId; a client msgId (UNIQ_KEY) needs its topic")
    return []


def _search(console, request, topic: str, decoder) -> tuple[list[dict], int]:
    p, st = request.query_params, console.app.store
    queues = sorted(st.queues(topic))
    if p.get("queue", "") != "":
        queue = console.int_param(request, "queue", 0, high=65535)
        queues = [queue] if queue in queues else []
    prop = None
    if p.get("property"):
        name, eq, value = p["property"].partition("=")
        if not eq or not name.strip():
            raise BadInput("property must be name=value")
        prop = (name.strip(), value)
    return messages.search(st, topic, queues, _time(p.get("since", ""), "since"), _time(p.get("until", ""), "until"),
                           p.get("tag", "").strip(), prop, COUNT, SCAN, decode=decoder)


def _time(text: str, name: str) -> int | None:
    """Epoch ms from epoch ms or an ISO 8601 time (UTC unless it names its zone); None when empty."""
    text = text.strip()
    if not text:
        return None
    if text.isascii() and text.isdigit():
        value = int(text)
    else:
        try:
            at = datetime.datetime.fromisoformat(text)
        except ValueError:
            raise BadInput(f"{name} must be epoch ms or an ISO time like 2026-01-31T12:00:00") from None
        if at.tzinfo is None:
            at = at.replace(tzinfo=datetime.timezone.utc)
        value = int(at.timestamp() * 1000)
    if not 0 <= value < 1 << 62:
        raise BadInput(f"{name} is out of range")
    return value


def message_list(rows: list[dict]) -> str:
    if not rows:
        return '<p class="note">No messages.</p>'
    out = []
    for r in rows:
        props = "".join(f"<tr><td>{esc(k)}</td><td>{esc(v)}</td></tr>" for k, v in sorted(r["properties"].items()))
        at = f"/messages?topic={q(r['topic'])}&queue={r['queue']}&offset={r['offset']}"
        position = f"{r['topic']} / {r['queue']} @ {r['offset']}"
        out.append(f"<h3>{link(at, position)}</h3>"
                   f"<p>msgId {link('/messages?msg_id=' + q(r['msg_id']), r['msg_id'])} · born {esc(when(r['born_ms']))}"
                   f" · stored {esc(when(r['stored_ms']))} · {esc(r['body_size'])} bytes</p>"
                   f"<table><tr><th>property</th><th>value</th></tr>{props}</table>"
                   f"<p>body ({esc(r['body_encoding'])}):</p><pre>{esc(r['body'])}</pre>" + traces.section(r))
    return "".join(out)
