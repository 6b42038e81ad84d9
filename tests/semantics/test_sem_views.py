"""Filtered view topics over a real store: backfill, live maintenance, dense offsets, restart, delete."""
import pytest

from codec.remoting.message import Message
from semantics.views import ViewError, Views
from semantics_fixtures import app, reopen, st  # noqa: F401 - fixtures


def put(st, tag, body, qid=0, topic="Base"):
    props = {"TAGS": tag} if tag else {}
    return st.append(Message(topic, qid, body, props))


def view_bodies(st, view, qid=0):
    res = st.read(view, qid, 0, 1000)
    return [(off, m.body) for off, m in res.entries]


def test_backfill_live_and_dense_offsets(st):
    st.topics.create("Base", 2, 2)
    put(st, "A", b"a0")
    put(st, "B", b"b0")
    put(st, None, b"n0")
    put(st, "A", b"a1", qid=1)
    views = Views(st)
    cfg = views.create_view("OnlyA", "Base", "A || C")
    assert cfg.read_queues == 2 and cfg.attributes["filter.source.topic"] == "Base"
    assert views.is_view("OnlyA") and not views.is_view("Base")
    assert view_bodies(st, "OnlyA") == [(0, b"a0")]
    put(st, "C", b"c0")
    put(st, "B", b"b1")
    put(st, "A", b"a2")
    assert view_bodies(st, "OnlyA") == [(0, b"a0"), (1, b"c0"), (2, b"a2")]
    assert view_bodies(st, "OnlyA", 1) == [(0, b"a1")]
    assert st.max_offset("Base", 0) == 6  # the base is untouched


def test_hash_collision_not_in_view(st):
    st.topics.create("Base", 1, 1)
    views = Views(st)
    views.create_view("V", "Base", "Aa")
    put(st, "BB", b"collides")  # "BB".hashCode() == "Aa".hashCode()
    put(st, "Aa", b"ok")
    assert view_bodies(st, "V") == [(0, b"ok")]


def test_inner_batch_units(st):
    st.topics.create("Base", 1, 1)
    views = Views(st)
    views.create_view("V", "Base", "x")
    from codec.remoting.message import tag_hash
    st.append(Message("Base", 0, b"batch", {}, batch_count=3, tags_codes=[tag_hash("x"), 0, tag_hash("x")]))
    assert st.max_offset("V", 0) == 2
    assert [u[0] for u in st.units("V", 0, 0, 5)] == [st.units("Base", 0, 0, 1)[0][0]] * 2


def test_restart_keeps_and_rebuilds(st, reopen, tmp_path):
    st.topics.create("Base", 1, 1)
    views = Views(st)
    views.create_view("V", "Base", "A")
    for i in range(5):
        put(st, "A" if i % 2 == 0 else "B", b"%d" % i)
    assert [b for _o, b in view_bodies(st, "V")] == [b"0", b"2", b"4"]
    st = reopen(st)
    views = Views(st)
    put(st, "A", b"5")
    assert view_bodies(st, "V") == [(0, b"0"), (1, b"2"), (2, b"4"), (3, b"5")]
    # the view's ConsumeQueue is lost: it is rebuilt from the base
    st.close()
    import shutil
    shutil.rmtree(tmp_path / "data" / "consumequeue" / "V")
    import store
    st = store.open(str(tmp_path / "data"), store.StoreConfig(commitlog_file_size=1 << 20, cq_units_per_file=1000))
    Views(st)
    assert [b for _o, b in view_bodies(st, "V")] == [b"0", b"2", b"4", b"5"]
    st.close()


def test_delete_view_leaves_base(st):
    st.topics.create("Base", 1, 1)
    views = Views(st)
    views.create_view("V", "Base", "A")
    put(st, "A", b"1")
    st.topics.delete("V")
    put(st, "A", b"2")
    assert st.max_offset("V", 0) == 0 and views.views_of("Base") == []
    assert [m.body for _o, m in st.read("Base", 0, 0).entries] == [b"1", b"2"]


def test_bad_definitions(st):
    views = Views(st)
    with pytest.raises(ViewError):
        views.create_view("V", "Missing", "A")
    st.topics.create("Base", 1, 1)
    views.create_view("V", "Base", "A")
    with pytest.raises(ViewError):
        views.create_view("V2", "V", "A")
    with pytest.raises(ViewError):
        views.create_view("V", "Base", "B")


def test_views_at_different_positions_and_batch_across_chunks(st, monkeypatch):
    import semantics.views as views_mod
    from codec.remoting.message import tag_hash

    monkeypatch.setattr(views_mod, "CHUNK", 2)
    st.topics.create("Base", 1, 1)
    put(st, "A", b"a0")
    views = Views(st)
    views.create_view("V1", "Base", "A")
    st.append(Message("Base", 0, b"batch", {}, batch_count=3, tags_codes=[tag_hash("A")] * 3))
    views.create_view("V2", "Base", "A")  # backfilled while V1 is already current
    put(st, "A", b"a1")
    for v in ("V1", "V2"):
        assert [u[0] for u in st.units(v, 0, 0, 10)] == [u[0] for u in st.units("Base", 0, 0, 10)], v
