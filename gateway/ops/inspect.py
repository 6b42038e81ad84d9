"""What the App holds, read on the event loop as plain data: the one source of the scrape-time
gauges (`gateway.ops.collector`) and of the JSON API (`gateway.ops.http`). Nothing here writes."""
from __future__ import annotations

import os

from semantics.routing import HALF_TOPIC, SCHEDULE_TOPIC

RETRY_PREFIX = "%RETRY%"
DLQ_PREFIX = "%DLQ%"


def queue_range(store, topic: str) -> dict[int, tuple[int, int]]:
    """{queue id: (min offset, max offset)} of a topic's stored queues."""
    return {q: (store.min_offset(topic, q), store.max_offset(topic, q)) for q in store.queues(topic)}


def _lag_row(st, group: str, topic: str, qid: int, committed: int) -> dict:
    end = st.max_offset(topic, qid)
    return {"group": group, "topic": topic, "queue": qid, "committed": committed, "end": end,
            "lag": max(0, end - committed)}


def group_lag(app, group: str) -> list[dict]:
    """One row per (topic, queue) the group has committed: committed offset, end offset and lag."""
    st = app.store
    return [_lag_row(st, group, topic, qid, committed)
            for (topic, qid), committed in sorted(app.offsets.group_offsets(group).items())]


def all_lag(app) -> dict[str, list[dict]]:
    """group_lag of every group with committed offsets, in one pass over the offset table."""
    st, out = app.store, {}
    for group, topic, qid, committed in app.offsets.entries():
        out.setdefault(group, []).append(_lag_row(st, group, topic, qid, committed))
    return out


def groups(app) -> list[dict]:
    """Every group (committed offsets in the one table, or live members of either protocol) with its
    total lag and live members."""
    kafka_groups = app.kafka.coordinator.groups
    rocketmq_groups = app.rocketmq_clients.consumers
    lag = all_lag(app)
    out = []
    for group in sorted({*lag, *kafka_groups, *rocketmq_groups}):
        rows = lag.get(group, [])
        kafka = kafka_groups.get(group)
        rocketmq = rocketmq_groups.get(group)
        out.append({"group": group, "topics": sorted({r["topic"] for r in rows}),
                    "lag": sum(r["lag"] for r in rows),
                    "kafka_members": len(kafka.members) if kafka is not None else 0,
                    "rocketmq_clients": len(rocketmq.clients) if rocketmq is not None else 0})
    return out


def delay_queues(app) -> list[dict]:
    """Per delay level (and the timer queue for exact deliver times): messages waiting and the
    deliver time (epoch ms) of the earliest, None when the level is drained. Read from the
    scheduler's own delivery state, so a delivered message is never shown as pending."""
    last = app.delay_levels.queue_count - 1
    return [{"level": str(q + 1) if q < last else "timer", "depth": depth, "next_due_ms": due}
            for q, depth, due in app.delay.pending()]


def delay_waiting(app, per_queue: int = 20) -> list[dict]:
    """The next messages waiting in each schedule queue, from its delivery cursor (what an admin may
    deliver now); recalled ones are left out."""
    st, delay, last, rows = app.store, app.delay, app.delay_levels.queue_count - 1, []
    for q in range(last + 1):
        cursor = delay.cursor[q]
        for i, (phys, _size, due) in enumerate(st.units(SCHEDULE_TOPIC, q, cursor, per_queue)):
            entry = st.get(phys)
            if entry is None or entry.queue_offset != cursor + i:
                continue  # unreadable, or a later unit of an inner batch
            topic, uniq = entry.properties.get("REAL_TOPIC", ""), entry.properties.get("UNIQ_KEY", "")
            if (topic, uniq) not in delay.recalled:
                rows.append({"level": str(q + 1) if q < last else "timer", "msg_id": entry.msg_id, "topic": topic,
                             "uniq_key": uniq, "due_ms": due})
    return rows


def pending_transactions(app) -> int:
    """Half messages with no outcome yet (each is checked back until decided or discarded)."""
    return sum(1 for _ in app.transactions.undecided_halves())


def undecided_transactions(app) -> list[dict]:
    """Every half message still undecided: offset, real topic, producer group, msgId, store time
    (epoch ms) and how often its producer was asked."""
    rows = []
    for off, h in app.transactions.undecided_halves():
        rows.append({"half_offset": off, "topic": h.properties.get("REAL_TOPIC", ""),
                     "producer_group": h.properties.get("PGROUP", ""), "msg_id": h.properties.get("UNIQ_KEY", ""),
                     "stored_ms": h.store_timestamp, "checks": app.transactions.check_times.get(off, 0)})
    return rows


