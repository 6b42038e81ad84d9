"""Failed store writes under load (issue 30, item 5), with the store's test-only fault seam
(store.faults, ROCKETGATE_STORE_FAULTS) in a real `python -m gateway`:

- ConsumeQueue writes failing at random (EMFILE, ENOSPC, EIO) while two SYNC producers send, then
  kill -9: every acknowledged message is there once, at the queue offset its send was answered
  with, and no queue offset holds two messages;
- a full disk (ENOSPC on every write needing new blocks) and SIGTERM: the gateway exits 0 without a
  traceback, says which units it could not write, and a restart has every acknowledged message;
- one failed CommitLog allocation far below the used-space ratio: writes are refused, then resume.

In one process (the seam's functions monkeypatched): every ConsumeQueue write failing gives no
offset twice and loses nothing across a crash, and retention goes on meanwhile.
"""
from __future__ import annotations

import collections
import errno
import gc
import os
import threading
import time
import uuid

import pytest
from test_disk_full import small_fs  # noqa: F401 - a fixture: the data dir on a tmpfs of its own

import store
from client import Admin, ConsumeFrom, LitePullConsumer, Message, MessageQueue, MQBrokerError, Producer, SendStatus
from codec.remoting import ResponseCode
from codec.remoting import message as M
from gateway_process import GatewayProcess
from store import faults, flush
from store.consumequeue import UNIT, ConsumeQueue

TOPIC = "FaultT"
QUEUES = 2


class SyncSender:
    """One SYNC producer (no client retry) sending `<name>-<seq>` (also its key) until stopped;
    `acked`: body -> (queue id, queue offset) of the answer."""

    def __init__(self, name: str, namesrv: str) -> None:
        self.name = name
        self.acked: dict[bytes, tuple[int, int]] = {}
        self.failed = 0
        self.producer = Producer(f"faults-pg-{name}-{uuid.uuid4().hex[:6]}", namesrv, retry_times=0,
                                 send_timeout=3.0).start()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        seq = 0
        while not self.stop.is_set():
            body = f"{self.name}-{seq}"
            seq += 1
            try:
                r = self.producer.send(Message(TOPIC, body.encode(), keys=body))
            except Exception:  # noqa: BLE001 - refused or the gateway is gone: not acknowledged
                self.failed += 1
                time.sleep(0.01)
                continue
            if r.status == SendStatus.SEND_OK:
                self.acked[body.encode()] = (r.queue.queue_id, r.queue_offset)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(30)
        self.producer.shutdown()


def start_with_topic(g: GatewayProcess) -> None:
    g.start()
    admin = Admin(g.namesrv).start()
    try:
        admin.create_topic(TOPIC, queues=QUEUES)
    finally:
        admin.shutdown()


def read_queues(g: GatewayProcess, topic: str, queues: int) -> list[tuple[int, int, bytes]]:
    """(queue id, queue offset, body) of every message stored in the topic's queues."""
    admin = Admin(g.namesrv).start()
    try:
        ends = {q: admin.max_offset(MessageQueue(topic, "broker-a", q)) for q in range(queues)}
    finally:
        admin.shutdown()
    c = LitePullConsumer(f"faults-cg-{uuid.uuid4().hex[:6]}", g.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET)
    c.start()
    got = []
    try:
        c.assign([MessageQueue(topic, "broker-a", q) for q in range(queues)])
        seen = {q: 0 for q in range(queues)}  # next offset expected per queue
        deadline = time.monotonic() + 120
        while any(seen[q] < ends[q] for q in seen) and time.monotonic() < deadline:
            for m in c.poll(0.5):
                got.append((m.queue_id, m.queue_offset, m.body))
                seen[m.queue_id] = max(seen[m.queue_id], m.queue_offset + 1)
    finally:
        c.shutdown()
    return got


def check_acknowledged(acked: dict[bytes, tuple[int, int]], stored: list[tuple[int, int, bytes]]) -> None:
    at = collections.Counter((q, off) for q, off, _ in stored)
    assert not [k for k, n in at.items() if n > 1], "a queue offset holds two messages"
    where = collections.defaultdict(list)
    for q, off, body in stored:
        where[body].append((q, off))
    lost = sorted(b for b in acked if b not in where)
    assert not lost, f"{len(lost)} of {len(acked)} acknowledged messages lost, e.g. {lost[:5]}"
    twice = sorted(b for b in acked if len(where[b]) > 1)
    assert not twice, f"acknowledged messages stored twice: {twice[:5]}"
    moved = [(b, acked[b], where[b][0]) for b in acked if where[b][0] != acked[b]]
    assert not moved, f"acknowledged at one queue offset, stored at another: {moved[:5]}"


