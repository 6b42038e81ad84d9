"""The message browser: a queue from an offset, by key (the IndexFile) or by msgId."""
from __future__ import annotations

from starlette.routing import Route

import gateway.ops.messages as messages
from gateway.ops.html import esc, form, link, q
from gateway.ops.console import BadInput, when


def routes(console) -> list[Route]:
    app = console.app

    async def browser(request):
        p = request.query_params
        topic, key, msg_id = p.get("topic", ""), p.get("key", ""), p.get("msg_id", "")
        body = form("/messages", [("topic", "topic", topic), ("queue", "queue", p.get("queue", "0")),
                                  ("offset", "offset", p.get("offset", "0"))], "Browse")
        body += form("/messages", [("topic", "topic", topic), ("key", "key", key)], "Find by key")
        body += form("/messages", [("msg_id", "msgId", msg_id)], "Find by msgId")
        if msg_id:
            try:
                found = messages.by_msg_id(app.store, msg_id)
            except ValueError:
                raise BadInput(f"{msg_id!r} is not a msgId") from None
            rows = [found] if found else []
        elif topic and key:
            rows = messages.by_key(app.store, topic, key)
        elif topic:
            rows = messages.browse(app.store, topic, console.int_param(request, "queue", 0, high=65535),
                                   console.int_param(request, "offset", 0))
        else:
            rows = None
        if rows is not None:
            body += message_list(rows)
        return console.html("Messages", "/messages", body)

    return [Route("/messages", browser)]


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
                   f"<p>body ({esc(r['body_encoding'])}):</p><pre>{esc(r['body'])}</pre>")
    return "".join(out)
