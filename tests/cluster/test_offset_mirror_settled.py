"""The quick sibling of test_cluster_offset_fetch_pending.py (in the long list): while a commit waits
for etcd, the offset table answers etcd's value (what Kafka's OffsetFetch shows), and once the commit
is withdrawn or written, the table's own; before an OffsetFetch answers, the table is read again
from etcd (a watch that lags behind must not answer). The mirror and the table only, no process."""
from __future__ import annotations

import trio

from gateway.cluster.offsets import OffsetMirror
from semantics.offsets import OffsetTable


class _Store:
    def read_config(self, name, default):
        return default


class _View:
    def on_offset(self, fn):
        self.changed = fn


def _mirrored():
    table = OffsetTable(_Store())
    table.persist = lambda: None  # no files here
    mirror = OffsetMirror(table, coordination=None, view=_View())
    mirror.install()
    return table, mirror


def test_a_commit_waiting_for_etcd_shows_etcds_value():
    table, mirror = _mirrored()
    assert table.acknowledged("g", "t", 0) == (None, "", -1)
    table.commit("g", "t", 0, 7, "m")  # waiting for etcd: never had one
    assert table.fetch("g", "t", 0) == 7 and table.acknowledged("g", "t", 0) == (None, "", -1)
    mirror.view.changed("g", "t", 0, {"offset": 5, "metadata": "e", "epoch": 2})  # etcd's, from another gateway
    assert table.acknowledged("g", "t", 0) == (5, "e", 2)
    mirror.withdraw([("g", "t", 0)], upto=1)  # refused: back to etcd's
    assert table.acknowledged("g", "t", 0) == (5, "e", 2) == (table.fetch("g", "t", 0), "e", 2)


def test_a_table_alone_answers_its_own_offsets():
    table = OffsetTable(_Store())
    table.persist = lambda: None
    table.commit("g", "t", 0, 7, "m", 3)
    assert table.acknowledged("g", "t", 0) == (7, "m", 3)


class _Etcd:
    """What etcd holds now; the watch (the mirror's view) has not brought it yet."""

    def __init__(self, values: dict):
        self.values = values

    async def read_offset(self, group, topic, qid):
        return self.values.get((group, topic, qid))


def test_offsets_are_read_from_etcd_before_an_offset_fetch_answers():
    table, mirror = _mirrored()
    mirror.view.changed("g", "t", 1, {"offset": 100})  # the watch so far
    mirror.coordination = _Etcd({("g", "t", 1): {"offset": 267, "metadata": "", "epoch": 4}})
    assert table.acknowledged("g", "t", 1) == (100, "", -1)  # what a gateway back from a partition had
    assert trio.run(table.wait_current, [("g", "t", 1)])
    assert table.acknowledged("g", "t", 1) == (267, "", 4)
    table.commit("g", "t", 1, 300)  # this gateway's own commit on its way to etcd: kept, not shown
    assert trio.run(table.wait_current, [("g", "t", 1)])
    assert table.fetch("g", "t", 1) == 300 and table.acknowledged("g", "t", 1) == (267, "", 4)
