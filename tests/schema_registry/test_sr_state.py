"""semantics/schema_registry: the state machine over a real store's `_schemas` topic: ids, versions,
deletes, config, mode, references and compatibility, and the whole state back after a reopen."""
from __future__ import annotations

import json

import pytest
import trio

import store
from codec.kafka import records
from interop.inner_batch import entry_message, index_info
from semantics.schema_registry import Registry, RegistryError
from semantics.schema_registry.log import TOPIC


def avro(*fields, name="U"):
    return {"schema": json.dumps({"type": "record", "name": name, "fields": list(fields)})}


A = avro({"name": "a", "type": "int"})
AB = avro({"name": "a", "type": "int"}, {"name": "b", "type": "string", "default": ""})
C = avro({"name": "c", "type": "string"})


@pytest.fixture
def open_registry(tmp_path):
    opened = []

    def make():
        for st in opened:
            st.close()
        st = store.open(str(tmp_path / "data"))
        opened.append(st)
        r = Registry(st)
        r.start()
        return r

    yield make
    for st in opened[-1:]:
        st.close()


def code(fn) -> int:
    """The Confluent error code `fn()` raises (0: none)."""
    try:
        fn()
    except RegistryError as exc:
        return exc.code
    return 0


def run(fn, *args, **kw):
    return trio.run(lambda: fn(*args, **kw))


def test_ids_global_versions_per_subject_and_replay(open_registry):
    r = open_registry()
    assert run(r.register, "t-value", A).id == 1
    assert run(r.register, "t-value", A).id == 1  # the same schema again: its id, no new version
    assert run(r.register, "t-value", AB).id == 2
    assert run(r.register, "other", A).id == 1  # another subject reuses the global id
    assert [v.version for v in r.subject_versions("t-value")] == [1, 2]
    assert r.subject_has_id("t-value", 2) and not r.subject_has_id("other", 2)
    assert r.latest("t-value").id == 2 and r.schema_by_id(3) is None
    run(r.set_config, "t-value", "full")
    run(r.set_mode, None, "READONLY")
    r2 = open_registry()
    assert r2.state.max_id == 2 and r2.state.subject_names() == ["other", "t-value"]
    assert r2.state.compatibility("t-value") == "FULL" and r2.state.mode("x") == "READONLY"
    assert code(lambda: trio.run(r2.register, "t-value", C)) == 42205  # read-only mode


def test_incompatible_refused_and_levels(open_registry):
    r = open_registry()
    run(r.register, "s", A)
    with pytest.raises(RegistryError) as refused:
        run(r.register, "s", C)
    assert refused.value.code == 409 and refused.value.status == 409
    end = r.log.end()
    run(r.set_config, "s", "NONE")
    assert run(r.register, "s", C).id == 2
    assert r.log.end() == end + 2  # the config record, then the schema: nothing for the refusal
    assert code(lambda: trio.run(r.set_config, None, "SIDEWAYS")) == 42203


def test_soft_then_permanent_delete(open_registry):
    r = open_registry()
    run(r.register, "s", A)
    run(r.register, "s", AB)
    assert code(lambda: trio.run(r.delete_subject, "s", True)) == 40405  # not soft-deleted first
    assert code(lambda: trio.run(r.delete_version, "s", "1", True)) == 40407
    assert run(r.delete_version, "s", "latest", False) == 2
    assert [v.version for v in r.subject_versions("s")] == [1]
    assert run(r.delete_subject, "s", False) == [1]
    assert code(lambda: r.subject_versions("s")) == 40401
    assert r.schema_by_id(1) is not None  # soft-deleted schemas stay readable by id
    assert code(lambda: trio.run(r.delete_subject, "s", False)) == 40404
    assert run(r.delete_subject, "s", True) == [1, 2]
    assert r.schema_by_id(1) is None and r.state.subject_names(deleted=True) == []
    assert run(r.register, "s", A).id == 3  # ids are never given twice
    r2 = open_registry()
    assert r2.state.schema_by_id(3) and r2.state.schema_by_id(1) is None


def test_references_missing_and_referenced_delete(open_registry):
    r = open_registry()
    run(r.register, "user", A)
    outer = {"schema": json.dumps({"type": "record", "name": "O", "fields": [{"name": "u", "type": "U"}]}),
             "references": [{"name": "U", "subject": "user", "version": 1}]}
    assert run(r.register, "outer", outer).id == 2
    assert r.state.referenced_by("user", 1) == [2]
    assert code(lambda: trio.run(r.delete_subject, "user", False)) == 42206
    missing = dict(outer, references=[{"name": "U", "subject": "nobody", "version": 1}])
    assert code(lambda: trio.run(r.register, "outer2", missing)) == 42201


def test_import_mode_takes_caller_ids(open_registry):
    r = open_registry()
    run(r.set_mode, None, "IMPORT")
    assert run(r.register, "s", dict(A, id=100, version=5)).id == 100
    assert r.state.version("s", 5).id == 100
    assert code(lambda: trio.run(r.register, "s", dict(C, id=100))) == 42205  # another schema under id 100
    run(r.set_mode, None, "READWRITE")
    assert code(lambda: trio.run(r.set_mode, None, "IMPORT")) == 42205  # not empty
    assert run(r.register, "t", C).id == 101


def test_foreign_and_broken_records_are_skipped(open_registry):
    r = open_registry()
    run(r.register, "s", A)
    batch = records.parse_batches(records.build_batch([(0, b"not json", b"{}", []), (0, None, b"x", []),
                                                       (0, b'{"keytype":"NOOP","magic":0}', None, [])]))[0]
    r.log.store.append_many([entry_message(TOPIC, 0, batch, index_info(batch), {}, 0, False)])
    r.fresh()
    assert r.state.skipped == 2 and r.state.max_id == 1
    assert run(r.register, "s", AB).id == 2


def test_a_schema_above_the_store_limit_is_refused_not_a_crash(tmp_path):
    st = store.open(str(tmp_path / "small"), store.StoreConfig(max_message_size=64 << 10))
    try:
        r = Registry(st)
        r.start()
        big = avro(*[{"name": f"f{i}", "type": "int", "default": 0} for i in range(3000)])
        assert code(lambda: trio.run(r.register, "s", big)) == 42201
        assert r.state.subject_names() == [] and run(r.register, "s", A).id == 1
    finally:
        st.close()