def half_messages_stored(app) -> int:
    st = app.store
    return st.max_offset(HALF_TOPIC, 0) - st.min_offset(HALF_TOPIC, 0)


def dead_letters(app) -> dict[str, int]:
    """{group: messages in %DLQ%<group>}."""
    st = app.store
    return {name[len(DLQ_PREFIX):]: sum(hi - lo for lo, hi in queue_range(st, name).values())
            for name in st.topics.names() if name.startswith(DLQ_PREFIX)}


def retry_depth(app) -> dict[str, int]:
    """{group: messages in %RETRY%<group> the group has not consumed yet}."""
    st, offsets = app.store, app.offsets
    out = {}
    for name in st.topics.names():
        if name.startswith(RETRY_PREFIX):
            group = name[len(RETRY_PREFIX):]
            depth = 0
            for q, (lo, hi) in queue_range(st, name).items():
                committed = offsets.fetch(group, name, q)
                depth += hi - max(lo, committed if committed is not None else lo)
            out[group] = max(0, depth)
    return out


def disk_usage(app) -> dict[str, int]:
    """Bytes on disk per store directory (commitlog, consumequeue, index, config)."""
    out = {}
    for entry in os.scandir(app.store.path):
        if entry.is_dir(follow_symlinks=False):
            out[entry.name] = _du(entry.path)
    return out


def _du(path: str) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                pass  # deleted meanwhile (retention)
    return total


def commitlog_files(app) -> int:
    return sum(1 for e in os.scandir(os.path.join(app.store.path, "commitlog")) if e.is_file())


def topics(app) -> list[dict]:
    """Every topic with its queue count, message count and whether it is a filtered view."""
    st = app.store
    out = []
    for name in sorted(st.topics.names()):
        cfg = st.topics.get(name)
        if cfg is None:
            continue
        ranges = queue_range(st, name)
        out.append({"topic": name, "read_queues": cfg.read_queues, "write_queues": cfg.write_queues,
                    "perm": cfg.perm, "messages": sum(hi - lo for lo, hi in ranges.values()),
                    "view": app.views.is_view(name), "attributes": dict(cfg.attributes)})
    return out


def dead_letter_page(app, group: str, start: int = 0, limit: int = 100) -> dict:
    """Dead letters of a group from queue offset `start` (at most `limit`): each with its offsetMsgId
    (what RESEND_DLQ_MESSAGE takes), original topic, keys and store time; `next` pages on."""
    st, topic = app.store, DLQ_PREFIX + group
    if st.topics.get(topic) is None:
        return {"group": group, "messages": [], "next": 0, "end": 0}
    rows, nxt = [], max(start, st.min_offset(topic, 0))
    end = st.max_offset(topic, 0)
    while nxt < end and len(rows) < limit:
        res = st.read(topic, 0, nxt, min(32, limit - len(rows)))
        for qoff, msg in res.entries:
            props = msg.properties
            rows.append({"offset": qoff, "msg_id": msg.msg_id, "uniq_key": props.get("UNIQ_KEY", ""),
                         "topic": props.get("RETRY_TOPIC", ""), "keys": props.get("KEYS", ""),
                         "tags": props.get("TAGS", ""), "stored_ms": msg.store_timestamp,
                         "reconsume_times": msg.reconsume_times})
        if res.next_offset <= nxt:
            break
        nxt = res.next_offset
    return {"group": group, "messages": rows, "next": nxt, "end": end}


def schema_subjects(app) -> list[dict]:
    """The registry's live subjects: versions, the latest version's id, type and the compatibility
    level (empty without --schema-registry-port)."""
    registry = app.schema_registry
    if registry is None:
        return []
    state = registry.fresh()
    rows = []
    for subject in state.subject_names():
        versions = state.versions(subject)
        latest = versions[-1]
        rows.append({"subject": subject, "versions": ",".join(str(v.version) for v in versions),
                     "latest_version": latest.version, "latest_id": latest.id,
                     "type": latest.schema.schema_type, "compatibility": state.compatibility(subject)})
    return rows


def validated_topics(app) -> list[dict]:
    """Topics whose records are validated against the registry, with their refusal counts."""
    return app.schema_validation.topics(app.store)


def schemas(app) -> dict:
    return {"registry": app.schema_registry is not None, "subjects": schema_subjects(app),
            "topics": validated_topics(app)}