def test_random_consumequeue_write_failures_under_load_lose_nothing_acknowledged(tmp_path, monkeypatch):
    monkeypatch.setenv(faults.ENV, "cq=0.7,seed=30")
    g = GatewayProcess(str(tmp_path / "data"))
    senders = []
    try:
        start_with_topic(g)
        senders = [SyncSender(name, g.namesrv) for name in ("a", "b")]
        time.sleep(10)
        g.kill9()  # while the senders still send
        for s in senders:
            s.close()
        log = open(g.log_path, encoding="utf-8", errors="replace").read()
        assert "TEST FAULT SEAM ACTIVE" in log and "(fault seam)" in log, "the seam did not fail any write"
        monkeypatch.delenv(faults.ENV)
        g.start()
        acked = {b: where for s in senders for b, where in s.acked.items()}
        assert len(acked) > 200, f"only {len(acked)} sends were acknowledged"
        check_acknowledged(acked, read_queues(g, TOPIC, QUEUES))
    finally:
        for s in senders:
            s.close()
        g.stop()


def fail_consumequeue_writes(monkeypatch) -> None:
    real = faults.pwrite

    def failing(fd, data, offset):
        if faults._kind_of_fd(fd) == "cq":
            raise OSError(errno.EMFILE, "Too many open files")
        return real(fd, data, offset)

    monkeypatch.setattr(faults, "pwrite", failing)


def test_a_failing_consumequeue_is_not_written_to_once_per_message(tmp_path, monkeypatch):
    """Before: once 64 KiB were buffered, every put tried the write again (and logged a warning)."""
    tries = []

    def failing(fd, data, offset):
        tries.append(len(data))
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(faults, "pwrite", failing)
    cq = ConsumeQueue(str(tmp_path / "cq"), "T", 0, 300_000)
    for i in range(100_000):
        cq.put(UNIT.pack(i, 100, 0), 1)
    assert cq.max_offset == 100_000 and len(tries) <= 10
    assert cq.unit(99_999) == (99_999, 100, 0)
    monkeypatch.undo()
    cq.close()


def test_retention_goes_on_while_consumequeue_writes_fail(tmp_path, monkeypatch):
    """Before: the ConsumeQueue drain in `advance_min` raised out of `delete_expired` (the
    gateway's retention task, whose failure stops the gateway) with the CommitLog files already
    detached, on the full disk retention is there to relieve."""
    s = store.open(str(tmp_path / "data"), store.StoreConfig(commitlog_file_size=64 << 10, index_slots=1000,
                                                             index_entries=4000))
    try:
        fail_consumequeue_writes(monkeypatch)
        for i in range(60):
            s.append(M.Message("T", 0, b"%d" % i + bytes(4000)))
        assert s.delete_expired(int(time.time() * 1000) + 100 * 3600_000) >= 2
        kept = [int(m.body[:3].rstrip(b"\0")) for _, m in s.iterate("T", 0)]
        assert kept and kept == list(range(kept[0], 60))
    finally:
        monkeypatch.undo()
        s.close()


def test_consumequeue_writes_failing_in_process_never_give_an_offset_twice(tmp_path, monkeypatch):
    """The same in one process, deterministic: every ConsumeQueue write fails (EMFILE) while the
    flusher runs between appends and no garbage collection breaks the failed drain's reference
    cycle (before: the next append raised BufferError, its entry stored, its offset handed out
    again). Reopened as after a kill -9, every entry is at the offset its append returned."""
    monkeypatch.setattr(flush, "DERIVED_FLUSH_INTERVAL", 0)
    config = store.StoreConfig(commitlog_file_size=1 << 20, index_slots=1000, index_entries=4000)
    s = store.open(str(tmp_path / "data"), config)
    real = faults.pwrite
    fail_consumequeue_writes(monkeypatch)
    offsets = []
    gc.disable()
    try:
        for i in range(300):
            offsets += [r.queue_offset for r in s.append_many([M.Message("T", 0, b"m%d" % i)])]
            s.flush()
    finally:
        gc.enable()
    assert offsets == list(range(300))
    assert [m.body for _, m in s.iterate("T", 0)] == [b"m%d" % i for i in range(300)]  # read from memory
    monkeypatch.setattr(faults, "pwrite", real)
    reopened = store.open(str(tmp_path / "data"), config)  # `s` never closed: as after a kill -9
    try:
        assert [(q, m.body) for q, m in reopened.iterate("T", 0)] == [(i, b"m%d" % i) for i in range(300)]
    finally:
        reopened.close()
        s.close()


