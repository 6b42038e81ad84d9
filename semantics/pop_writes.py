"""The pop engine's log appends, in the order the engine made its ops, on the event loop or off it.

Every op is in `RMQ_SYS_POP_LOG` before its answer leaves, and in the order the engine applied the
ops (a restart replays them in log order). While the disk keeps up an op is appended where it is
made, on the loop (the cheapest way). A caller that can wait for its answer (the remoting POP
handlers) makes its ops inside `deferred(flow)`: while the disk is slow (`flow.appends_inline` says
no) or earlier ops are still unwritten, they are queued, the engine applies them at once, and the
caller awaits `written()` before answering; that writes the queue in the flow's worker turn
(`semantics.flow_control.run_in_turn`: off the loop on a slow disk), so a held write does not stop
other requests being answered. A caller that cannot wait (Kafka share groups, gRPC) appends at once,
after whatever is queued (written first, on the loop): a slow write then stalls the loop as it did
before, but the order holds.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager

from semantics.flow_control import run_in_turn


class PopLogWrites:
    def __init__(self, log) -> None:
        self.log = log  # semantics.pop_log.PopLog: `append(op)` returns the CommitLog end offset
        self.end = 0  # the CommitLog end offset after the last op written
        self.appended = 0  # ops handed over (written or queued)
        self.logged = 0  # ops in the CommitLog
        self._flow = None
        self._deferring = False
        self._queued: list[dict] = []
        self._queue_lock = threading.Lock()  # `_queued` between the loop and the worker thread (held briefly)
        self._order = threading.Lock()  # one writer at a time, so the log's order is the queue's

    @property
    def pending(self) -> bool:
        """Ops applied by the engine but not yet in the CommitLog."""
        return self.logged < self.appended

    def inline(self, flow) -> bool:
        """Would an op made now be appended at once (nothing unwritten, the disk keeps up)?"""
        return not self.pending and flow.appends_inline(self.log.store)

    @contextmanager
    def deferred(self, flow):
        """Ops made inside may be queued (see the module docstring); no checkpoint may come inside."""
        self._flow, self._deferring = flow, True
        try:
            yield
        finally:
            self._deferring = False

    def append(self, op: dict) -> int:
        """Log `op` in turn; the CommitLog end offset once it is written, 0 while it is queued.
        An append that raises counts nothing (the engine applies an op only once it is handed over)."""
        if self._deferring and (self.pending or not self._flow.appends_inline(self.log.store)):
            with self._queue_lock:
                self._queued.append(op)
            self.appended += 1
            return 0
        if self.pending:
            return self._write_queued(op)
        self.end = self.log.append(op)
        self.appended += 1
        self.logged += 1
        return self.end

    async def written(self) -> int:
        """Once every op handed over so far is in the CommitLog: the CommitLog end offset."""
        target = self.appended
        while self.logged < target:
            await run_in_turn(self._flow, self.log.store, self._write_queued)
        return self.end

    def _write_queued(self, extra: dict | None = None) -> int:
        """Append the queued ops in order, then `extra` (an op not yet handed over); on the loop or
        on the worker thread."""
        with self._order:
            with self._queue_lock:
                batch, self._queued = self._queued, []
            for i, op in enumerate(batch):
                try:
                    self.end = self.log.append(op)
                except BaseException:
                    with self._queue_lock:  # the rest stays first in line for the next writer
                        self._queued[:0] = batch[i:]
                    raise
                self.logged += 1
            if extra is not None:
                self.end = self.log.append(extra)
                self.appended += 1
                self.logged += 1
            return self.end
