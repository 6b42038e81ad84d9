"""The Kafka broker list of a cluster member always holds the member itself, the broker its
FindCoordinator names when it sees no live member. Its live set is empty while its own lease lapsed
(a pause past the TTL, etcd out of reach: the watch's deletes arrive before it registers again).
An empty broker list made librdkafka (2.10+) drop every broker it knew, the group coordinator
included, and `make faults` seed 2612's librdkafka consumer stayed out of its group for the rest
of the run (docs/faults.md, sixth stop). Kafka: a broker serving clients is in its own metadata
cache, so its Metadata answers list it."""
from __future__ import annotations

from types import SimpleNamespace

from cluster.model import Member
from gateway.cluster import routes
from gateway.cluster.ownership import ClusterNode

ME, OTHER = Member(1, "10.0.0.1", 9092, 9876), Member(2, "10.0.0.2", 9092, 9876)


def _app(live: dict[int, Member]):
    view = SimpleNamespace(members=live, live=lambda: sorted(live))
    return SimpleNamespace(ownership=ClusterNode(ME, None, view, 3))


def test_a_member_that_sees_no_live_member_lists_itself_its_coordinator():
    app = _app({})
    brokers = routes.kafka_brokers(app)
    assert [b["node_id"] for b in brokers] == [1]
    assert app.ownership.coordinator("faults-group").node_id in {b["node_id"] for b in brokers}


def test_the_live_members_are_listed_once_each_in_node_order():
    assert [b["node_id"] for b in routes.kafka_brokers(_app({2: OTHER, 1: ME}))] == [1, 2]
    assert [(b["node_id"], b["host"]) for b in routes.kafka_brokers(_app({2: OTHER}))] == [(1, "10.0.0.1"),
                                                                                            (2, "10.0.0.2")]
