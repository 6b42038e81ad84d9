"""Half/op transactions against a real store: first outcome wins, op log is the truth, check-back."""
import time

import trio

from codec.remoting.message import Message, decode
from semantics.routing import HALF_TOPIC, OP_TOPIC, SCHEDULE_TOPIC, route
from semantics.transactions import EndResult, Transactions
from semantics_fixtures import reopen, st  # noqa: F401 - fixtures

NOW = int(time.time() * 1000)


def half(st, body=b"tx", group="PG", **props):
    m = Message("Pay", 1, body, {"TRAN_MSG": "true", "PGROUP": group, "UNIQ_KEY": "U-" + body.decode(), **props},
                sys_flag=0x4)
    r = st.append(route(m, NOW))
    return r.queue_offset, r.physical_offset


def visible(st):
    return [m.body for _o, m in st.read("Pay", 1, 0, 100).entries]


def test_commit_rollback_first_outcome_wins(st):
    tx = Transactions(st)
    a, a_phys = half(st, b"a")
    b, _ = half(st, b"b")
    assert visible(st) == []
    res, r = tx.end(a, True, "PG", a_phys)
    assert res is EndResult.COMMITTED
    [m] = [m for _o, m in st.read("Pay", 1, 0).entries]
    assert m.body == b"a" and m.sys_flag & 0xC == 0x8 and m.prepared_transaction_offset == a_phys
    assert m.properties["UNIQ_KEY"] == "U-a"
    assert tx.end(b, False)[0] is EndResult.ROLLED_BACK
    assert tx.end(a, False)[0] is EndResult.ALREADY_DECIDED
    assert tx.end(a, True)[0] is EndResult.ALREADY_DECIDED
    assert tx.end(b, True)[0] is EndResult.ALREADY_DECIDED
    assert visible(st) == [b"a"]
    ops = [m for _o, m in st.read(OP_TOPIC, 0, 0).entries]
    assert [(o.body, o.properties["TAGS"]) for o in ops] == [(b"0", "d"), (b"1", "d")]
    assert tx.cursor == 2


def test_mismatch_and_missing(st):
    tx = Transactions(st)
    a, a_phys = half(st, b"a")
    assert tx.end(a, True, "OTHER")[0] is EndResult.MISMATCH
    assert tx.end(a, True, "PG", a_phys + 1)[0] is EndResult.MISMATCH
    assert tx.end(5, True)[0] is EndResult.NOT_FOUND
    assert tx.end(-1, True)[0] is EndResult.NOT_FOUND
    assert visible(st) == []
    assert tx.outcome(a) is None


def test_outcomes_survive_restart(st, reopen):
    tx = Transactions(st)
    a, _ = half(st, b"a")
    b, _ = half(st, b"b")
    c, _ = half(st, b"c")
    tx.end(b, True)
    st = reopen(st)  # no persist(): the op log alone must be enough
    tx2 = Transactions(st)
    assert tx2.outcome(b) == "commit" and tx2.outcome(a) is None and tx2.outcome(c) is None
    assert tx2.end(b, False)[0] is EndResult.ALREADY_DECIDED
    assert tx2.end(a, False)[0] is EndResult.ROLLED_BACK
    assert tx2.cursor == 2
    assert visible(st) == [b"b"]


def test_delayed_transactional_message_goes_through_schedule_on_commit(st):
    tx = Transactions(st)
    a, _ = half(st, b"a", DELAY="1")
    tx.end(a, True, now=NOW)
    assert visible(st) == []
    [(_o, m)] = st.read(SCHEDULE_TOPIC, 0, 0).entries
    assert m.properties["REAL_TOPIC"] == "Pay"


def test_check_rounds_immunity_max_and_discard(st):
    tx = Transactions(st, timeout_ms=6000, check_max=3)
    a, a_phys = half(st, b"a")
    b, _ = half(st, b"b", CHECK_IMMUNITY_TIME_IN_SECONDS="60")
    c, _ = half(st, b"c")
    tx.end(c, False)
    calls = []

    async def checker(group, msg, body):
        view = decode(body)
        calls.append((group, msg.queue_offset, view.topic, view.queue_id, view.properties["TRANSACTION_CHECK_TIMES"],
                      view.physical_offset, view.queue_offset))
        return True

    tx.checkers["test"] = checker
    t0 = st.get(a_phys).store_timestamp  # ages are measured from the store time

    async def rounds(now):
        return await tx.check_round(now - NOW + t0)

    assert trio.run(rounds, NOW + 5000) == 0  # too young
    assert trio.run(rounds, NOW + 7000) == 1  # a only: b is immune for 60 s, c decided
    assert calls == [("PG", a, "Pay", 1, "1", a_phys, a)]
    assert trio.run(rounds, NOW + 61_000) == 2  # a (2nd) and b (1st)
    assert st.read_config("transactionCheck.json")["checkTimes"] == {str(a): 2, str(b): 1}
    assert trio.run(rounds, NOW + 62_000) == 2
    assert trio.run(rounds, NOW + 63_000) == 1  # a is discarded, b checked a 3rd time
    assert tx.outcome(a) in ("discard", "decided")
    assert tx.end(a, True)[0] is EndResult.ALREADY_DECIDED
    assert visible(st) == []
    ops = [m.properties["TRAN_OUTCOME"] for _o, m in st.read(OP_TOPIC, 0, 0).entries]
    assert ops == ["rollback", "discard"]
    # an answer to the last check commits b; nothing more is checked
    assert tx.end(b, True)[0] is EndResult.COMMITTED
    assert trio.run(rounds, NOW + 100_000) == 0
    assert visible(st) == [b"b"]


