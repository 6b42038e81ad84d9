"""Consumer groups of every kind, as the console shows them: Kafka classic (JoinGroup), consumer
(KIP-848), streams (KIP-1071) and share (KIP-932) groups, RocketMQ push/pull consumers (remoting
heartbeats), POP consumers (per-message state), and gRPC clients' groups, all under one name
space: the same group name of two kinds is one row with both kinds. Read on the event loop."""
from __future__ import annotations

import struct

import gateway.ops.inspect as inspect

ROCKETMQ_KINDS = {"CONSUME_PASSIVELY": "rocketmq push", "CONSUME_ACTIVELY": "rocketmq pull",
                  "CONSUME_POP": "rocketmq pop"}


def kinds(app) -> dict[str, list[str]]:
    """{group: its kinds}, for every group known to any coordinator or with committed offsets."""
    k = app.kafka
    found: dict[str, list[str]] = {}

    def add(names, kind: str) -> None:
        for name in names:
            found.setdefault(name, []).append(kind)

    add(k.coordinator.groups, "classic")
    add(k.consumer_groups.groups, "consumer")
    add(k.streams_groups.groups, "streams")
    add(k.share_groups.groups, "share")
    for name, g in app.rocketmq_clients.consumers.items():
        add([name], ROCKETMQ_KINDS.get(g.consume_type, "rocketmq " + g.consume_type.lower()))
    for session in app.grpc.clients.values():
        if session.group and session.settings is not None and not session.is_producer:
            kind = "grpc " + _client_type(session)
            if kind not in found.get(session.group, []):
                add([session.group], kind)
    add(app.pop.groups() - set(found), "pop (no live consumer)")
    add([g for g in app.offsets.groups() if g not in found], "offsets only")
    return found


def listing(app) -> list[dict]:
    """inspect.groups rows with each group's kinds, state and member count across kinds."""
    every = kinds(app)
    rows = {r["group"]: r for r in inspect.groups(app)}
    out = []
    for name in sorted(every):
        row = rows.get(name) or {"group": name, "topics": [], "lag": 0}
        members = members_of(app, name)
        out.append({"group": name, "kinds": ", ".join(every[name]), "state": state_of(app, name),
                    "members": len(members), "lag": row["lag"], "topics": row["topics"]})
    return out


def state_of(app, name: str) -> str:
    k = app.kafka
    for groups in (k.consumer_groups.groups, k.streams_groups.groups, k.share_groups.groups):
        g = groups.get(name)
        if g is not None:
            return g.state()
    classic = k.coordinator.groups.get(name)
    if classic is not None:
        return str(classic.state)
    rocketmq = app.rocketmq_clients.consumers.get(name)
    if rocketmq is not None and rocketmq.clients:
        return "Online"
    if any(s.group == name and not s.is_producer for s in app.grpc.clients.values() if s.settings is not None):
        return "Online"
    return "Offline" if rocketmq is not None else "Empty"


def members_of(app, name: str) -> list[dict]:
    """Every live member of the group, of every kind: id, client, host and what it is assigned."""
    k, out = app.kafka, []
    classic = k.coordinator.groups.get(name)
    for m in (classic.members.values() if classic else ()):
        out.append({"kind": "classic", "member": m.member_id, "client": m.client_id, "host": m.client_host,
                    "assignment": _text(classic_assignment(m.assignment))})
    for kind, groups in (("consumer", k.consumer_groups.groups), ("streams", k.streams_groups.groups),
                         ("share", k.share_groups.groups)):
        g = groups.get(name)
        for m in (g.members.values() if g else ()):
            given = getattr(m, "assigned", None) or g.target.get(m.member_id, {})
            prefix = "tasks " if kind == "streams" else ""
            out.append({"kind": kind, "member": m.member_id, "client": m.client_id, "host": m.client_host,
                        "assignment": prefix + _text(given)})
    rocketmq = app.rocketmq_clients.consumers.get(name)
    if rocketmq is not None:
        subs = "; ".join(f"{t}: {s.get('subString') or '*'}" for t, s in sorted(rocketmq.subscriptions.items()))
        kind = ROCKETMQ_KINDS.get(rocketmq.consume_type, "rocketmq")
        locked = {}
        for (group, topic, qid), (client, _at) in app.rocketmq_clients.locks.items():
            if group == name:
                locked.setdefault(client, {}).setdefault(topic, set()).add(qid)
        for c in rocketmq.clients.values():
            address = getattr(c.channel, "address", None)
            host = f"{address[0]}:{address[1]}" if isinstance(address, tuple) and len(address) >= 2 else ""
            assigned = f"locked {_text(locked[c.client_id])}; " if c.client_id in locked else ""
            out.append({"kind": kind, "member": c.client_id, "client": f"{c.language} v{c.version}", "host": host,
                        "assignment": assigned + f"subscribes {subs} (queues balanced by the client)"})
    for session in app.grpc.clients.values():
        if session.group == name and session.settings is not None and not session.is_producer:
            sub = session.settings.subscription
            topics = "; ".join(f"{e.topic.name}: {e.expression.expression or '*'}" for e in sub.subscriptions)
            out.append({"kind": "grpc " + _client_type(session), "member": session.client_id, "client": "gRPC",
                        "host": "", "assignment": f"subscribes {topics}"})
    return out


def pop_progress(app, name: str) -> list[dict]:
    """Per queue a POP or share group works on: its first unfinished offset, the next never handed
    out, messages in flight (leased, not settled) and the backlog to the queue's end."""
    pop, st, rows = app.pop, app.store, []
    now = app.clock.now_ms()
    for topic, qid in pop.queues(name):
        state = pop.state(name, topic, qid)
        if state is None:
            continue
        end = st.max_offset(topic, qid)
        rows.append({"topic": topic, "queue": qid, "start": state.start, "next": state.next, "end": end,
                     "in_flight": state.in_flight(now), "backlog": max(0, end - state.start)})
    return rows


def classic_assignment(data: bytes) -> dict:
    """{topic: partitions} of a classic consumer's ConsumerProtocol Assignment; {} when it is not one
    (another protocol type, or bytes we cannot read)."""
    try:
        pos = 2  # version
        (n,) = struct.unpack_from(">i", data, pos)
        pos += 4
        out = {}
        for _ in range(max(0, n)):
            (length,) = struct.unpack_from(">h", data, pos)
            topic = bytes(data[pos + 2:pos + 2 + length]).decode()
            pos += 2 + length
            (count,) = struct.unpack_from(">i", data, pos)
            out[topic] = list(struct.unpack_from(f">{max(0, count)}i", data, pos + 4))
            pos += 4 + 4 * max(0, count)
        return out
    except (struct.error, UnicodeDecodeError, ValueError):
        return {}


def _text(assignment: dict) -> str:
    """{topic: partitions} as 'topic: 0,1; other: 2'."""
    return "; ".join(f"{t}: {','.join(map(str, sorted(ps)))}" for t, ps in sorted(assignment.items(), key=str) if ps)


def _client_type(session) -> str:
    from gateway.grpc.common import d  # the gRPC extra's messages: only there when a gRPC client is
    return d.ClientType.Name(session.settings.client_type).lower().replace("_consumer", "")
