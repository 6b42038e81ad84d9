"""The catalog in the bucket (tables/bucket_catalog.py) on the real SeaweedFS server, in-process: two
gateways' catalogs on one bucket. A commit made on a snapshot another gateway has moved past is
retried on the new one when that left its queues alone (the offsets of both are kept), and refused
when it converted the same offsets: no row twice."""
from __future__ import annotations

import pyarrow as pa
import pytest


def _rows(table, queue: int, first: int, end: int) -> pa.Table:
    schema = table.schema().as_arrow()
    return pa.Table.from_pylist([{**{f.name: None for f in schema}, "partition": queue, "offset": o,
                                  "value": b"%d-%d" % (queue, o)} for o in range(first, end)], schema=schema)


def test_two_gateways_share_one_table(tmp_path, object_store):
    from pyiceberg.exceptions import CommitFailedException
    from tables.catalog import append, committed_offsets, load_or_create, open_catalog
    from tables.layout import table_schema
    from tables.warehouse import s3_warehouse
    warehouse = s3_warehouse(object_store)
    one = open_catalog(str(tmp_path / "one"), warehouse, object_store)
    two = open_catalog(str(tmp_path / "two"), warehouse, object_store)
    a = load_or_create(one, "clicks", table_schema())
    b = load_or_create(two, "clicks", table_schema())  # the same table: created once
    assert a.metadata_location == b.metadata_location

    append(a, _rows(a, 0, 0, 5), {0: 5}, {0: (0, 5)})
    append(b, _rows(b, 1, 0, 3), {1: 3}, {1: (0, 3)})  # b's snapshot was stale: retried on a's
    assert committed_offsets(one.load_table(("rocketgate", "clicks"))) == {0: 5, 1: 3}

    stale = two.load_table(("rocketgate", "clicks"))
    append(a, _rows(a, 0, 5, 8), {0: 8}, {0: (5, 8)})
    with pytest.raises(CommitFailedException):  # queue 0 from 5 again: already converted by `a`
        append(stale, _rows(stale, 0, 5, 8), {0: 8}, {0: (5, 8)})
    table = two.load_table(("rocketgate", "clicks"))
    got = sorted((r["partition"], r["offset"]) for r in table.scan().to_arrow().to_pylist())
    assert got == [(0, o) for o in range(8)] + [(1, o) for o in range(3)]
    assert committed_offsets(table) == {0: 8, 1: 3}
    assert [t[-1] for t in one.list_tables("rocketgate")] == ["clicks"]
