"""Transactions over half and op messages (remoting-protocol.md §2.8, §4.6), for both protocols.

- A half message (route() sends TRAN_MSG=true messages there) waits in `RMQ_SYS_TRANS_HALF_TOPIC`
  queue 0, invisible to consumers of its real topic; it is named by its half-queue offset.
- `end(half_offset, commit)` decides it once: commit appends the real message (REAL_TOPIC /
  REAL_QID, sysFlag COMMIT, preparedTransactionOffset = the half's CommitLog offset; through the
  delay queue if it carries DELAY) and the op message in one `append_many` write, so a crash
  cannot keep one without the other; rollback appends the op message only. The op message goes
  to `RMQ_SYS_TRANS_OP_HALF_TOPIC` queue 0, tag `d`, body = the half offset in decimal (RocketMQ's
  format), plus property TRAN_OUTCOME = commit | rollback | discard. Later ends of the same half
  change nothing (the first outcome wins).
- The op log is the truth: at start the outcomes are rebuilt by reading the op queue.
- The check service looks at undecided halves every `check_interval_ms`. A half stored less than
  `timeout_ms` ago (or CHECK_IMMUNITY_TIME_IN_SECONDS, when set) is left alone; otherwise its check
  count goes up and the registered checkers are asked to send CHECK_TRANSACTION_STATE; a half
  already checked `check_max` times is discarded instead (op outcome `discard`, logged). Check
  counts, the first-undecided cursor and the outcomes at/above it (a cache of the op log up to
  `opScanned`, so a restart reads only the newer op messages) persist in
  `config/transactionCheck.json` after each round.

In a cluster the real queue may be led by another gateway when the half is decided (docs/cluster.md):
`leads(topic, queue_id)` (the cluster's; always True in one process) says whether this gateway may
append to it. If not, the committed message goes into the schedule topic's timer queue, due at
once, in the same write as the op message; the delay scheduler then delivers it to the leader
(at-least-once: the schedule progress moves only once the leader has it).

Checkers: each protocol layer's `async fn(producer_group, half: StoredMessage, body: bytes) -> bool`
goes into `Transactions.checkers` when the gateway App is built (`register_checker(app, name, fn)`);
`body` is the CHECK_TRANSACTION_STATE body (the half re-encoded with its real topic/queue and
TRANSACTION_CHECK_TIMES); it returns True when it sent the request to a live producer of the group.
Time comes from the App's clock (`semantics.clock`); the state file goes through the off-loop
config writer (`store.config.ConfigDir.submit`).
"""
from __future__ import annotations

import dataclasses
import enum
import logging

import trio

from semantics.clock import WALL_CLOCK
from semantics.flow_control import write_turn
from semantics.txn_layout import TxnLayout, op_log
from semantics.routing import (
    DEFAULT_LEVELS,
    HALF_TOPIC,
    OP_TOPIC,
    PROPERTY_PRODUCER_GROUP,
    PROPERTY_REAL_QID,
    PROPERTY_REAL_TOPIC,
    PROPERTY_START_DELIVER_TIME,
    SCHEDULE_TOPIC,
    TRANSACTION_MASK,
    DelayLevels,
    ensure_topic,
    schedule,
    to_message,
)
from codec.remoting.message import TRANSACTION_COMMIT_TYPE, Message, StoredMessage, encode

log = logging.getLogger("rocketgate.transactions")

STATE_FILE = "transactionCheck.json"
REMOVE_TAG = "d"
PROPERTY_OUTCOME = "TRAN_OUTCOME"
PROPERTY_CHECK_TIMES = "TRANSACTION_CHECK_TIMES"
PROPERTY_IMMUNITY = "CHECK_IMMUNITY_TIME_IN_SECONDS"
COMMIT, ROLLBACK, DISCARD = "commit", "rollback", "discard"


class EndResult(enum.Enum):
    COMMITTED = "committed"
    ROLLED_BACK = "rolled back"
    ALREADY_DECIDED = "already decided"  # a second end: nothing changed
    NOT_FOUND = "no such half message"
    MISMATCH = "commitLogOffset or producer group does not match the half message"


def _everywhere(topic: str, queue_id: int) -> bool:
    return True


def register_checker(app, name: str, fn) -> None:
    """Add a protocol's check sender (see module doc) while the App is built; `name` e.g. "remoting"."""
    app.transactions.checkers[name] = fn


