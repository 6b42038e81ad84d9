"""TransactionProducer against the gateway: commit, rollback, and the broker's check-back."""
import time

from client import (Admin, ConsumeFrom, LitePullConsumer, Message, MessageQueue, TransactionProducer,
                    TransactionState)


def test_commit_rollback_and_check_back(gateway):
    checked = []

    def local(msg, arg):
        return arg

    def check(msg):
        checked.append(msg)
        return TransactionState.COMMIT

    q = MessageQueue("TxnN", "broker-a", 0)
    with Admin(gateway.namesrv) as admin:
        admin.create_topic("TxnN", queues=1)
    with TransactionProducer("txn-pg", gateway.namesrv, local_transaction=local, check_listener=check) as p:
        committed, state = p.send_in_transaction(Message("TxnN", b"commit", keys="kc"), TransactionState.COMMIT)
        assert state == TransactionState.COMMIT and committed.transaction_id == committed.msg_id
        p.send_in_transaction(Message("TxnN", b"rollback"), TransactionState.ROLLBACK)
        p.send_in_transaction(Message("TxnN", b"unknown"), TransactionState.UNKNOWN)
        c = LitePullConsumer("txn-cg", gateway.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET)
        c.start()
        try:
            c.assign([q])
            got, deadline = [], time.monotonic() + 90  # the check-back runs every 30 s
            while len(got) < 2 and time.monotonic() < deadline:
                got += c.poll(1.0)
        finally:
            c.shutdown()
    assert [m.body for m in got] == [b"commit", b"unknown"]
    assert got[0].msg_id == committed.msg_id and got[0].properties["TRAN_MSG"] == "true"
    assert [m.body for m in checked] == [b"unknown"] and checked[0].topic == "TxnN"
