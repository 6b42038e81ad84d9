"""The offset mirror's writes to etcd are compare-and-swaps (gateway/cluster/offsets.py): a commit
queued on one gateway is put to etcd only while etcd has the value that gateway last saw there (or
wrote itself). Before, every queued commit was put whatever etcd had (last writer wins): a commit
that was never acknowledged (a oneway RocketMQ offset update, a transaction's offsets answered
COORDINATOR_NOT_AVAILABLE) reached etcd later and overwrote a newer commit another gateway had
acknowledged meanwhile (docs/faults.md, finding 2 of the second stop). One gateway's mirror in
process against a real etcd; the other gateway's commit is put to etcd directly, its watch event
held back (as for a gateway cut from etcd)."""
from __future__ import annotations

import types

import trio
from clusters import require_etcd, start_etcd

from cluster.coordination import Coordination
from cluster.etcd import Etcd
from gateway.cluster.offsets import OffsetMirror
from semantics.offsets import OffsetTable

KEY = ("cas-group", "CasTopic", 0)


def _value(offset: int) -> dict:
    return {"offset": offset, "metadata": "", "epoch": -1}


def test_a_queued_commit_never_overwrites_another_gateways_newer_one(tmp_path):
    require_etcd()
    etcd_server = start_etcd(tmp_path)

    async def main():
        etcd = Etcd.from_url(etcd_server.url)
        coordination = Coordination(etcd)
        table = OffsetTable(types.SimpleNamespace(read_config=lambda *_: {}, write_config=lambda *_: None))
        mirror = OffsetMirror(table, coordination, types.SimpleNamespace(on_offset=lambda _fn: None))
        mirror.install()
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(mirror.run)
                table.commit(*KEY, 49)
                assert await table.wait_mirrored([KEY])  # in etcd, and seen there by this gateway
                await coordination.write_offsets({KEY: _value(51)})  # the other gateway's, acknowledged
                table.commit(*KEY, 53)  # queued here (e.g. a oneway update), never acknowledged
                assert not await table.wait_mirrored([KEY])  # before: True, and etcd got 53
                assert (await coordination.read_offset(*KEY))["offset"] == 51
                assert table.fetch(*KEY) == 51  # this gateway took the newer commit
                table.commit(*KEY, 55)  # a commit made after it is written as usual
                assert await table.wait_mirrored([KEY])
                assert (await coordination.read_offset(*KEY))["offset"] == 55
                nursery.cancel_scope.cancel()
        finally:
            await etcd.aclose()
    try:
        trio.run(main)
    finally:
        etcd_server.stop()
