"""The store tool on damaged files of every kind (random bytes over the CommitLog, ConsumeQueue,
IndexFile and config files): verify reports and dump prints, neither raises."""
from __future__ import annotations

import os
import random
import shutil

import pytest

import store
from codec.kafka.records import build_batch
from semantics.routing import ensure_topic
from store.tool import dump, verify


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("garbage") / "data")
    s = store.open(path, store.StoreConfig(commitlog_file_size=1 << 14, index_slots=64, index_entries=256))
    ensure_topic(s, "t", 2)
    for i in range(120):
        s.append(store.Message("t", i % 2, b"body-%d" % i, {"KEYS": f"k{i}", "TAGS": "a"}))
    s.append(store.Message("t", 0, build_batch([(1, b"k", b"v", [])] * 3), {}, batch_count=3))
    s.close()
    return path


def _files(path):
    return [os.path.join(d, n) for d, _, names in os.walk(path) for n in names]


@pytest.mark.parametrize("seed", range(40))
def test_random_damage_is_reported_never_raised(clean, tmp_path, seed):
    data = str(tmp_path / "data")
    shutil.copytree(clean, data)
    rng = random.Random(seed)
    for path in rng.sample(_files(data), 3):
        size = os.path.getsize(path)
        with open(path, "r+b") as f:
            for _ in range(rng.randint(1, 4)):
                at = rng.randrange(max(size, 1))
                f.seek(at)
                f.write(rng.randbytes(rng.randint(1, 64)))
        if rng.random() < 0.3:
            os.truncate(path, rng.randrange(max(size, 1)))
    report = verify.verify(data, index_slots=64)
    assert isinstance(report["ok"], bool) and all({"where", "what"} <= set(d) for d in report["damage"])
    for item in dump.commitlog_range(data, None, None, True, True):
        assert "position" in item
    for q in (0, 1):
        try:
            for item in dump.queue(data, "t", q, None, None, True, True):
                assert "queue_offset" in item
        except LookupError:
            pass  # the queue's directory name was damaged
