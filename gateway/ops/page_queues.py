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
        shards = await console.shards("dlq")
        sharded = len(shards.parts) > 1
        body = table(shards.dead_letters(), ["group", *(["shard"] if sharded else []), "messages"],
                     links={"group": lambda r: f"/dlq/{q(r['group'])}"}, numeric=("shard", "messages"))
        return console.html("Dead letters", "/dlq", body)

    async def dlq_group(request):
        name = request.path_params["name"]
        if request.method == "POST":
            async def resend(f):
                return await actions.resend(app, name, f.get("msg_id") or None)
            return await console.change(request, f"Dead letters of {name}", "/dlq", resend)
        start = console.int_param(request, "start", 0)
        own = inspect.dead_letter_page(app, name, start, 100)
        pages = await console.each_shard(own, f"/api/dlq/{q(name)}?start={start}&limit=100")
        rows = [{**r, "shard": shard, "stored": when(r["stored_ms"])} for shard, found in pages
                for r in found["messages"]]
        sharded = len(console.app.config.shard_metrics) > 0
        body = table(rows, ["offset", *(["shard"] if sharded else []), "msg_id", "topic", "keys", "tags",
                            "reconsume_times", "stored"],
                     links={"msg_id": lambda r: console.shard_url(request, r["shard"]) + f"/messages?msg_id={q(r['msg_id'])}"})
        user, here = console.admin(request), [r for r in rows if r["shard"] == 0]
        if user and here:
            token = actions.csrf_token(user)
            body += post_form(f"/dlq/{q(name)}", [("msg_id", "msgId", here[0]["msg_id"])], "Resend one", token)
            body += post_form(f"/dlq/{q(name)}", [], "Resend all" + (" (shard 0's)" if sharded else ""), token)
        else:
            body += console.admin_note(request, "resend dead letters") + \
                '<p class="note">Or resend with <code>rocketgate dlq resend GROUP --msg-id ID</code> or <code>--all</code>.</p>'
        body += console.elsewhere(request, {r["shard"] for r in rows}, f"/dlq/{q(name)}", "resend its dead letters")
        return console.html(f"Dead letters of {name}", "/dlq", body)

    async def delay(request):
        if request.method == "POST":
            async def deliver(f):
                return await actions.deliver_now(app, f.get("msg_id", ""))
            return await console.change(request, "Delay queues", "/delay", deliver)
        shards = await console.shards("delay")
        sharded = len(shards.parts) > 1
        rows = [{**r, "next_due": when(r["next_due_ms"])} for r in shards.rows("delay", "levels")]
        body = table(rows, ["level", *(["shard"] if sharded else []), "depth", "next_due"], numeric=("shard", "depth"))
        waiting = [{**r, "due": when(r["due_ms"])} for r in shards.rows("delay", "waiting")]
        body += "<h2>Next waiting</h2>" + table(waiting, ["level", *(["shard"] if sharded else []), "msg_id", "topic",
                                                          "uniq_key", "due"], numeric=("shard",))
        user, here = console.admin(request), [r for r in waiting if r["shard"] == 0]
        if user and here:
            body += post_form("/delay", [("msg_id", "msgId", here[0]["msg_id"])], "Deliver now",
                              actions.csrf_token(user))
        else:
            body += console.admin_note(request, "deliver a delayed message now")
        body += console.elsewhere(request, {r["shard"] for r in waiting}, "/delay", "deliver its delayed messages now")
        return console.html("Delay queues", "/delay", body)

    async def transactions(request):
        if request.method == "POST":
            async def decide(f):
                return await actions.end_transaction(app, f.get("half_offset", ""), f.get("decision", ""))
            return await console.change(request, "Pending transactions", "/transactions", decide)
        shards = await console.shards("transactions")
        sharded = len(shards.parts) > 1
        halves = [{**r, "stored": when(r["stored_ms"])} for r in shards.rows("transactions", "rows")]
        stored = sum(part["transactions"]["stored"] for _shard, part in shards.up())
        undecided = sum(part["transactions"]["undecided"] for _shard, part in shards.up())
        body = f'<p class="note">{stored:,} half messages stored; {undecided:,} undecided.</p>'
        body += table(halves, ["half_offset", *(["shard"] if sharded else []), "topic", "producer_group", "msg_id",
                               "stored", "checks"], numeric=("half_offset", "shard", "checks"))
        user, here = console.admin(request), [r for r in halves if r["shard"] == 0]
        if user and here:
            token, first = actions.csrf_token(user), here[0]["half_offset"]
            body += post_form("/transactions", [("half_offset", "half offset", first),
                                                ("decision", "commit or rollback", "commit")], "Decide", token)
        else:
            body += console.admin_note(request, "commit or roll back a pending transaction")
        body += console.elsewhere(request, {r["shard"] for r in halves}, "/transactions", "decide its transactions")
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
