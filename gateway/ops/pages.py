"""The console: server-rendered pages under the HTTP port, one module per page family (topics,
groups, messages, operations queues, cluster and security). Read-only for everyone; an admin signed
in (gateway.ops.actions: `--authorizer acl`, HTTP Basic, a super user) also gets the POST forms,
each with a CSRF token. Every query parameter is read through `Console.int_param`, so bad input is a
400 page, never an exception."""
from __future__ import annotations

from starlette.responses import HTMLResponse, RedirectResponse
from starlette.routing import Route

import gateway.ops.actions as actions
import gateway.ops.page_cluster as page_cluster
import gateway.ops.page_groups as page_groups
import gateway.ops.page_messages as page_messages
import gateway.ops.page_queues as page_queues
import gateway.ops.page_topics as page_topics
from gateway.ops.console import Console, guarded
from gateway.ops.history import History
from gateway.ops.html import cards, chart_lines, esc, page, rate, size, table


def routes(app, history: History) -> list[Route]:
    console = Console(app, history)
    found = [Route("/", overview(console)), Route("/login", login(console))]
    for module in (page_topics, page_groups, page_messages, page_queues, page_cluster):
        found += module.routes(console)
    return [Route(r.path, guarded(console, r.endpoint), methods=r.methods) for r in found]


def login(console: Console):
    app = console.app

    async def handle(request):
        user = console.admin(request)
        if user is not None:
            signed_in = RedirectResponse("/", status_code=303)
            signed_in.set_cookie(actions.SESSION_COOKIE, actions.session_cookie(user), max_age=actions.SESSION_S,
                                 httponly=True, samesite="strict")
            return signed_in
        reason = "" if app.security is not None else " (this gateway runs without --authorizer acl: no admins)"
        return HTMLResponse(page("Sign in", "/", f"<p>Admin credentials needed{esc(reason)}.</p>"), status_code=401,
                            headers={"WWW-Authenticate": 'Basic realm="rocketgate", charset="UTF-8"'})
    return handle


OVERVIEW_SERIES = ("rates:bytes_in", "rates:bytes_out", "rates:commitlog")


def overview(console: Console):
    app = console.app

    async def handle(request):
        cfg = app.config
        shards = await console.shards("topics", "disk", series=OVERVIEW_SERIES)
        sharded = len(shards.parts) > 1
        up = [part for _i, part in shards.up()]
        body = cards([("Ready", "yes" if all(p["ready"] for p in up) and len(up) == len(shards.parts) else "no"),
                      ("Topics", f"{len({n for p in up for n in p['topics']}):,}"),
                      ("Groups", f"{len(app.offsets.groups()):,}"),  # the one offset table: every shard's
                      ("CommitLog", size(sum(p["commitlog"] for p in up))),
                      ("On disk", size(sum(row["size"] for row in shards.disk()))),
                      ("Produce", rate(_total(p["bytes_in"] for p in up))),
                      ("Consume", rate(_total(p["bytes_out"] for p in up))),
                      ("Connections", sum(p["connections"] for p in up))])
        if sharded:
            rows = shards.shard_rows()
            for row in rows:
                row["commitlog"] = size(row["commitlog"]) if "commitlog" in row else ""
                row["produce"], row["consume"] = rate(row.get("bytes_in")), rate(row.get("bytes_out"))
            body += "<h2>Shards</h2>" + table(rows, ["shard", "node", "up", "ready", "topics", "commitlog", "produce",
                                                     "consume", "connections"], numeric=("shard", "node", "topics"))
        listeners = [{"listener": "kafka", "address": f"{cfg.host}:{cfg.kafka_port}",
                      "connections": app.stats.connections["kafka"]},
                     {"listener": "remoting", "address": f"{cfg.host}:{cfg.remoting_port}",
                      "connections": app.stats.connections["remoting"]}]
        if getattr(cfg, "grpc_port", None) is not None:
            listeners.append({"listener": "grpc", "address": f"{cfg.host}:{cfg.grpc_port}",
                              "connections": app.stats.connections["grpc"]})
        listeners.append({"listener": "http", "address": f"{cfg.host}:{cfg.http_port}", "connections": ""})
        user = console.admin(request)
        body += f"<p>Signed in as admin {esc(user)}.</p>" if user else console.admin_note(request, "make changes")
        body += "<h2>Listeners</h2>" + table(listeners, ["listener", "address", "connections"])
        disk = [{**row, "size": size(row["size"])} for row in shards.disk()]
        body += "<h2>Disk</h2>" + table(disk, [*(["shard"] if sharded else []), "directory", "size"],
                                        numeric=("shard", "size"))
        body += '<h2>Throughput</h2><div class="charts">' + "".join(
            chart_lines(shards.lines(name), label, rate) for name, label in
            zip(OVERVIEW_SERIES, ("Produced", "Consumed", "CommitLog writes"))) + "</div>"
        return console.html("Overview", "/", body)
    return handle


def _total(rates) -> float | None:
    """The sum of the shards' rates; None (shown as no figure) when no shard has one yet."""
    known = [r for r in rates if r is not None]
    return sum(known) if known else None
