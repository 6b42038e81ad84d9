"""The diskless topic watch (gateway.diskless.TopicWatch) lists the bucket's topic records only when
they may have changed (issue 28): without a cluster when the marker `diskless/topics-changed` moved
(one HEAD per look), in an etcd cluster when the cluster view reports a topic change (no request per
look), and in both every FULL_LOOK_S. Before, it listed every 2 s. In process, on a directory
object store whose requests are counted, a look every 0.05 s; the full look's period is made short
only to show that it finds a change no marker or view event announced."""
from __future__ import annotations

import types

import trio

from gateway.diskless import Diskless, TopicWatch
from semantics.diskless import is_diskless
from store.config import ConfigDir, TopicTable
from store.diskless import topic_records
from store.diskless.index import DisklessIndex
from store.objstore.directory import DirectoryObjectStore

INTERVAL_S, IDLE_S = 0.05, 1.2


class CountingStore(DirectoryObjectStore):
    def __init__(self, root: str) -> None:
        super().__init__(root)
        self.calls: list[str] = []

    def head(self, key):
        self.calls.append("HEAD")
        return super().head(key)

    def list(self, prefix="", start_after="", limit=None):
        self.calls.append("LIST")
        return super().list(prefix, start_after, limit)


class FakeView:
    def __init__(self) -> None:
        self.listeners = []

    def on_topic(self, fn) -> None:
        self.listeners.append(fn)


def _watch(tmp_path, view=None):
    store = CountingStore(str(tmp_path / "bucket"))
    other = DisklessIndex(DirectoryObjectStore(str(tmp_path / "bucket")))  # another gateway of the bucket
    st = types.SimpleNamespace(topics=TopicTable(ConfigDir(str(tmp_path / "config"))))
    watch = TopicWatch(st, Diskless(DisklessIndex(store), None), interval_s=INTERVAL_S,
                       **({"view": view} if view is not None else {}))
    return watch, store, other, st


async def _until(check, timeout: float = 5.0) -> None:
    with trio.fail_after(timeout):
        while not check():
            await trio.sleep(0.01)


def _run(test) -> None:
    trio.run(test)


def test_without_a_cluster_an_idle_watch_heads_the_marker_and_lists_once_it_moved(tmp_path):
    watch, store, other, st = _watch(tmp_path)

    async def test():
        async with trio.open_nursery() as nursery:
            await nursery.start(watch.run)
            await _until(lambda: "LIST" in store.calls)  # the first look lists
            store.calls.clear()
            await trio.sleep(IDLE_S)
            idle = list(store.calls)
            assert set(idle) == {"HEAD"} and len(idle) >= 5, idle  # before: a LIST each look
            store.calls.clear()
            other.publish_topic("made-elsewhere", 2)
            topic_records.mark_changed(other)
            await _until(lambda: is_diskless(st.topics.get("made-elsewhere")))
            assert store.calls.count("LIST") == 1, store.calls
            watch.FULL_LOOK_S = 0.2
            other.publish_topic("event-missed", 1)  # a gateway that died before its marker
            await _until(lambda: is_diskless(st.topics.get("event-missed")))  # the full look finds it
            nursery.cancel_scope.cancel()
    _run(test)


def test_in_a_cluster_an_idle_watch_asks_nothing_and_lists_when_the_view_changes(tmp_path):
    view = FakeView()
    watch, store, other, st = _watch(tmp_path, view)

    async def test():
        async with trio.open_nursery() as nursery:
            await nursery.start(watch.run)
            await _until(lambda: "LIST" in store.calls)  # the first look lists
            store.calls.clear()
            await trio.sleep(IDLE_S)
            idle = list(store.calls)
            other.publish_topic("made-elsewhere", 2)
            for fn in view.listeners:  # the topic reached etcd after its record reached the bucket
                fn("made-elsewhere", object())
            await _until(lambda: is_diskless(st.topics.get("made-elsewhere")))  # not a full look (60 s)
            watch.FULL_LOOK_S = 0.2
            lists = store.calls.count("LIST")
            fn("another", object())  # (the watch waits its new period from its next look on)
            await _until(lambda: store.calls.count("LIST") > lists)
            other.publish_topic("event-missed", 1)
            await _until(lambda: is_diskless(st.topics.get("event-missed")))  # the full look finds it
            nursery.cancel_scope.cancel()
        assert idle == []  # before: a LIST each look
    _run(test)
