"""The console and JSON API of every shard on shard 0's HTTP port (`--shards N`, docs/shards.md). Each
shard answers /api/shard with what it alone knows: the queues it leads with their offsets, the lag of
its groups on those queues, its groups' kinds, state and members, its totals and current rates, and
on request its disk usage, dead letters, delay queues, undecided transactions and history series
(RocketMQ's local topics: each shard has its own). Shard
0 asks the other shards (their HTTP ports: --shard-metrics, the peers /metrics scrapes) and merges
their answers with its own, so each queue is counted once, on the shard that leads it (RocketMQ's
local topics, %RETRY%/%DLQ%/schedule, exist on every shard: each shard counts its own). A shard that
does not answer is shown as down; its queues are missing until it answers again."""
from __future__ import annotations

import dataclasses
from urllib.parse import urlencode

import gateway.ops.group_views as group_views
import gateway.ops.inspect as inspect
from gateway.ops.shard_metrics import ask_each


def leads(app, topic: str, queue_id: int) -> bool:
    """Whether this gateway's store holds the queue's data: it leads it, or it is a local topic (one
    process: every queue). Unlike `ownership.owns`, true while fenced (the data is still here)."""
    view = getattr(app.ownership, "view", None)
    if view is None:
        return True
    a = view.queues.get((topic, queue_id))
    return topic not in view.topics if a is None else a.leader == app.ownership.node_id


KAFKA_KINDS = ("classic", "consumer", "streams", "share")
PARTS = ("topics", "groups")  # what a page asks for: a topics page does not walk 10 000 groups
KNOWN = (*PARTS, "disk", "dlq", "delay", "transactions")
TRANSACTION_ROWS = 500  # undecided transactions listed per shard (the count is of all)


async def local(app, history, parts=PARTS, series: tuple[str, ...] = ()) -> dict:
    """This shard's part (the /api/shard answer), plain JSON data read on the event loop: its totals
    and, of `parts`, its topics (with their queues), its groups (with their lag), its disk usage, dead
    letters, delay queues and undecided transactions; and each of `series` from its history ring
    ("rates:NAME" per second, "points:NAME" as sampled: `series_points`)."""
    st, stats, ring = app.store, app.stats, history.ring
    found = {"node": app.ownership.node_id, "ready": app.stats.ready(), "commitlog": st.max_physical_offset,
             "connections": sum(stats.connections.values()), "bytes_in": ring.latest_rate("bytes_in"),
             "bytes_out": ring.latest_rate("bytes_out"), "topics": {}, "lag": {}, "groups": {},
             "series": {name: series_points(ring, name) for name in series}}
    if "topics" in parts:
        found["topics"] = _topics(app, ring)
    if "groups" in parts:
        found["lag"], found["groups"] = _groups(app)
    if "disk" in parts:
        found["disk"] = await history.disk_usage()
    if "dlq" in parts:
        found["dlq"] = inspect.dead_letters(app)
    if "delay" in parts:
        found["delay"] = {"levels": inspect.delay_queues(app), "waiting": inspect.delay_waiting(app)}
    if "transactions" in parts:
        undecided = inspect.undecided_transactions(app)
        found["transactions"] = {"stored": inspect.half_messages_stored(app), "undecided": len(undecided),
                                 "rows": undecided[:TRANSACTION_ROWS]}
    return found


def series_points(ring, name: str) -> list[tuple[float, float]]:
    """"rates:NAME": the per-second rates of counter NAME; "points:NAME": its samples."""
    kind, _, counter = name.partition(":")
    return ring.rates(counter) if kind == "rates" else ring.points(counter) if kind == "points" else []


def _topics(app, ring) -> dict:
    st, topics = app.store, {}
    for row in inspect.topics(app):
        name = row["topic"]
        queues = {str(q): [lo, hi] for q, (lo, hi) in inspect.queue_range(st, name).items() if leads(app, name, q)}
        topics[name] = {**row, "messages": sum(hi - lo for lo, hi in queues.values()), "queues": queues,
                        "msg_in": ring.latest_rate(f"in:{name}"), "bytes_in": ring.latest_rate(f"bytes_in:{name}"),
                        "bytes_out": ring.latest_rate(f"bytes_out:{name}")}
    return topics


def _groups(app) -> tuple[dict, dict]:
    lag: dict[str, list] = {}
    for group, rows in inspect.all_lag(app).items():
        lag[group] = [r for r in rows if leads(app, r["topic"], r["queue"])]
    groups = {}
    for name, kinds in group_views.kinds(app).items():
        members = group_views.members_of(app, name)
        groups[name] = {"kinds": kinds, "state": group_views.state_of(app, name), "members": members}
    for name in lag:
        groups.setdefault(name, {"kinds": ["offsets only"], "state": "Empty", "members": []})
    return lag, groups


def parts_param(raw: str | None) -> tuple[str, ...]:
    """/api/shard?parts=topics,groups,... (default topics and groups); unknown names are ignored."""
    return PARTS if raw is None else tuple(p for p in raw.split(",") if p in KNOWN)


async def ask(peers: tuple[str, ...], parts=PARTS, series: tuple[str, ...] = ()) -> list[dict | None]:
    """Each peer's /api/shard (index i: shard i + 1), None for one that did not answer in time."""
    query = urlencode([("parts", ",".join(parts)), *(("series", name) for name in series)])
    return await ask_each(peers, f"/api/shard?{query}", lambda answer: answer.json())


