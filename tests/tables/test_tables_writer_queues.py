"""Which queues a table writer converts (docs/tables.md, "Clusters"): into a shared bucket catalog only
the queues this gateway leads; into its own catalog every queue it holds, so a member of a cluster
without a tier serves the whole table, not the part it leads."""
from __future__ import annotations

import types

import trio

import tables.schemas
import tables.writer
from tables.service import TablesService


def _writer_owns(monkeypatch, tmp_path, object_store):
    """The `owns` a TablesService hands its TableWriter (None: every queue)."""
    seen = {}

    class SpyWriter:
        def __init__(self, *args, owns=None, **kwargs):
            seen["owns"] = owns

        async def run(self):
            return None

    monkeypatch.setattr(tables.writer, "TableWriter", SpyWriter)
    monkeypatch.setattr(tables.schemas, "decoder_for", lambda *a: None)
    topic_config = types.SimpleNamespace(attributes={})
    store = types.SimpleNamespace(topics=types.SimpleNamespace(get=lambda name: topic_config))
    service = TablesService(store, str(tmp_path), object_store=object_store, owns=lambda topic, queue_id: False)

    async def main():
        async with trio.open_nursery() as nursery:
            await nursery.start(service._writer, "clicks", ("key_value", 1000))
    trio.run(main)
    return seen["owns"]


def test_own_catalog_converts_every_queue_held(monkeypatch, tmp_path):
    assert _writer_owns(monkeypatch, tmp_path, object_store=None) is None


def test_shared_catalog_converts_only_the_queues_led(monkeypatch, tmp_path):
    owns = _writer_owns(monkeypatch, tmp_path, object_store=object())
    assert owns is not None and owns("clicks", 0) is False
