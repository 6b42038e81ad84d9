"""Registered RocketMQ clients: producers and consumers per group (from HEART_BEAT), and the
orderly-consumer queue locks (LOCK_BATCH_MQ). Shared by every remoting connection."""
from __future__ import annotations

import dataclasses
import time

CLIENT_EXPIRY_S = 120.0   # a client silent this long is gone (ClientHousekeepingService)
LOCK_MAX_LIVE_S = 60.0    # rocketmq.broker.rebalance.lockMaxLiveTime


@dataclasses.dataclass
class ClientEntry:
    client_id: str
    channel: object            # the connection it last heartbeated on (has .address, .send_oneway)
    language: str = "JAVA"
    version: int = 0
    last_seen: float = 0.0


@dataclasses.dataclass
class ConsumerGroup:
    name: str
    consume_type: str = "CONSUME_PASSIVELY"
    message_model: str = "CLUSTERING"
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"
    subscriptions: dict[str, dict] = dataclasses.field(default_factory=dict)  # topic -> SubscriptionData
    clients: dict[str, ClientEntry] = dataclasses.field(default_factory=dict)


class ClientRegistry:
    def __init__(self, clock=time.monotonic) -> None:
        self.clock = clock
        self.consumers: dict[str, ConsumerGroup] = {}
        self.producers: dict[str, dict[str, ClientEntry]] = {}
        self.locks: dict[tuple[str, str, int], tuple[str, float]] = {}  # (group, topic, qid) -> (client, time)

    def heartbeat(self, data: dict, channel, language: str = "JAVA", version: int = 0) -> list[str]:
        """Record a HeartbeatData body; returns the consumer groups whose membership changed."""
        client_id = str(data.get("clientID") or "")
        now = self.clock()
        changed = []
        for cd in data.get("consumerDataSet") or []:
            name = cd.get("groupName")
            if not name:
                continue
            group = self.consumers.get(name)
            if group is None:
                group = self.consumers[name] = ConsumerGroup(name)
            group.consume_type = cd.get("consumeType") or group.consume_type
            group.message_model = cd.get("messageModel") or group.message_model
            group.consume_from_where = cd.get("consumeFromWhere") or group.consume_from_where
            for sub in cd.get("subscriptionDataSet") or []:
                if sub.get("topic"):
                    group.subscriptions[sub["topic"]] = sub
            if client_id not in group.clients:
                changed.append(name)
            group.clients[client_id] = ClientEntry(client_id, channel, language, version, now)
        for pd in data.get("producerDataSet") or []:
            name = pd.get("groupName")
            if name:
                self.producers.setdefault(name, {})[client_id] = ClientEntry(client_id, channel, language,
                                                                            version, now)
        return changed

    def unregister(self, client_id: str, producer_group: str | None, consumer_group: str | None) -> list[str]:
        changed = []
        if producer_group and producer_group in self.producers:
            self.producers[producer_group].pop(client_id, None)
        if consumer_group and consumer_group in self.consumers:
            if self.consumers[consumer_group].clients.pop(client_id, None) is not None:
                changed.append(consumer_group)
            self._release_locks(consumer_group, client_id)
        return changed

    def channel_closed(self, channel) -> list[str]:
        """Drop every registration made over a closed connection; returns changed consumer groups."""
        return self._drop(lambda e: e.channel is channel)

    def expire(self) -> list[str]:
        limit = self.clock() - CLIENT_EXPIRY_S
        return self._drop(lambda e: e.last_seen < limit)

    def _drop(self, pred) -> list[str]:
        changed = []
        for group in self.consumers.values():
            gone = [cid for cid, e in group.clients.items() if pred(e)]
            for cid in gone:
                del group.clients[cid]
                self._release_locks(group.name, cid)
            if gone:
                changed.append(group.name)
        for members in self.producers.values():
            for cid in [cid for cid, e in members.items() if pred(e)]:
                del members[cid]
        return changed

    def consumer_ids(self, group: str) -> list[str]:
        g = self.consumers.get(group)
        return sorted(g.clients) if g else []

    def live_consumers(self, group: str) -> list:
        """The registered consumers of `group` whose connection is still open (ClientEntry objects)."""
        g = self.consumers.get(group)
        return [e for e in g.clients.values() if not e.channel.closed] if g else []

    def subscription(self, group: str, topic: str) -> dict | None:
        g = self.consumers.get(group)
        return g.subscriptions.get(topic) if g else None

    def consumer_channel(self, group: str, client_id: str):
        """The connection a consumer last heartbeated on (None if it is not registered)."""
        g = self.consumers.get(group)
        entry = g.clients.get(client_id) if g else None
        return entry.channel if entry else None

    def producer_channels(self, group: str) -> list:
        return [e.channel for e in self.producers.get(group, {}).values()]

    def groups_of_topic(self, topic: str) -> list[str]:
        return sorted(name for name, g in self.consumers.items() if topic in g.subscriptions)

    # Orderly-consumer locks.
    def lock(self, group: str, client_id: str, mqs: list[tuple[str, int]]) -> list[tuple[str, int]]:
        now = self.clock()
        granted = []
        for topic, qid in mqs:
            key = (group, topic, qid)
            holder = self.locks.get(key)
            if holder is None or holder[0] == client_id or now - holder[1] > LOCK_MAX_LIVE_S:
                self.locks[key] = (client_id, now)
                granted.append((topic, qid))
        return granted

    def unlock(self, group: str, client_id: str, mqs: list[tuple[str, int]]) -> None:
        for topic, qid in mqs:
            key = (group, topic, qid)
            if self.locks.get(key, ("",))[0] == client_id:
                del self.locks[key]

    def _release_locks(self, group: str, client_id: str) -> None:
        for key in [k for k, v in self.locks.items() if k[0] == group and v[0] == client_id]:
            del self.locks[key]
