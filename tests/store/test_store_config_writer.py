"""The config writer: coalesced submissions, atomic writes that leave no temp file when they fail,
failed documents kept for the next try."""
import errno
import os

import pytest

from store import config as config_mod
from store.config import ConfigDir, ConfigWriter


def test_submissions_of_one_name_coalesce(tmp_path):
    cd = ConfigDir(str(tmp_path))
    w = ConfigWriter(cd)
    writes = []
    real = cd.write
    cd.write = lambda name, obj: (writes.append(name), real(name, obj))
    w.submit("a", {"v": 1})
    w.submit("b", {"v": 1})
    last = w.submit("a", {"v": 2})
    assert cd.read("a") is None
    assert not w.is_written("a", last)
    w.write_pending()
    assert sorted(writes) == ["a", "b"]
    assert cd.read("a") == {"v": 2} and w.is_written("a", last) and w.is_written("a", 1)
    assert not w.has_pending()


def test_a_failed_write_keeps_the_old_file_and_the_document_pending(tmp_path, monkeypatch):
    cd = ConfigDir(str(tmp_path))
    w = ConfigWriter(cd)
    w.submit("a", {"v": 1})
    w.write_pending()
    second = w.submit("a", {"v": 2})
    real_fsync = os.fsync

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(config_mod.os, "fsync", full)
    with pytest.raises(OSError):
        w.write_pending()
    monkeypatch.setattr(config_mod.os, "fsync", real_fsync)
    assert cd.read("a") == {"v": 1} and not w.is_written("a", second) and w.has_pending()
    assert os.listdir(tmp_path) == ["a.json"]  # no temp file left
    w.write_pending()
    assert cd.read("a") == {"v": 2} and w.is_written("a", second)