@dataclasses.dataclass
class Shards:
    """Every shard's part, index = shard (one process: just its own); None for a shard that is down."""
    parts: list[dict | None]

    def up(self) -> list[tuple[int, dict]]:
        return [(i, p) for i, p in enumerate(self.parts) if p is not None]

    def topics(self) -> list[dict]:
        """inspect.topics rows over every shard: messages summed, rates summed, queues tagged with their shard."""
        merged: dict[str, dict] = {}
        for shard, part in self.up():
            for name, row in part["topics"].items():
                into = merged.setdefault(name, {**row, "messages": 0, "queues": [],
                                                "msg_in": None, "bytes_in": None, "bytes_out": None})
                into["messages"] += row["messages"]
                into["queues"] += [{"shard": shard, "queue": int(q), "first": lo, "end": hi, "messages": hi - lo}
                                   for q, (lo, hi) in row["queues"].items()]
                for rate in ("msg_in", "bytes_in", "bytes_out"):
                    into[rate] = _add(into[rate], row[rate])
        for row in merged.values():
            row["queues"].sort(key=lambda r: (r["queue"], r["shard"]))
        return [merged[n] for n in sorted(merged)]

    def topic(self, name: str) -> dict | None:
        return next((row for row in self.topics() if row["topic"] == name), None)

    def lag(self, group: str) -> list[dict]:
        """The group's lag rows of every shard (each on the queues it leads), with their shard."""
        rows = [{**r, "shard": shard} for shard, part in self.up() for r in part["lag"].get(group, [])]
        return sorted(rows, key=lambda r: (r["topic"], r["queue"], r["shard"]))

    def group(self, name: str) -> dict | None:
        """kinds, state and members of a group over every shard (a RocketMQ client heartbeats to each
        shard: it is one member), None when no shard knows it."""
        found = [part["groups"][name] for _shard, part in self.up() if name in part["groups"]]
        if not found:
            return None
        kinds, members, seen = [], [], set()
        for g in found:
            kinds += [k for k in g["kinds"] if k not in kinds]
            for m in g["members"]:
                if (m["kind"], m["member"]) not in seen:
                    seen.add((m["kind"], m["member"]))
                    members.append(m)
        if len(kinds) > 1 and "offsets only" in kinds:
            kinds.remove("offsets only")
        live = [g["state"] for g in found if g["state"] not in ("Empty", "Offline")]
        return {"kinds": kinds, "state": live[0] if live else found[0]["state"], "members": members}

    def groups(self) -> list[dict]:
        """group_views.listing rows over every shard."""
        names = sorted({n for _shard, part in self.up() for n in part["groups"]})
        out = []
        for name in names:
            g, rows = self.group(name), self.lag(name)
            members = g["members"]
            out.append({"group": name, "kinds": ", ".join(g["kinds"]), "state": g["state"], "members": len(members),
                        "lag": sum(r["lag"] for r in rows), "topics": sorted({r["topic"] for r in rows}),
                        "kafka_members": sum(1 for m in members if m["kind"] in KAFKA_KINDS),
                        "rocketmq_clients": sum(1 for m in members if m["kind"].startswith("rocketmq"))})
        return out

    def lines(self, name: str) -> list[tuple[str, list]]:
        """History series `name` ("rates:..." or "points:...") of each shard, labelled by shard (one
        process: one unlabelled line)."""
        if len(self.parts) == 1:
            return [("", self.parts[0]["series"].get(name, []))]
        return [(f"shard {shard}", [tuple(p) for p in part["series"].get(name, [])]) for shard, part in self.up()]

    def rows(self, part: str, key: str | None = None) -> list[dict]:
        """The rows of `part` (its `key` when given) of every shard, each with its shard."""
        return [{**row, "shard": shard} for shard, found in self.up()
                for row in (found[part][key] if key else found[part])]

    def disk(self) -> list[dict]:
        """Bytes per store directory of every shard."""
        return [{"shard": shard, "directory": d, "size": n} for shard, part in self.up()
                for d, n in sorted(part["disk"].items())]

    def dead_letters(self) -> list[dict]:
        """Dead letters per group and shard (each shard keeps its own %DLQ% topics)."""
        return sorted(({"group": g, "shard": shard, "messages": n} for shard, part in self.up()
                       for g, n in part["dlq"].items()), key=lambda r: (r["group"], r["shard"]))

    def shard_rows(self) -> list[dict]:
        """One row per shard for the overview: up, ready, CommitLog, connections, rates."""
        rows = []
        for shard, part in enumerate(self.parts):
            if part is None:
                rows.append({"shard": shard, "node": "", "up": "no"})
                continue
            rows.append({"shard": shard, "node": part["node"], "up": "yes", "ready": "yes" if part["ready"] else "no",
                         "topics": sum(1 for t in part["topics"].values() if t["queues"]),
                         "commitlog": part["commitlog"], "connections": part["connections"],
                         "bytes_in": part["bytes_in"], "bytes_out": part["bytes_out"]})
        return rows


def _add(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else a + b


async def gather(app, history, parts=PARTS, series: tuple[str, ...] = ()) -> Shards:
    """This shard's part and, on shard 0 of --shards, every other shard's."""
    own = await local(app, history, parts, series)
    peers = tuple(app.config.shard_metrics)
    return Shards([own, *(await ask(peers, parts, series) if peers else [])])
