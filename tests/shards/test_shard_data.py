"""gateway.shard_data without processes: a one-process store moves whole into shard-0 (the lock and
the supervisor's entries stay), a move cut short (shard-0.migrating left) is finished by the next
start, a dir holding both a store and shard-0 is refused, and a one-process gateway is refused a
sharded dir with the --shards count that starts it. The real takeover: test_shards_migration.py."""
from __future__ import annotations

import os

import pytest

from gateway.shard_data import ShardDataError, move_into_shard_0, refuse_sharded


def make_store(path, names=("commitlog", "config", "consumequeue", "index")) -> None:
    for name in names:
        os.makedirs(path / name)
        (path / name / "file").write_text(name)
    (path / "lock").write_text("")


def test_a_one_process_store_moves_into_shard_0(tmp_path):
    make_store(tmp_path)
    assert sorted(move_into_shard_0(str(tmp_path))) == ["commitlog", "config", "consumequeue", "index"]
    assert sorted(os.listdir(tmp_path)) == ["lock", "shard-0"]
    assert (tmp_path / "shard-0" / "commitlog" / "file").read_text() == "commitlog"
    assert move_into_shard_0(str(tmp_path)) == []  # nothing more to move on the next start


def test_a_move_cut_short_is_finished(tmp_path):
    make_store(tmp_path)
    os.makedirs(tmp_path / "shard-0.migrating")
    os.rename(tmp_path / "commitlog", tmp_path / "shard-0.migrating" / "commitlog")  # the crash came here
    move_into_shard_0(str(tmp_path))
    assert sorted(os.listdir(tmp_path / "shard-0")) == ["commitlog", "config", "consumequeue", "index"]
    assert "shard-0.migrating" not in os.listdir(tmp_path)


def test_a_store_next_to_shard_0_is_refused(tmp_path):
    make_store(tmp_path)
    os.makedirs(tmp_path / "shard-0")
    with pytest.raises(ShardDataError, match="both a one-process store and shard-0"):
        move_into_shard_0(str(tmp_path))
    assert os.path.isdir(tmp_path / "commitlog")


def test_one_process_is_refused_a_sharded_dir(tmp_path):
    refuse_sharded(str(tmp_path / "missing"))
    make_store(tmp_path)
    refuse_sharded(str(tmp_path))  # a one-process store: fine
    for name in ("shard-0", "shard-1", "shard-2"):
        os.makedirs(tmp_path / "sharded" / name)
    with pytest.raises(ShardDataError) as refused:
        refuse_sharded(str(tmp_path / "sharded"))
    assert str(refused.value).endswith("holds the stores of 3 shards (shard-0, shard-1, shard-2): start it with --shards 3")
