"""`fetch.read_batches` with `epoch_of` (a cluster's replicated queue): every served batch carries the
epoch that wrote it in partitionLeaderEpoch, on all three paths (a small batch copied and patched in
memory, a medium one sent from the buffer it was read into after its patched head, a large one sent from
the CommitLog file after its patched head), and stays valid: that field is outside the batch CRC, as the
base offset. Without `epoch_of` batches are served as produced. The medium batch is not copied: its
bytes are a memoryview part of the answer."""
from __future__ import annotations

import os
import time
import types

import store
from codec.kafka import records
from gateway.kafka.fetch import SHARE_MIN_BYTES, SPLICE_MIN_BYTES, read_batches
from gateway.sendfile import FileRange, close_spliced
from interop.inner_batch import entry_message, index_info


def _append(s, count: int, value_size: int) -> None:
    data = records.build_batch([(1000 + i, None, os.urandom(value_size), []) for i in range(count)],
                               base_timestamp=1000)
    b = records.parse_batches(data)[0]
    s.append(entry_message("T", 0, b, index_info(b), {}, int(time.time() * 1000), False))


def _bytes(served) -> bytes:
    if not hasattr(served, "parts"):
        return bytes(served)
    out = b"".join(os.pread(p.fd, p.count, p.offset) if type(p) is FileRange else bytes(p) for p in served.parts)
    close_spliced(served)
    return out


def test_served_batches_carry_their_epoch_on_both_paths(tmp_path):
    s = store.open(str(tmp_path))
    try:
        _append(s, 3, 10)  # offsets 0-2: copied
        _append(s, 2, SPLICE_MIN_BYTES)  # offsets 3-4: spliced from the file
        _append(s, 1, 10)  # offset 5
        _append(s, 2, SHARE_MIN_BYTES)  # offsets 6-7: sent from the read buffer
        _append(s, 1, 10)  # offset 8
        app = types.SimpleNamespace(store=s)
        high = s.max_offset("T", 0)
        epochs = {0: 4, 3: 6, 5: 9, 6: 10, 8: 11}  # each batch's first offset -> the epoch that wrote it
        answer = read_batches(app, "T", 0, 0, high, 1 << 30, True, epoch_of=epochs.get)
        assert sum(len(p) for p in answer.parts if type(p) is memoryview) > 2 * SHARE_MIN_BYTES  # not copied
        batches = records.parse_batches(_bytes(answer))
        assert [(b.base_offset, b.leader_epoch) for b in batches] == [(0, 4), (3, 6), (5, 9), (6, 10), (8, 11)]
        assert all(b.problem() is None for b in batches)  # CRCs still hold
        plain = records.parse_batches(_bytes(read_batches(app, "T", 0, 0, high, 1 << 30, True)))
        assert [b.leader_epoch for b in plain] == [-1] * 5
        assert [b.base_offset for b in plain] == [0, 3, 5, 6, 8]
        assert [b.records_bytes() for b in plain] == [b.records_bytes() for b in batches]
    finally:
        s.close()
