"""semantics.kafka_consumer_groups without a server: random joins, leaves and heartbeats of simulated
KIP-848 clients never leave one partition with two holders, and the group converges to a balanced
assignment of every partition."""
import random
import uuid

import pytest
import trio

from semantics.kafka_consumer_groups import ConsumerGroups

PARTITIONS = {"a": 7, "b": 3}


class Client:
    """Holds exactly what its last response assigned; reports it on every heartbeat."""

    def __init__(self, topics, assignor):
        self.member_id, self.epoch, self.held, self.topics = str(uuid.uuid4()), 0, {}, topics
        self.assignor = assignor

    def heartbeat(self, cg):
        req = {"group_id": "g", "member_id": self.member_id, "member_epoch": self.epoch, "instance_id": None,
               "rack_id": None, "rebalance_timeout_ms": 60000, "server_assignor": self.assignor,
               "subscribed_topic_names": self.topics if self.epoch == 0 else None,
               "topic_partitions": [] if self.epoch == 0 else [{"topic_id": t, "partitions": sorted(ps)}
                                                                for t, ps in self.held.items()],
               "owned_by_name": {t: sorted(ps) for t, ps in self.held.items()}}
        r = cg.heartbeat(req, 1, "c", "/h")
        assert r["error_code"] == 0, r
        self.epoch = r["member_epoch"]
        if r["assignment"] is not None:
            self.held = {t: set(ps) for t, ps in r["assignment"].items()}

    def leave(self, cg):
        cg.heartbeat({"group_id": "g", "member_id": self.member_id, "member_epoch": -1}, 1, "c", "/h")


def _check_exclusive(clients):
    held = [(t, p) for c in clients for t, ps in c.held.items() for p in ps]
    assert len(held) == len(set(held)), "a partition has two holders"


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_random_membership_changes_keep_partitions_exclusive(seed, assignor):
    rng = random.Random(seed)

    async def main():
        cg = ConsumerGroups(lambda t: PARTITIONS.get(t, 0))
        clients = []
        for _ in range(60):
            action = rng.random()
            if action < 0.25 or not clients:
                clients.append(Client(["a", "b"] if rng.random() < 0.7 else ["a"], assignor))
            elif action < 0.4:
                clients.pop(rng.randrange(len(clients))).leave(cg)
            for c in rng.sample(clients, len(clients)):
                if rng.random() < 0.7:
                    c.heartbeat(cg)
                    _check_exclusive(clients)
        for _ in range(6):  # quiet rounds: the group converges
            for c in clients:
                c.heartbeat(cg)
                _check_exclusive(clients)
        held = {(t, p) for c in clients for t, ps in c.held.items() for p in ps}
        subscribed = {t for c in clients for t in c.topics}
        assert held == {(t, p) for t in subscribed for p in range(PARTITIONS[t])}
        assert cg.groups["g"].state() == "Stable"
        if assignor == "uniform" and all(c.topics == ["a", "b"] for c in clients):
            counts = [sum(len(ps) for ps in c.held.values()) for c in clients]
            assert max(counts) - min(counts) <= 1

    trio.run(main)
