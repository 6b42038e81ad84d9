"""Consumer groups of both protocols: the list with total lag, and a group's lag per queue and
members; an admin resets offsets of a group without live members."""
from __future__ import annotations

from starlette.routing import Route

import gateway.ops.actions as actions
import gateway.ops.inspect as inspect
from gateway.ops.html import post_form, q, table


def routes(console) -> list[Route]:
    app = console.app

    async def groups(request):
        rows, nav = console.paged(request, inspect.groups(app), "/groups")
        return console.html("Consumer groups", "/groups", nav + table(
            rows, ["group", "lag", "kafka_members", "rocketmq_clients", "topics"],
            links={"group": lambda r: f"/groups/{q(r['group'])}"}, numeric=("lag", "kafka_members", "rocketmq_clients")))

    async def group(request):
        name = request.path_params["name"]
        if request.method == "POST":
            async def reset(f):
                return actions.reset_offsets(app, name, f.get("topic", ""), f.get("to", ""))
            return await console.change(request, f"Group {name}", "/groups", reset)
        rows = inspect.group_lag(app, name)
        kafka = app.kafka.coordinator.groups.get(name)
        members = [{"protocol": "kafka", "member": m} for m in (kafka.members if kafka else {})]
        rocketmq = app.rocketmq_clients.consumers.get(name)
        members += [{"protocol": "rocketmq", "member": c} for c in (rocketmq.clients if rocketmq else {})]
        body = "<h2>Lag per queue</h2>" + table(rows, ["topic", "queue", "committed", "end", "lag"],
                                                 numeric=("queue", "committed", "end", "lag"))
        body += "<h2>Members</h2>" + table(members, ["protocol", "member"])
        user = console.admin(request)
        if user:
            body += "<h2>Reset offsets</h2>" + post_form(
                f"/groups/{q(name)}", [("topic", "topic", rows[0]["topic"] if rows else ""),
                                       ("to", "to (earliest, latest, epoch ms)", "earliest")],
                "Reset", actions.csrf_token(user))
        else:
            body += '<p class="note">Reset offsets with <code>rocketgate offsets reset GROUP TOPIC --to ...</code>.</p>'
        return console.html(f"Group {name}", "/groups", body)

    return [Route("/groups", groups), Route("/groups/{name:path}", group, methods=["GET", "POST"])]
