"""The dashboard: server-rendered pages under the HTTP port (overview, topics, groups, message
browser, DLQ, delay queues, pending transactions). Read-only for everyone; an admin signed in
(gateway.ops.actions: `--authorizer acl`, HTTP Basic, a super user) also gets the POST forms that
create topics, reset a group's offsets and resend dead letters, each with a CSRF token."""
from __future__ import annotations

import collections
import datetime
import time

from urllib.parse import parse_qs

import trio
from starlette.responses import HTMLResponse, RedirectResponse
from starlette.routing import Route

import gateway.ops.actions as actions

import gateway.ops.inspect as inspect
import gateway.ops.messages as messages
from gateway.ops.html import cards, esc, form, link, page, post_form, q, sparkline, table

SAMPLE_EVERY_S = 5.0
PAGE_ROWS = 500  # rows of a long listing (topics, groups) per page


def _paged(request, rows: list[dict], path: str) -> tuple[list[dict], str]:
    """One page of `rows` (`?page=N`, from 0) and the links to its neighbours."""
    try:
        number = max(0, int(request.query_params.get("page", 0)))
    except ValueError:
        number = 0
    last = max(0, (len(rows) - 1) // PAGE_ROWS)
    number = min(number, last)
    nav = [f"{len(rows)} rows"]
    if number > 0:
        nav.append(link(f"{path}?page={number - 1}", "previous"))
    if number < last:
        nav.append(link(f"{path}?page={number + 1}", "next"))
    if last:
        nav.insert(1, f"page {number + 1} of {last + 1}")
    return rows[number * PAGE_ROWS:(number + 1) * PAGE_ROWS], f'<p class="note">{" · ".join(nav)}</p>'


class Throughput:
    """CommitLog bytes written per second, sampled every SAMPLE_EVERY_S (the overview's sparkline)."""

    def __init__(self, app, keep: int = 120) -> None:
        self.app = app
        self.rates: collections.deque[float] = collections.deque(maxlen=keep)
        self._last = None

    def sample(self) -> None:
        now, offset = time.monotonic(), self.app.store.max_physical_offset
        if self._last is not None and now > self._last[0]:
            self.rates.append((offset - self._last[1]) / (now - self._last[0]))
        self._last = (now, offset)

    async def run(self) -> None:
        while True:
            self.sample()
            await trio.sleep(SAMPLE_EVERY_S)


def _ms(ms) -> str:
    if not ms:
        return ""
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def routes(app, throughput: Throughput) -> list[Route]:
    def html(title: str, here: str, body: str) -> HTMLResponse:
        return HTMLResponse(page(title, here, body))

    async def change(request, title: str, here: str, do) -> HTMLResponse:
        """A POST: refused (403) unless an admin signed in; `await do(form)` says what it did."""
        user = actions.admin_user(app, request)
        if user is None:
            return HTMLResponse(page("Not allowed", here, "<p>Changes need an admin: "
                                     f"{link('/login', 'sign in')}.</p>"), status_code=403)
        fields = {k: v[0] for k, v in parse_qs((await request.body()).decode(), keep_blank_values=True).items()}
        try:
            actions.check_post(request, user, fields)
            done = await do(fields)
        except actions.Refused as exc:
            return HTMLResponse(page(title, here, f'<p class="refused">{esc(exc)}</p>'), status_code=400)
        return html(title, here, f'<p class="done">{esc(done)}</p><p>{link(request.url.path, "back")}</p>')

    async def login(request):
        user = actions.admin_user(app, request)
        if user is not None:
            signed_in = RedirectResponse("/", status_code=303)
            signed_in.set_cookie(actions.SESSION_COOKIE, actions.session_cookie(user), max_age=actions.SESSION_S,
                                 httponly=True, samesite="strict")
            return signed_in
        reason = "" if app.security is not None else " (this gateway runs without --authorizer acl: no admins)"
        return HTMLResponse(page("Sign in", "/", f"<p>Admin credentials needed{esc(reason)}.</p>"), status_code=401,
                            headers={"WWW-Authenticate": 'Basic realm="rocketgate", charset="UTF-8"'})

    async def overview(request):
        st, cfg = app.store, app.config
        usage = inspect.disk_usage(app)
        body = cards([("Ready", "yes" if app.stats.ready() else "no"), ("Topics", len(st.topics.names())),
                      ("Groups", len(app.offsets.groups())), ("CommitLog", f"{st.max_physical_offset:,} B"),
                      ("On disk", f"{sum(usage.values()):,} B"),
                      ("Connections", sum(app.stats.connections.values()))])
        listeners = [{"listener": "kafka", "address": f"{cfg.host}:{cfg.kafka_port}",
                      "connections": app.stats.connections["kafka"]},
                     {"listener": "remoting", "address": f"{cfg.host}:{cfg.remoting_port}",
                      "connections": app.stats.connections["remoting"]},
                     {"listener": "http", "address": f"{cfg.host}:{cfg.http_port}", "connections": ""}]
        user = actions.admin_user(app, request)
        body += (f"<p>Signed in as admin {esc(user)}.</p>" if user else
                 f'<p class="note">Read-only. {link("/login", "Sign in")} as an admin to make changes.</p>')
        rate = f"{throughput.rates[-1]:,.0f} B/s" if throughput.rates else "-"
        body += "<h2>Listeners</h2>" + table(listeners, ["listener", "address", "connections"])
        body += f"<h2>Write throughput <small>(now {esc(rate)})</small></h2>" + sparkline(list(throughput.rates))
        return html("Overview", "/", body)

    async def topics(request):
        if request.method == "POST":
            async def create(f):
                done = actions.create_topic(app, f.get("name", ""), f.get("queues", "4"))
                await app.topics_written()
                return done
            return await change(request, "Topics", "/topics", create)
        rows, nav = _paged(request, inspect.topics(app), "/topics")
        user = actions.admin_user(app, request)
        admin = post_form("/topics", [("name", "new topic", ""), ("queues", "queues", 4)], "Create",
                          actions.csrf_token(user)) if user else ""
        return html("Topics", "/topics", admin + nav + table(
            rows, ["topic", "read_queues", "write_queues", "perm", "messages", "view"],
            links={"topic": lambda r: f"/topics/{q(r['topic'])}"}, numeric=("read_queues", "write_queues", "messages")))

    async def topic(request):
        name = request.path_params["name"]
        cfg = app.store.topics.get(name)
        if cfg is None:
            return HTMLResponse(page("Not found", "/topics", f"<p>No topic {esc(name)}.</p>"), status_code=404)
        queues = [{"queue": qid, "first": lo, "end": hi, "messages": hi - lo,
                   "browse": "messages"} for qid, (lo, hi) in sorted(inspect.queue_range(app.store, name).items())]
        body = table(queues, ["queue", "first", "end", "messages", "browse"], numeric=("first", "end", "messages"),
                     links={"browse": lambda r: f"/messages?topic={q(name)}&queue={r['queue']}&offset={r['first']}"})
        attrs = [{"config": k, "value": v} for k, v in sorted(cfg.attributes.items())]
        body += "<h2>Configs</h2>" + table(attrs, ["config", "value"])
        body += f"<p>perm {esc(cfg.perm)}; {'a filtered view' if app.views.is_view(name) else 'a topic'}</p>"
        return html(f"Topic {name}", "/topics", body)

    async def groups(request):
        rows, nav = _paged(request, inspect.groups(app), "/groups")
        return html("Consumer groups", "/groups", nav + table(
            rows, ["group", "lag", "kafka_members", "rocketmq_clients", "topics"],
            links={"group": lambda r: f"/groups/{q(r['group'])}"}, numeric=("lag", "kafka_members", "rocketmq_clients")))

    async def group(request):
        name = request.path_params["name"]
        if request.method == "POST":
            async def reset(f):
                return actions.reset_offsets(app, name, f.get("topic", ""), f.get("to", ""))
            return await change(request, f"Group {name}", "/groups", reset)
        rows = inspect.group_lag(app, name)
        kafka = app.kafka.coordinator.groups.get(name)
        members = [{"protocol": "kafka", "member": m} for m in (kafka.members if kafka else {})]
        rocketmq = app.rocketmq_clients.consumers.get(name)
        members += [{"protocol": "rocketmq", "member": c} for c in (rocketmq.clients if rocketmq else {})]
        body = "<h2>Lag per queue</h2>" + table(rows, ["topic", "queue", "committed", "end", "lag"],
                                                 numeric=("queue", "committed", "end", "lag"))
        body += "<h2>Members</h2>" + table(members, ["protocol", "member"])
        user = actions.admin_user(app, request)
        if user:
            body += "<h2>Reset offsets</h2>" + post_form(
                f"/groups/{q(name)}", [("topic", "topic", rows[0]["topic"] if rows else ""),
                                       ("to", "to (earliest, latest, epoch ms)", "earliest")],
                "Reset", actions.csrf_token(user))
        else:
            body += '<p class="note">Reset offsets with <code>rocketgate offsets reset GROUP TOPIC --to ...</code>.</p>'
        return html(f"Group {name}", "/groups", body)

    async def browser(request):
        p = request.query_params
        topic, key, msg_id = p.get("topic", ""), p.get("key", ""), p.get("msg_id", "")
        body = form("/messages", [("topic", "topic", topic), ("queue", "queue", p.get("queue", "0")),
                                  ("offset", "offset", p.get("offset", "0"))], "Browse")
        body += form("/messages", [("topic", "topic", topic), ("key", "key", key)], "Find by key")
        body += form("/messages", [("msg_id", "msgId", msg_id)], "Find by msgId")
        try:
            if msg_id:
                found = messages.by_msg_id(app.store, msg_id)
                rows = [found] if found else []
            elif topic and key:
                rows = messages.by_key(app.store, topic, key)
            elif topic:
                rows = messages.browse(app.store, topic, int(p.get("queue", 0)), int(p.get("offset", 0)))
            else:
                rows = None
        except ValueError:
            return HTMLResponse(page("Messages", "/messages", body + "<p>Not a number or msgId.</p>"), status_code=400)
        if rows is not None:
            body += _message_list(rows)
        return html("Messages", "/messages", body)

    async def dlq(request):
        letters = [{"group": g, "messages": n} for g, n in sorted(inspect.dead_letters(app).items())]
        body = table(letters, ["group", "messages"], links={"group": lambda r: f"/dlq/{q(r['group'])}"},
                     numeric=("messages",))
        return html("Dead letters", "/dlq", body)

    async def dlq_group(request):
        name = request.path_params["name"]
        if request.method == "POST":
            async def resend(f):
                return await actions.resend(app, name, f.get("msg_id") or None)
            return await change(request, f"Dead letters of {name}", "/dlq", resend)
        rows = inspect.dead_letter_page(app, name, int(request.query_params.get("start", 0)), 100)["messages"]
        for r in rows:
            r["stored"] = _ms(r["stored_ms"])
        body = table(rows, ["offset", "msg_id", "topic", "keys", "tags", "reconsume_times", "stored"],
                     links={"msg_id": lambda r: f"/messages?msg_id={q(r['msg_id'])}"})
        user = actions.admin_user(app, request)
        if user and rows:
            token = actions.csrf_token(user)
            body += post_form(f"/dlq/{q(name)}", [("msg_id", "msgId", rows[0]["msg_id"])], "Resend one", token)
            body += post_form(f"/dlq/{q(name)}", [], "Resend all", token)
        else:
            body += '<p class="note">Resend with <code>rocketgate dlq resend GROUP --msg-id ID</code> or <code>--all</code>.</p>'
        return html(f"Dead letters of {name}", "/dlq", body)

    async def delay(request):
        rows = inspect.delay_queues(app)
        for r in rows:
            r["next_due"] = _ms(r["next_due_ms"])
        return html("Delay queues", "/delay", table(rows, ["level", "depth", "next_due"], numeric=("depth",)))

    async def transactions(request):
        halves = [{"half_offset": off, "topic": h.properties.get("REAL_TOPIC", ""),
                   "producer_group": h.properties.get("PGROUP", ""), "msg_id": h.properties.get("UNIQ_KEY", ""),
                   "stored": _ms(h.store_timestamp), "checks": app.transactions.check_times.get(off, 0)}
                  for off, h in app.transactions._undecided_halves()]
        return html("Pending transactions", "/transactions", table(
            halves[:500], ["half_offset", "topic", "producer_group", "msg_id", "stored", "checks"],
            numeric=("half_offset", "checks")))

    async def schemas(request):
        if app.schema_registry is None:
            body = '<p class="note">No schema registry on this gateway (start it with --schema-registry-port).</p>'
        else:
            body = "<h2>Subjects</h2>" + table(inspect.schema_subjects(app), [
                "subject", "versions", "latest_version", "latest_id", "type", "compatibility"],
                numeric=("latest_version", "latest_id"))
        body += "<h2>Topics that validate</h2>" + table(inspect.validated_topics(app), [
            "topic", "key_validation", "key_strategy", "key_refused", "value_validation", "value_strategy",
            "value_refused"], links={"topic": lambda r: f"/topics/{q(r['topic'])}"},
            numeric=("key_refused", "value_refused"))
        return html("Schemas", "/schemas", body)

    both = ["GET", "POST"]
    return [Route("/", overview), Route("/login", login), Route("/topics", topics, methods=both),
            Route("/topics/{name:path}", topic), Route("/groups", groups),
            Route("/groups/{name:path}", group, methods=both), Route("/messages", browser),
            Route("/dlq", dlq), Route("/dlq/{name:path}", dlq_group, methods=both), Route("/delay", delay),
            Route("/transactions", transactions), Route("/schemas", schemas)]


def _message_list(rows: list[dict]) -> str:
    if not rows:
        return '<p class="note">No messages.</p>'
    out = []
    for r in rows:
        props = "".join(f"<tr><td>{esc(k)}</td><td>{esc(v)}</td></tr>" for k, v in sorted(r["properties"].items()))
        at = f"/messages?topic={q(r['topic'])}&queue={r['queue']}&offset={r['offset']}"
        position = f"{r['topic']} / {r['queue']} @ {r['offset']}"
        out.append(f"<h3>{link(at, position)}</h3>"
                   f"<p>msgId {link('/messages?msg_id=' + q(r['msg_id']), r['msg_id'])} · born {esc(_ms(r['born_ms']))}"
                   f" · stored {esc(_ms(r['stored_ms']))} · {esc(r['body_size'])} bytes</p>"
                   f"<table><tr><th>property</th><th>value</th></tr>{props}</table>"
                   f"<p>body ({esc(r['body_encoding'])}):</p><pre>{esc(r['body'])}</pre>")
    return "".join(out)
