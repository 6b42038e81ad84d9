"""RocketMQ's operations queues: dead letters per group (with resend for an admin), the delay
levels and timer queue, half messages of undecided transactions, and the schema registry."""
from __future__ import annotations

from starlette.routing import Route

import gateway.ops.actions as actions
import gateway.ops.inspect as inspect
from gateway.ops.html import post_form, q, table
from gateway.ops.console import when


def routes(console) -> list[Route]:
    app = console.app

    async def dlq(request):
        letters = [{"group": g, "messages": n} for g, n in sorted(inspect.dead_letters(app).items())]
        body = table(letters, ["group", "messages"], links={"group": lambda r: f"/dlq/{q(r['group'])}"},
                     numeric=("messages",))
        return console.html("Dead letters", "/dlq", body)

    async def dlq_group(request):
        name = request.path_params["name"]
        if request.method == "POST":
            async def resend(f):
                return await actions.resend(app, name, f.get("msg_id") or None)
            return await console.change(request, f"Dead letters of {name}", "/dlq", resend)
        start = console.int_param(request, "start", 0)
        rows = inspect.dead_letter_page(app, name, start, 100)["messages"]
        for r in rows:
            r["stored"] = when(r["stored_ms"])
        body = table(rows, ["offset", "msg_id", "topic", "keys", "tags", "reconsume_times", "stored"],
                     links={"msg_id": lambda r: f"/messages?msg_id={q(r['msg_id'])}"})
        user = console.admin(request)
        if user and rows:
            token = actions.csrf_token(user)
            body += post_form(f"/dlq/{q(name)}", [("msg_id", "msgId", rows[0]["msg_id"])], "Resend one", token)
            body += post_form(f"/dlq/{q(name)}", [], "Resend all", token)
        else:
            body += console.admin_note(request, "resend dead letters") + \
                '<p class="note">Or resend with <code>rocketgate dlq resend GROUP --msg-id ID</code> or <code>--all</code>.</p>'
        return console.html(f"Dead letters of {name}", "/dlq", body)

    async def delay(request):
        if request.method == "POST":
            async def deliver(f):
                return await actions.deliver_now(app, f.get("msg_id", ""))
            return await console.change(request, "Delay queues", "/delay", deliver)
        rows = inspect.delay_queues(app)
        for r in rows:
            r["next_due"] = when(r["next_due_ms"])
        body = table(rows, ["level", "depth", "next_due"], numeric=("depth",))
        waiting = inspect.delay_waiting(app)
        for r in waiting:
            r["due"] = when(r["due_ms"])
        body += "<h2>Next waiting</h2>" + table(waiting, ["level", "msg_id", "topic", "uniq_key", "due"])
        user = console.admin(request)
        if user and waiting:
            body += post_form("/delay", [("msg_id", "msgId", waiting[0]["msg_id"])], "Deliver now",
                              actions.csrf_token(user))
        else:
            body += console.admin_note(request, "deliver a delayed message now")
        return console.html("Delay queues", "/delay", body)

    async def transactions(request):
        if request.method == "POST":
            async def decide(f):
                return await actions.end_transaction(app, f.get("half_offset", ""), f.get("decision", ""))
            return await console.change(request, "Pending transactions", "/transactions", decide)
        halves = [{"half_offset": off, "topic": h.properties.get("REAL_TOPIC", ""),
                   "producer_group": h.properties.get("PGROUP", ""), "msg_id": h.properties.get("UNIQ_KEY", ""),
                   "stored": when(h.store_timestamp), "checks": app.transactions.check_times.get(off, 0)}
                  for off, h in app.transactions.undecided_halves()]
        body = f'<p class="note">{inspect.half_messages_stored(app):,} half messages stored; ' \
               f'{len(halves):,} undecided.</p>'
        body += table(halves[:500], ["half_offset", "topic", "producer_group", "msg_id", "stored", "checks"],
                      numeric=("half_offset", "checks"))
        user = console.admin(request)
        if user and halves:
            token, first = actions.csrf_token(user), halves[0]["half_offset"]
            body += post_form("/transactions", [("half_offset", "half offset", first),
                                                ("decision", "commit or rollback", "commit")], "Decide", token)
        else:
            body += console.admin_note(request, "commit or roll back a pending transaction")
        return console.html("Pending transactions", "/transactions", body)

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
        return console.html("Schemas", "/schemas", body)

    both = ["GET", "POST"]
    return [Route("/dlq", dlq), Route("/dlq/{name:path}", dlq_group, methods=both), Route("/delay", delay, methods=both),
            Route("/transactions", transactions, methods=both), Route("/schemas", schemas)]
