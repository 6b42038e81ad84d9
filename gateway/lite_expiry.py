"""Lite topic expiry (RocketMQ 5.5's lite TTL): a lite topic of a parent with `lite.topic.expiration`
that has had no new message for that long (and at least --lite-min-ttl-ms) is deleted by 5.5: its
LMQ, every group's progress on it and the subscriptions of it. Its messages are not the lite
topic's any more (semantics.lite.live_offsets: reads already skip them); every
--lite-ttl-check-interval-ms this service forgets the rest: the pop-engine state of each group's
subscription `G#L` and L in every lite consumer's set, remoting and gRPC (as 5.5, without telling
the client; the SDKs send their whole set again now and then)."""
from __future__ import annotations

import logging

import trio

from gateway.lite_pop import ttl
from semantics import lite

log = logging.getLogger("rocketgate")


def _lite_parents(app):
    topics = app.store.topics
    for name in topics.names():
        cfg = topics.get(name)
        if cfg is not None and (cfg.attributes or {}).get("message.type") == "LITE":
            yield name, cfg


def _subscription_sets(app, parent: str) -> list[set]:
    """The lite topic sets of the consumers of `parent` (changed in place when one expires)."""
    sets = [c.names for c in app.pop_remoting.lite_clients.values() if c.topic == parent]
    groups = app.subscription_groups
    sets += [s.lite_topics for s in app.grpc.clients.values()
             if s.lite_topics and s.group and groups.get(s.group, "lite.bind.topic") == parent]
    return sets


def expire_once(app) -> int:
    """Forget the subscriptions and progress of every expired lite topic; how many lite topics."""
    forgotten = 0
    for parent, cfg in _lite_parents(app):
        live = ttl(app, parent)
        if live["expire_ms"] is None:
            continue
        states = {}  # lite topic -> the pop-engine groups of its subscriptions on this parent
        for group in app.pop.groups():
            name = group.partition(lite.GROUP_SEPARATOR)[2]
            if name and app.pop.state(group, parent, lite.queue_of(name, cfg.write_queues)) is not None:
                states.setdefault(name, set()).add(group)
        sets = _subscription_sets(app, parent)
        names = set(states).union(*sets) if sets else set(states)
        for name in names:
            qid = lite.queue_of(name, cfg.write_queues)
            if not lite.expired(app.store, parent, qid, name, live["expire_ms"], live["now_ms"]):
                continue
            forgotten += 1
            for group in states.get(name, ()):
                app.pop.drop(group, parent, qid)
                app.grpc.fifo_in_flight.pop((group, parent, qid), None)
            for names_of_client in sets:
                names_of_client.discard(name)
    if forgotten:
        log.info("lite topics expired: %d", forgotten)
    return forgotten


class LiteExpiry:
    """The App's background service that runs expire_once every --lite-ttl-check-interval-ms."""

    def __init__(self, app) -> None:
        self.app = app

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            await self.app.clock.sleep(self.app.config.lite_ttl_check_interval_ms / 1000)
            expire_once(self.app)