class Transactions:
    """Outcome table (rebuilt from the op log), end(), and the check-back rounds."""

    def __init__(self, store, levels: DelayLevels = DEFAULT_LEVELS, timeout_ms: int = 6000,
                 check_interval_ms: int = 30_000, check_max: int = 15, clock=WALL_CLOCK, writer=None) -> None:
        self.store = store
        self.clock = clock
        # The App's off-loop ConfigWriter; written in place when there is none (tools, unit tests).
        self._save = store.write_config if writer is None else writer.submit
        self.checkers: dict = {}  # name -> async checker (see module doc)
        self.leads = _everywhere  # (topic, queue id) -> whether a commit appends it here (module doc)
        self.levels = levels
        self.timeout_ms = timeout_ms
        self.check_interval_ms = check_interval_ms
        self.check_max = check_max
        ensure_topic(store, HALF_TOPIC, 1)
        ensure_topic(store, OP_TOPIC, 1)
        doc = store.read_config(STATE_FILE, {}) or {}
        # Every half offset below `cursor` is decided; `outcomes` holds decided ones at/above it.
        self.cursor = min(int(doc.get("halfCursor") or 0), store.max_offset(HALF_TOPIC, 0))
        self.in_flight: set[int] = set()  # halves an `end_in_turn` is appending the outcome of
        self.check_times = {int(k): int(v) for k, v in (doc.get("checkTimes") or {}).items()}
        # The file is a cache of the op log up to `opScanned`; the rest of the log is read again.
        self.outcomes: dict[int, str] = {int(k): v for k, v in (doc.get("decided") or {}).items()}
        self._load_op_log(int(doc.get("opScanned") or 0))
        self._advance()
        # Producer groups with a half still undecided when the store was opened: transactions left
        # open by the previous process (the Kafka coordinator fences those transactional ids).
        self.open_groups_at_start = self._undecided_groups()
        self.layout = TxnLayout(store, self._save)  # Kafka transactions' records, markers, aborted index
        self.layout.reopen(self.undecided_halves())

    def _undecided_groups(self) -> set[str]:
        return {half.properties.get(PROPERTY_PRODUCER_GROUP, "") for _hoff, half in self.undecided_halves()}

    def undecided_halves(self):
        """(half offset, half) of every half from the cursor on that has no outcome yet."""
        s = self.store
        off, top = self.cursor, s.max_offset(HALF_TOPIC, 0)
        prev = -1
        while off < top:
            units = s.units(HALF_TOPIC, 0, off, min(1024, top - off))
            if not units:
                break
            for i, (phys, _size, _code) in enumerate(units):
                hoff = off + i
                if hoff in self.outcomes or phys == prev:  # decided, or a later unit of an inner batch
                    continue
                prev = phys
                half = s.get(phys)
                if half is not None and half.queue_offset == hoff:
                    yield hoff, half
            off += len(units)

    def _load_op_log(self, start: int) -> None:
        for op in op_log(self.store, start):
            outcome = op.properties.get(PROPERTY_OUTCOME, ROLLBACK)
            for part in op.body.decode("ascii", "replace").split(","):
                if part.strip().isdigit() and int(part) >= self.cursor:
                    self.outcomes.setdefault(int(part), outcome)

    def outcome(self, half_offset: int) -> str | None:
        """commit / rollback / discard, or None while undecided."""
        if half_offset < self.cursor:
            return self.outcomes.get(half_offset, "decided")
        return self.outcomes.get(half_offset)

    def half(self, half_offset: int) -> StoredMessage | None:
        units = self.store.units(HALF_TOPIC, 0, half_offset, 1)
        return self.store.get(units[0][0]) if units else None

    @staticmethod
    def _op(half: StoredMessage, outcome: str) -> Message:
        """Op message: body "42" (RocketMQ 4.x); an inner-batch half lists all its offsets "42,43,"."""
        first, n = half.queue_offset, half.batch_count
        body = str(first) if n == 1 else "".join(f"{o}," for o in range(first, first + n))
        return Message(topic=OP_TOPIC, queue_id=0, body=body.encode(),
                       properties={"TAGS": REMOVE_TAG, PROPERTY_OUTCOME: outcome})

    def end(self, half_offset: int, commit: bool, producer_group: str | None = None,
            commit_log_offset: int | None = None, now: int | None = None, *, uniq: str | None = None):
        """Decide a half message. Returns (EndResult, AppendResult | None); in sync flush mode
        await app.durable(result.end_offset) before acknowledging. `uniq`: the half must be that
        message (its UNIQ_KEY), for an end that may have reached another broker than the half's."""
        result, msgs, half, outcome = self._ending(half_offset, commit, producer_group, commit_log_offset, now, uniq)
        if not msgs:
            return result, None
        results = self.store.append_many(msgs)
        self._decided(half, outcome, results)
        return result, results[-1]

    async def end_in_turn(self, flow, half_offset: int, commit: bool, producer_group: str | None = None,
                          commit_log_offset: int | None = None, now: int | None = None, appended=None, *,
                          uniq: str | None = None):
        """`end` with its append through the send flow control (`flow`): off the event loop on a slow
        disk; checked, appended and decided in one turn, so no other end of the half comes between.
        `appended` (a list) gets (message, append result) of each append (a commit: its record, then the op)."""
        async with write_turn(flow, self.store) as append:
            result, msgs, half, outcome = self._ending(half_offset, commit, producer_group, commit_log_offset, now,
                                                       uniq)
            if not msgs:
                return result, None
            self.in_flight.add(half_offset)  # a concurrent `end` or discard (on the loop) sees it decided
            try:
                results = await append(msgs)
            finally:
                self.in_flight.discard(half_offset)
            self._decided(half, outcome, results)
            if appended is not None:
                appended.extend(zip(msgs, results))
            return result, results[-1]

    async def mark_empty(self, flow, partitions, producer_id: int, epoch: int, commit: bool) -> list:
        """Append the end markers of a Kafka transaction's partitions that got no record (one write,
        through the send flow control); their AppendResults. A crash before it loses only markers:
        no record waits for them."""
        msgs = self.layout.empty_markers(partitions, producer_id, epoch, commit, self.clock.now_ms())
        if not msgs:
            return []
        async with write_turn(flow, self.store) as append:
            return await append(msgs)

    def _ending(self, half_offset: int, commit: bool, producer_group: str | None,
                commit_log_offset: int | None, now: int | None, uniq: str | None = None):
        """(EndResult, messages to append or None, half, outcome) of an end."""
        if half_offset < 0 or half_offset >= self.store.max_offset(HALF_TOPIC, 0):
            return EndResult.NOT_FOUND, None, None, None
        if uniq is not None and getattr(self.half(half_offset), "properties", {}).get("UNIQ_KEY") != uniq:
            return EndResult.MISMATCH, None, None, None  # another message: checked before "already decided"
        if self.outcome(half_offset) is not None or half_offset in self.in_flight:
            return EndResult.ALREADY_DECIDED, None, None, None
        half = self.half(half_offset)
        if half is None or half.topic != HALF_TOPIC or half.queue_offset != half_offset:
            return EndResult.NOT_FOUND, None, None, None  # (a later record of an inner-batch half is not a name)
        if commit_log_offset is not None and commit_log_offset != half.physical_offset:
            return EndResult.MISMATCH, None, None, None
        group = half.properties.get(PROPERTY_PRODUCER_GROUP)
        if producer_group is not None and group is not None and group != producer_group:
            return EndResult.MISMATCH, None, None, None
        outcome = COMMIT if commit else ROLLBACK
        op = self._op(half, outcome)
        if self.layout.owns(half):  # a Kafka transaction's records are in their partition: a marker ends it
            msgs = self.layout.ending(half, commit, op, self.clock.now_ms() if now is None else now)
        else:
            msgs = [self.committed_message(half, now), op] if commit else [op]
        return (EndResult.COMMITTED if commit else EndResult.ROLLED_BACK), msgs, half, outcome

    def committed_message(self, half: StoredMessage, now: int | None = None) -> Message:
        """The real message of a committed half (properties kept as RocketMQ does: TRAN_MSG,
        PGROUP, REAL_TOPIC, REAL_QID stay visible)."""
        props = half.properties
        try:
            qid = int(props.get(PROPERTY_REAL_QID, "0"))
        except ValueError:
            qid = 0
        msg = to_message(
            half, topic=props.get(PROPERTY_REAL_TOPIC) or half.topic, queue_id=qid,
            sys_flag=(half.sys_flag & ~TRANSACTION_MASK) | TRANSACTION_COMMIT_TYPE,
            prepared_transaction_offset=half.physical_offset)
        now = self.clock.now_ms() if now is None else now
        msg = schedule(msg, now, self.levels)
        if msg.topic != SCHEDULE_TOPIC and not self.leads(msg.topic, msg.queue_id):
            # led by another gateway: the delay scheduler delivers it there, due at once
            msg = schedule(dataclasses.replace(
                msg, properties={**msg.properties, PROPERTY_START_DELIVER_TIME: str(now + 1)}), now, self.levels)
        return msg

    def _decided(self, half: StoredMessage, outcome: str, results=()) -> None:
        if self.layout.owns(half) and results:
            self.layout.ended(half, outcome == COMMIT, results[0].queue_offset)
        for off in range(half.queue_offset, half.queue_offset + half.batch_count):
            self.outcomes[off] = outcome
            self.check_times.pop(off, None)
        self._advance()

    def _advance(self) -> None:
        top = self.store.max_offset(HALF_TOPIC, 0)
        while self.cursor < top and self.cursor in self.outcomes:
            del self.outcomes[self.cursor]
            self.cursor += 1

    # ---- check-back ----------------------------------------------------------------------------

    def check_message_body(self, half: StoredMessage, times: int) -> bytes:
        """CHECK_TRANSACTION_STATE body: the half with its real topic/queue and the check count."""
        props = dict(half.properties)
        props[PROPERTY_CHECK_TIMES] = str(times)
        try:
            qid = int(props.get(PROPERTY_REAL_QID, "0"))
        except ValueError:
            qid = 0
        view = dataclasses.replace(half, topic=props.get(PROPERTY_REAL_TOPIC) or half.topic,
                                   queue_id=qid, properties=props)
        return encode(view, queue_offset=half.queue_offset, physical_offset=half.physical_offset,
                      store_timestamp=half.store_timestamp, store_host=half.store_host)

    def due_checks(self, now: int) -> tuple[list[tuple[StoredMessage, int]], list[StoredMessage]]:
        """Undecided halves old enough to check: ([(half, new check count)], [halves to discard]).
        Counts are updated here."""
        s = self.store
        low, high = s.min_offset(HALF_TOPIC, 0), s.max_offset(HALF_TOPIC, 0)
        self.cursor = min(max(self.cursor, low), high)
        to_check: list[tuple[StoredMessage, int]] = []
        to_discard: list[StoredMessage] = []
        for hoff, half in self.undecided_halves():
            immunity = self.timeout_ms
            seconds = half.properties.get(PROPERTY_IMMUNITY)
            if seconds is not None and seconds.strip().isdigit():
                immunity = max(int(seconds) * 1000, self.timeout_ms)
            stored = half.store_timestamp  # held at a clock jump's peak for its length (store/commitlog.py):
            if stored > now:  # then its born time says its age (seed 2602, docs/faults.md)
                stored = min(stored, half.born_timestamp)
            if now - stored < immunity:
                continue
            times = self.check_times.get(hoff, 0)
            if times >= self.check_max:
                to_discard.append(half)
            else:
                self.check_times[hoff] = times + 1
                to_check.append((half, times + 1))
        return to_check, to_discard

    def discard(self, half: StoredMessage):
        if half.queue_offset in self.in_flight:
            return None  # being ended right now
        log.warning("transaction half message %d (group %r) discarded after %d checks without an outcome",
                    half.queue_offset, half.properties.get(PROPERTY_PRODUCER_GROUP),
                    self.check_times.get(half.queue_offset, 0))
        msgs = [self._op(half, DISCARD)]
        if self.layout.owns(half):
            msgs = self.layout.ending(half, False, msgs[0], self.clock.now_ms())
        results = self.store.append_many(msgs)
        self._decided(half, DISCARD, results)
        return results[-1]

    def persist(self) -> None:
        """Hand the cache of the op log (outcomes at/above the cursor) and the check counts to the
        off-loop config writer."""
        self._save(STATE_FILE, self.snapshot())

    def snapshot(self) -> dict:
        return {
            "halfCursor": self.cursor,
            "opScanned": self.store.max_offset(OP_TOPIC, 0),
            "decided": {str(k): v for k, v in sorted(self.outcomes.items())},
            "checkTimes": {str(k): v for k, v in sorted(self.check_times.items())},
        }

    async def check_round(self, now: int | None = None) -> int:
        """One round of check-backs; returns how many requests were sent."""
        to_check, to_discard = self.due_checks(self.clock.now_ms() if now is None else now)
        for half in to_discard:
            self.discard(half)
        sent = 0
        checkers = list(self.checkers.values())
        for half, times in to_check:
            group = half.properties.get(PROPERTY_PRODUCER_GROUP, "")
            body = self.check_message_body(half, times)
            for checker in checkers:
                try:
                    if await checker(group, half, body):
                        sent += 1
                        break
                except Exception:
                    log.exception("transaction checker failed for group %r", group)
        self.persist()
        self.layout.trim()  # what retention moved the log start past
        return sent

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """The check service: a round every check_interval_ms (the first one after one interval)."""
        task_status.started()
        while True:
            await self.clock.sleep(self.check_interval_ms / 1000)
            await self.check_round()
