"""The cluster and its edges: the gateways (one, or the cluster's live members) and every partition
with its leader, replicas and ISR (what Metadata tells Kafka clients); the gRPC listener with its
clients and per-method requests; users, access keys and ACLs for a signed-in admin (secrets and
password hashes are never shown)."""
from __future__ import annotations

from starlette.routing import Route

import gateway.ops.actions as actions
from gateway.kafka.metadata import NODE_ID, partition_entries
from gateway.kafka.topics import partition_count
from gateway.ops.html import cards, esc, form, post_form, q, table

TOPICS_PER_PAGE = 100  # partitions are listed for this many topics per page


def routes(console) -> list[Route]:
    app = console.app

    async def cluster(request):
        node = app.ownership
        cfg = app.config
        if node.clustered:
            gateways = [{"node": m.node_id, "host": m.host, "kafka": m.kafka_port, "remoting": m.remoting_port,
                         "grpc": m.grpc_port or "", "this": "yes" if m.node_id == node.node_id else ""}
                        for _id, m in sorted(node.live().items())]
        else:
            gateways = [{"node": NODE_ID, "host": cfg.advertised, "kafka": cfg.kafka_port,
                         "remoting": cfg.remoting_port, "grpc": cfg.grpc_port or "", "this": "yes"}]
        body = "<h2>Gateways</h2>" + table(gateways, ["node", "host", "kafka", "remoting", "grpc", "this"],
                                           numeric=("node", "kafka", "remoting", "grpc"))
        if not node.clustered:
            body += '<p class="note">A single gateway: every partition is led here (docs/cluster.md for more).</p>'
        match = request.query_params.get("topic", "")
        body += "<h2>Partitions</h2>" + form("/cluster", [("topic", "topics containing", match)], "Filter")
        names = [{"topic": n} for n in sorted(app.store.topics.names()) if match in n]
        shown, nav = console.paged(request, names, "/cluster")
        merged = {t["topic"]: t for t in (await console.shards("topics")).topics()}
        rows = []
        for entry in shown:
            name = entry["topic"]
            topic_cfg = app.store.topics.get(name)
            if topic_cfg is None:
                continue
            ranges = {r["queue"]: (r["first"], r["end"]) for r in merged.get(name, {}).get("queues", ())}
            for p in partition_entries(app, name, partition_count(topic_cfg)):
                lo, hi = ranges.get(p["partition_index"], (0, 0))
                rows.append({"topic": name, "partition": p["partition_index"], "leader": p["leader_id"],
                             "epoch": p["leader_epoch"], "replicas": p["replica_nodes"], "isr": p["isr_nodes"],
                             "offline": p["offline_replicas"], "first": lo, "end": hi})
        body += nav + table(rows, ["topic", "partition", "leader", "epoch", "replicas", "isr", "offline", "first",
                                   "end"], links={"topic": lambda r: f"/topics/{q(r['topic'])}"},
                            numeric=("partition", "leader", "epoch", "first", "end"))
        return console.html("Cluster", "/cluster", body)

    async def grpc(request):
        cfg = app.config
        if cfg.grpc_port is None:
            return console.html("gRPC", "/grpc", '<p class="note">The gRPC listener is off: start the gateway with '
                                '<code>--grpc-port 8181</code> (make run ARGS="--grpc-port 8181") for RocketMQ 5 SDK clients.</p>')
        stats = app.stats
        body = cards([("Address", f"{cfg.host}:{cfg.grpc_port}"), ("Connections", stats.connections["grpc"]),
                      ("Accepted", stats.connections_accepted["grpc"]), ("Clients", len(app.grpc.clients))])
        clients = [_client_row(s) for s in sorted(app.grpc.clients.values(), key=lambda s: s.client_id)]
        body += "<h2>Clients</h2>" + table(clients[:1000], ["client", "type", "group", "topics", "telemetry"])
        methods = []
        for (protocol, name), hist in sorted(stats.requests.latency.items()):
            if protocol == "grpc":
                methods.append({"method": name, "requests": hist.count,
                                "errors": stats.requests.errors.get((protocol, name), 0),
                                "mean_ms": f"{hist.total / hist.count * 1000:.2f}" if hist.count else ""})
        body += "<h2>Requests</h2>" + table(methods, ["method", "requests", "errors", "mean_ms"],
                                            numeric=("requests", "errors", "mean_ms"))
        return console.html("gRPC", "/grpc", body)

    async def security(request):
        sec = app.security
        if sec is None:
            return console.html("Security", "/security", '<p class="note">This gateway runs without '
                                '<code>--authorizer acl</code>: no users, access keys or ACLs are checked '
                                '(docs/security.md).</p>')
        if console.admin(request) is None:
            return console.html("Security", "/security", console.admin_note(request, "see users, access keys and ACLs"))
        sec.refresh()  # what `python -m security` changed in the files (at most a second old)
        creds = sec.credentials
        users = [{"user": u, "principal": f"User:{u}", "scram": [f"{m} ({n} iterations)" for m, n in creds.describe(u)]}
                 for u in creds.users()]
        keys = [{"access_key": k, "user": found.user} for k in creds.access_keys()
                if (found := creds.access_key(k)) is not None]
        acls = [{"principal": b.principal, "host": b.host, "operation": b.operation.name,
                 "permission": b.permission.name, "resource": b.resource_type.name, "name": b.name,
                 "pattern": b.pattern_type.name} for b in sec.authorizer.bindings()]
        body = "<h2>Users</h2>" + table(users, ["user", "principal", "scram"])
        body += "<h2>Access keys</h2>" + table(keys, ["access_key", "user"])
        body += "<h2>ACLs</h2>" + table(acls, ["principal", "host", "operation", "permission", "resource", "name",
                                               "pattern"])
        token = actions.csrf_token(console.admin(request))
        body += "<h2>Create a user, or change a password (SCRAM-SHA-256 and -512)</h2>" + post_form(
            "/security/users", [("name", "user", ""), ("password", "password", "", "password")], "Set user", token)
        body += "<h2>Create an access key, or change its secret (RocketMQ ACL)</h2>" + post_form(
            "/security/access-keys", [("key", "access key", ""), ("user", "user (default: the key)", ""),
                                      ("secret", "secret key (blank: generated, shown once)", "", "password")],
            "Set access key", token)
        body += "<h2>Delete an access key</h2>" + post_form(
            "/security/access-keys/delete", [("key", "access key", "")], "Delete access key", token)
        body += "<h2>Add or remove an ACL</h2>" + post_form("/security/acls", [
            ("change", "add or remove", "add"), ("principal", "principal", "User:"),
            ("resource", "topic, group, transactional-id or cluster", "topic"), ("name", "name", ""),
            ("operation", "operation", "READ"), ("permission", "ALLOW or DENY", "ALLOW")], "Change ACL", token)
        body += '<p class="note">The same changes as <code>python -m security</code> (which also manages ' \
                'RocketMQ grants) or Kafka\'s admin API ' \
                f'({esc("kafka-acls.sh, kafka-configs.sh")}).</p>'
        return console.html("Security", "/security", body)

    async def set_user(request):
        async def do(f):
            return actions.security_change(app, ["user", "set", f.get("name", ""), "--password", f.get("password", "")])
        return await console.change(request, "Security", "/security", do)

    async def change_acl(request):
        async def do(f):
            return actions.security_change(app, actions.acl_argv(f))
        return await console.change(request, "Security", "/security", do)

    async def set_access_key(request):
        async def do(f):
            return actions.set_access_key(app, f)
        return await console.change(request, "Security", "/security", do)

    async def delete_access_key(request):
        async def do(f):
            return actions.security_change(app, ["access-key", "delete", "--", f.get("key", "")])
        return await console.change(request, "Security", "/security", do)

    return [Route("/cluster", cluster), Route("/grpc", grpc), Route("/security", security),
            Route("/security/users", set_user, methods=["POST"]), Route("/security/acls", change_acl, methods=["POST"]),
            Route("/security/access-keys", set_access_key, methods=["POST"]),
            Route("/security/access-keys/delete", delete_access_key, methods=["POST"])]


def _client_row(session) -> dict:
    settings = session.settings
    kind, topics = "", ""
    if settings is not None:
        from gateway.grpc.common import d  # the gRPC extra: there whenever a client has sent settings
        kind = d.ClientType.Name(settings.client_type).lower()
        names = set(session.publishing_topics)
        if settings.HasField("subscription"):
            names |= {e.topic.name for e in settings.subscription.subscriptions}
        topics = ", ".join(sorted(names))
    return {"client": session.client_id, "type": kind, "group": session.group, "topics": topics,
            "telemetry": "open" if session.commands is not None else ""}
