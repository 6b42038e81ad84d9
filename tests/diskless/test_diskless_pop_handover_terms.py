"""The POP owners' hand-over of in-flight state (gateway.diskless_pop_owner, docs/diskless.md
"Hand-over") against a paused old owner: each owner publishes under its own lease term, so an old
owner that publishes once more after losing the lease (paused between its lease check and its PUT)
cannot overwrite the state of the owner after it; the next owner adopts the newest one. Below the
wire: three PopOwner services on fake apps (a real pop engine and store each, one real SeaweedFS
bucket), looks driven by hand. Before: one key, plain PUT: the third owner adopted the paused
owner's stale state and handed an acked message out again."""
from __future__ import annotations

import sys
import types
from pathlib import Path

import trio

import store
from objstore_fixtures import object_store_on
from semantics.diskless import ATTRIBUTE
from semantics.offsets import OffsetTable
from semantics.pop import PopEngine, Receipt

sys.path.insert(0, str(Path(__file__).parent.parent / "pop"))
from pop_env import Clock, open_store  # noqa: E402

from gateway.diskless_pop import PopOwner  # noqa: E402  (imported as the app imports it)

G, T = "g1", "T"


def _app(path, bucket_store, clock, node_id):
    s = open_store(path)
    s.topics.create(T, read_queues=1, write_queues=1, attributes={ATTRIBUTE: "true"})
    for i in range(4):
        s.append(store.Message(topic=T, queue_id=0, body=b"m%d" % i))
    config = types.SimpleNamespace(advertised="127.0.0.1", remoting_port=10_000 + node_id, grpc_port=None,
                                   node_id=node_id, remoting_tls=False, inter_broker=None)
    return types.SimpleNamespace(store=s, pop=PopEngine(s, OffsetTable(s), clock=clock), config=config,
                                 diskless=types.SimpleNamespace(index=types.SimpleNamespace(store=bucket_store)),
                                 clock=types.SimpleNamespace(now_ms=clock))


def test_a_paused_old_owners_late_publish_does_not_reach_the_next_owner(seaweed_s3, s3_bucket, tmp_path):
    clock = Clock()
    bucket = [object_store_on(seaweed_s3, s3_bucket, prefix="p/") for _ in range(3)]
    apps = [_app(tmp_path / str(i), bucket[i], clock, i) for i in range(3)]
    owners = [PopOwner(app) for app in apps]
    for owner in owners:
        owner.lease.ttl_s = 0  # a holder seen unchanged once is replaced at the next look

    async def main():
        a, b, c = owners
        assert await a._look() and a._held  # term 0
        popped = apps[0].pop.acquire(G, T, 0, 2, 60_000)  # m0, m1 in flight at the old owner
        await a._look()  # published
        assert await b._look() and not b._held  # sees a's term
        await b._look()
        assert b._held  # term 1: adopted m0, m1 in flight
        assert apps[1].pop.ack([Receipt(G, T, 0, 0, popped.pop_time)])[0] == 1  # the old receipt acks here
        await b._look()  # b publishes: m0 finished
        apps[0].pop.acquire(G, T, 0, 1, 60_000)  # the paused old owner still serves once, then
        await a._publish()  # publishes as if it held the lease (its check came before the pause)
        await c._look()
        await c._look()
        assert c._held  # term 2
        state = apps[2].pop.state(G, T, 0)
        assert state.start == 1, (state.start, state.done, dict(state.leases))  # m0 finished, not leased again
        assert sorted(state.leases) == [1]  # m1 still in flight; m2 never delivered by b

    try:
        trio.run(main)
    finally:
        for app in apps:
            app.store.close()
        for s in bucket:
            s.close()
