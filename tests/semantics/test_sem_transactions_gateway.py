"""Transaction check-back end to end: the gateway (in this process, so the check interval can be
short) with real sockets and the native client's TransactionProducer answering checks."""
import threading
import time

import pytest

from client import Admin, Message, MessageQueue, TransactionProducer, TransactionState
from semantics_fixtures import run_gateway, wait_for

TX = dict(transaction_timeout_ms=300, transaction_check_interval_ms=300)

TOPIC = "TxE2E"


@pytest.mark.timeout(120)
def test_check_back_commit_and_unknown_until_discarded(tmp_path):
    def client_part(namesrv, app):
        admin = Admin(namesrv).start()
        admin.create_topic(TOPIC, 1)
        checks = {"commit-on-2nd": 0, "always-unknown": 0}
        lock = threading.Lock()

        def check(msg):
            with lock:
                checks[msg.body.decode()] += 1
                if msg.body == b"commit-on-2nd" and checks["commit-on-2nd"] >= 2:
                    return TransactionState.COMMIT
            return TransactionState.UNKNOWN

        p = TransactionProducer("pg-tx", namesrv, local_transaction=lambda m, a: TransactionState.UNKNOWN,
                                check_listener=check).start()
        p.send_in_transaction(Message(TOPIC, b"commit-on-2nd"))
        p.send_in_transaction(Message(TOPIC, b"always-unknown"))
        r, state = p.send_in_transaction(Message(TOPIC, b"rolled-back"))
        q = MessageQueue(TOPIC, "broker-a", 0)
        assert wait_for(lambda: admin.max_offset(q) == 1)
        tx = app.transactions
        assert wait_for(lambda: tx.outcome(1) is not None)  # discarded after 3 unknown answers
        p.shutdown()
        admin.shutdown()
        return dict(checks)

    checks = run_gateway(tmp_path, client_part, transaction_check_max=3, **TX)
    assert checks["commit-on-2nd"] == 2
    assert checks["always-unknown"] == 3


@pytest.mark.timeout(120)
def test_producer_gone_before_deciding_then_another_answers(tmp_path):
    def client_part(namesrv, app):
        admin = Admin(namesrv).start()
        admin.create_topic(TOPIC, 1)
        a = TransactionProducer("pg-crash", namesrv, local_transaction=lambda m, a: TransactionState.UNKNOWN,
                                check_listener=lambda m: TransactionState.UNKNOWN).start()
        a.send_in_transaction(Message(TOPIC, b"orphan"))
        a.shutdown()  # gone before deciding: checks find no live producer of the group
        tx = app.transactions
        assert wait_for(lambda: tx.check_times.get(0, 0) >= 2)
        answered = []
        b = TransactionProducer("pg-crash", namesrv, local_transaction=lambda m, a: TransactionState.ROLLBACK,
                                check_listener=lambda m: answered.append(m.body) or TransactionState.COMMIT).start()
        b.send_in_transaction(Message(TOPIC, b"rolled-back"))  # also registers b as a live producer
        q = MessageQueue(TOPIC, "broker-a", 0)
        assert wait_for(lambda: admin.max_offset(q) == 1)
        time.sleep(1)  # a few more check rounds: nothing more may appear
        count = admin.max_offset(q)
        b.shutdown()
        admin.shutdown()
        return answered, count

    answered, count = run_gateway(tmp_path, client_part, transaction_check_max=50, **TX)
    assert answered == [b"orphan"] and count == 1