def test_check_counts_without_live_producer(st):
    tx = Transactions(st, check_max=2)
    a, a_phys = half(st, b"a")
    t0 = st.get(a_phys).store_timestamp

    async def nobody(group, msg, body):
        return False

    tx.checkers["remoting"] = nobody

    async def rounds(now):
        return await tx.check_round(now - NOW + t0)

    for i in range(2):
        assert trio.run(rounds, NOW + 10_000 * (i + 1)) == 0
    assert tx.outcome(a) is None
    trio.run(rounds, NOW + 40_000)
    assert tx.outcome(a) in ("discard", "decided")


def test_inner_batch_half(st):
    """A Kafka transactional batch stored as one inner-batch half: one decision covers all records."""
    tx = Transactions(st, check_max=1)
    m = Message("Pay", 1, b"kafka-batch", {"TRAN_MSG": "true", "PGROUP": "txn-id"}, batch_count=3)
    h = st.append(route(m, NOW))
    single, _ = half(st, b"s")
    assert (h.queue_offset, single) == (0, 3)
    checked = []

    async def checker(group, msg, body):
        checked.append(msg.queue_offset)
        return True

    tx.checkers["test"] = checker
    t0 = st.get(h.physical_offset).store_timestamp
    trio.run(tx.check_round, t0 + 7000)
    assert checked == [0, 3]  # the batch is checked once
    assert tx.end(1, True)[0] is EndResult.NOT_FOUND  # records of a batch half are not names
    assert tx.end(0, True)[0] is EndResult.COMMITTED
    assert st.max_offset("Pay", 1) == 3  # three records visible
    assert tx.end(1, False)[0] is EndResult.ALREADY_DECIDED
    assert tx.cursor == 3
    [op] = [m for _o, m in st.read(OP_TOPIC, 0, 0).entries]
    assert op.body == b"0,1,2,"
    trio.run(tx.check_round, t0 + 20_000)  # the single half reaches the limit
    assert tx.cursor == 4


def test_state_file_caches_the_op_log(st, reopen):
    tx = Transactions(st)
    a, _ = half(st, b"a")
    b, _ = half(st, b"b")
    c, _ = half(st, b"c")
    tx.end(b, True)
    trio.run(tx.check_round, 0)  # nothing old enough; the state is written
    doc = st.read_config("transactionCheck.json")
    assert doc == {"halfCursor": 0, "opScanned": 1, "decided": {"1": "commit"}, "checkTimes": {}}
    tx.end(c, False)  # after the last write: only in the op log
    st = reopen(st)
    tx2 = Transactions(st)
    assert (tx2.outcome(a), tx2.outcome(b), tx2.outcome(c)) == (None, "commit", "rollback")
    assert tx2.end(a, True)[0] is EndResult.COMMITTED and tx2.cursor == 3


def test_a_half_stored_while_the_clock_ran_an_hour_ahead_is_checked_by_its_born_time(st):
    """Seed 2602 (docs/faults.md): store timestamps stay at a clock jump's peak (store/commitlog.py),
    so every half stored within the hour after a +3600 s jump looked an hour young and was never checked."""
    tx = Transactions(st, timeout_ms=6000)
    st.commitlog.last_ts = NOW + 3_600_000  # the peak of a +1 h jump, true time back since
    a, a_phys = half(st, b"a")
    assert st.get(a_phys).store_timestamp >= NOW + 3_600_000
    checked = []

    async def checker(group, msg, body):
        checked.append(msg.queue_offset)
        return True

    tx.checkers["test"] = checker
    born = st.get(a_phys).born_timestamp
    assert trio.run(tx.check_round, born + 5000) == 0  # young by its born time
    assert trio.run(tx.check_round, born + 7000) == 1 and checked == [a]
