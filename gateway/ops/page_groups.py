"""Consumer groups of every kind (gateway.ops.group_views): the list with kinds, state, members
and total lag; a group's members with their assignments, lag per queue, POP/share progress and lag
over the last hour; an admin resets offsets of a group without live members."""
from __future__ import annotations

from starlette.routing import Route

import gateway.ops.actions as actions
from gateway import tier_reads
import gateway.ops.group_views as group_views
from gateway.ops.html import cards, chart_lines, post_form, q, table


def routes(console) -> list[Route]:
    app = console.app

    async def groups(request):
        rows, nav = console.paged(request, (await console.shards("groups")).groups(), "/groups")
        return console.html("Consumer groups", "/groups", nav + table(
            rows, ["group", "kinds", "state", "members", "lag", "topics"],
            links={"group": lambda r: f"/groups/{q(r['group'])}"}, numeric=("members", "lag")))

    async def group(request):
        name = request.path_params["name"]
        if request.method == "POST":
            async def reset(f):
                topic = f.get("topic", "")  # the plan is made once the tier segments it reads are downloaded
                plan = await tier_reads.read(actions.reset_plan, app, name, topic, f.get("to", ""))
                return actions.reset_offsets(app, name, topic, plan)
            return await console.change(request, f"Group {name}", "/groups", reset)
        shards = await console.shards("groups", series=(f"points:lag:{name}",))
        found = shards.group(name)
        if found is None:
            return console.not_found("/groups", f"No group {name}.")
        rows, members = shards.lag(name), found["members"]
        progress = group_views.pop_progress(app, name)
        body = cards([("Kinds", ", ".join(found["kinds"])), ("State", found["state"]),
                      ("Members", len(members)), ("Lag", f"{sum(r['lag'] for r in rows):,}")])
        body += '<div class="charts">' + chart_lines(shards.lines(f"points:lag:{name}"), "Lag (messages)",
                                                     lambda v: f"{v:,.0f}") + "</div>"
        body += "<h2>Members</h2>" + table(members, ["kind", "member", "client", "host", "assignment"])
        lag_columns = ["topic", "queue", *(["shard"] if len(shards.parts) > 1 else []), "committed", "end", "lag"]
        body += "<h2>Lag per queue</h2>" + table(rows, lag_columns,
                                                 numeric=("queue", "committed", "end", "lag"))
        if progress:
            body += "<h2>Per-message progress (POP / share)</h2>" + table(
                progress, ["topic", "queue", "start", "next", "end", "in_flight", "backlog"],
                numeric=("queue", "start", "next", "end", "in_flight", "backlog"))
        user = console.admin(request)
        if user:
            body += "<h2>Reset offsets</h2>" + post_form(
                f"/groups/{q(name)}", [("topic", "topic", rows[0]["topic"] if rows else ""),
                                       ("to", "to (earliest, latest, epoch ms)", "earliest")],
                "Reset", actions.csrf_token(user))
        else:
            body += console.admin_note(request, "reset offsets") + \
                '<p class="note">Or reset with <code>rocketgate offsets reset GROUP TOPIC --to ...</code>.</p>'
        return console.html(f"Group {name}", "/groups", body)

    return [Route("/groups", groups), Route("/groups/{name:path}", group, methods=["GET", "POST"])]
