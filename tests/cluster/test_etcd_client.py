"""cluster.etcd against a real etcd: KV, compare-and-swap transactions, leases, watches."""
from __future__ import annotations

import trio

from cluster.etcd import (Etcd, EtcdError, compare_value, compare_version, op_get, op_put, parse_url,
                          prefix_end)


def run(etcd_server, fn):
    async def main():
        client = Etcd.from_url(etcd_server.url)
        try:
            return await fn(client)
        finally:
            await client.aclose()
    return trio.run(main)


def test_url_and_prefix_end():
    assert parse_url("etcd://a:1,b:2") == ["http://a:1", "http://b:2"]
    assert prefix_end(b"/rg/") == b"/rg0"
    assert prefix_end(b"a\xff") == b"b"


def test_put_get_range_delete(etcd_server):
    async def fn(c: Etcd):
        await c.put(b"/t/a", b"1")
        await c.put(b"/t/b", b"2")
        await c.put(b"/u", b"3")
        assert (await c.get(b"/t/a")).value == b"1"
        assert await c.get(b"/nope") is None
        kvs, rev = await c.get_prefix(b"/t/")
        assert [(kv.key, kv.value) for kv in kvs] == [(b"/t/a", b"1"), (b"/t/b", b"2")] and rev > 0
        assert await c.delete(b"/t/", prefix_end(b"/t/")) == 2
        assert (await c.get_prefix(b"/t/"))[0] == []
    run(etcd_server, fn)


def test_txn_compare_and_swap(etcd_server):
    async def fn(c: Etcd):
        ok, _ = await c.txn([compare_version(b"/k", 0)], [op_put(b"/k", b"v1")])
        assert ok
        ok, resp = await c.txn([compare_version(b"/k", 0)], [op_put(b"/k", b"v2")], [op_get(b"/k")])
        assert not ok and resp[0][0].value == b"v1"  # the failure branch read the current value
        ok, _ = await c.txn([compare_value(b"/k", b"v1")], [op_put(b"/k", b"v2")])
        assert ok and (await c.get(b"/k")).value == b"v2"
    run(etcd_server, fn)


def test_txn_revision_is_the_mod_revision_of_what_it_put(etcd_server):
    """The transactional ids' compare-and-swap keeps the revision it wrote (gateway/cluster/txn_state.py):
    the next swap's condition is that the key is still at it."""
    async def fn(c: Etcd):
        rev = await c.txn_revision([compare_version(b"/r", 0)], [op_put(b"/r", b"1")])
        assert rev > 0 and (await c.get(b"/r")).mod_revision == rev
        assert await c.txn_revision([compare_version(b"/r", 0)], [op_put(b"/r", b"2")]) == 0
        assert (await c.get(b"/r")).value == b"1"
    run(etcd_server, fn)


def test_lease_expires_and_revoke(etcd_server):
    async def fn(c: Etcd):
        lease = await c.lease_grant(2)
        await c.put(b"/live/1", b"x", lease=lease)
        assert (await c.get(b"/live/1")).lease == lease
        assert await c.lease_keepalive(lease) > 0
        await trio.sleep(3.5)  # no keep-alive: the key goes with the lease
        assert await c.get(b"/live/1") is None
        lease2 = await c.lease_grant(30)
        await c.put(b"/live/2", b"y", lease=lease2)
        await c.lease_revoke(lease2)
        assert await c.get(b"/live/2") is None
    run(etcd_server, fn)


def test_watch_streams_puts_and_deletes(etcd_server):
    async def fn(c: Etcd):
        _, rev = await c.get_prefix(b"/w/")
        seen = []
        done = trio.Event()

        async def on_events(events):
            seen.extend((e.kind, e.kv.key, e.kv.value) for e in events)
            if len(seen) >= 3:
                done.set()

        async with trio.open_nursery() as n:
            n.start_soon(c.watch, b"/w/", rev + 1, on_events)
            await c.put(b"/w/a", b"1")
            await c.put(b"/other", b"x")
            await c.put(b"/w/b", b"2")
            await c.delete(b"/w/a")
            with trio.fail_after(10):
                await done.wait()
            n.cancel_scope.cancel()
        assert seen == [("PUT", b"/w/a", b"1"), ("PUT", b"/w/b", b"2"), ("DELETE", b"/w/a", b"")]
    run(etcd_server, fn)


def test_unreachable_endpoint_is_an_etcd_error(etcd_server):
    async def fn(_):
        c = Etcd(["http://127.0.0.1:1"])
        try:
            await c.put(b"/x", b"1")
        except EtcdError as exc:
            return str(exc)
        finally:
            await c.aclose()
    assert "unreachable" in run(etcd_server, fn)


def test_second_endpoint_is_tried(etcd_server):
    async def fn(_):
        c = Etcd(["http://127.0.0.1:1", f"http://127.0.0.1:{etcd_server.client_port}"])
        try:
            await c.put(b"/y", b"2")
            return (await c.get(b"/y")).value
        finally:
            await c.aclose()
    assert run(etcd_server, fn) == b"2"