def test_sigterm_on_a_full_disk_exits_0_and_a_restart_has_every_acknowledged_message(tmp_path, monkeypatch):
    """Before: `ConsumeQueue.close` -> drain -> pwrite ENOSPC, exit 1 with a traceback."""
    full = tmp_path / "disk-full"
    monkeypatch.setenv(faults.ENV, f"full={full}")
    g = GatewayProcess(str(tmp_path / "data"))
    producer = None
    try:
        start_with_topic(g)
        producer = Producer(f"faults-full-{uuid.uuid4().hex[:6]}", g.namesrv, retry_times=0).start()
        acked = {}

        def send(n: int, prefix: str) -> None:
            for i in range(n):
                body = f"{prefix}-{i}"
                r = producer.send(Message(TOPIC, body.encode(), keys=body))
                assert r.status == SendStatus.SEND_OK
                acked[body.encode()] = (r.queue.queue_id, r.queue_offset)

        send(40, "before")
        full.touch()  # the disk is full from now on: the CommitLog writes into blocks it reserved
        send(40, "after")
        time.sleep(1.5)  # the flusher tries (and fails) to write the ConsumeQueues and checkpoints
        producer.shutdown()
        producer = None
        assert g.stop() == 0
        log = open(g.log_path, encoding="utf-8", errors="replace").read()
        assert "Traceback" not in log
        assert "not written at close" in log and "stopped cleanly" in log
        full.unlink()
        monkeypatch.delenv(faults.ENV)
        g.start()
        check_acknowledged(acked, read_queues(g, TOPIC, QUEUES))
    finally:
        if producer is not None:
            producer.shutdown()
        g.stop()


def test_one_failed_allocation_far_below_the_ratio_refuses_writes_then_they_resume(tmp_path, small_fs,  # noqa: F811
                                                                                   monkeypatch):
    """Before: refused for the rest of the run (until 1 MiB more was free than at the failure).
    The data dir is on a tmpfs of its own, so no other process frees space meanwhile."""
    fail_next = tmp_path / "fail-next-allocation"
    monkeypatch.setenv(faults.ENV, f"alloc={fail_next}")
    g = GatewayProcess(str(small_fs / "data"), extra_args=[
        "--commitlog-file-size", "8m", "--index-slots", "1000", "--index-entries", "4000",
        "--disk-max-used-space-ratio", "95"])
    g.log_path = str(tmp_path / "gateway.log")
    producer = None
    try:
        g.start()
        producer = Producer(f"faults-alloc-{uuid.uuid4().hex[:6]}", g.namesrv, retry_times=0).start()
        body = os.urandom(64 << 10)
        producer.send(Message(TOPIC, b"first"))
        fail_next.touch()
        refusal = None
        for _ in range(200):  # the CommitLog allocates 4 MB ahead: a 64 KiB send crosses it soon
            try:
                producer.send(Message(TOPIC, body))
            except MQBrokerError as exc:
                refusal = exc
                break
        assert refusal is not None and refusal.code == ResponseCode.SERVICE_NOT_AVAILABLE, refusal
        assert not fail_next.exists()
        resumed = False
        deadline = time.monotonic() + 15
        while not resumed and time.monotonic() < deadline:
            try:
                producer.send(Message(TOPIC, body))
                resumed = True
            except MQBrokerError as exc:
                assert exc.code == ResponseCode.SERVICE_NOT_AVAILABLE
                time.sleep(0.2)
        assert resumed, "writes stayed refused after one failed allocation"
        for _ in range(5):
            producer.send(Message(TOPIC, body))
        log = open(g.log_path, encoding="utf-8", errors="replace").read()
        assert "one allocation" in log and "writes resume" in log and "Traceback" not in log
    finally:
        if producer is not None:
            producer.shutdown()
        g.stop()
