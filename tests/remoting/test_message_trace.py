"""Message traces of the stock remoting Java clients (compat.RocketTrace): with message trace on, the
4.9 client (default trace topic RMQ_SYS_TRACE_TOPIC) and the 5.x client (a customizedTraceTopic)
write their trace records to the trace topic; the query of a message's trace by msgId (QUERY_MESSAGE
on the trace topic with the msgId as key, which mqadmin queryMsgTraceById sends) returns the send
record (Pub: producer group, topic, keys, tags) and the consume records (SubBefore, SubAfter: consumer
group) of a plain message, and of a committed transactional message also its EndTransaction record
(COMMIT_MESSAGE). mqadmin queryMsgTraceById lists the Pub and Sub records. The clients send a trace
batch up to 500 ms after the traced event and may drop it when shut down sooner, so the scenario
waits 3 s before each shutdown. Apache RocketMQ 5.5.0
(REMOTING_TARGET=rocketmq, bench/brokers.py) gave the same results."""
from __future__ import annotations

import os
import re

import pytest

from compat.jvm import ScenarioRun, run_admin_batch
from gateway_process import GatewayProcess

pytestmark = pytest.mark.timeout(600)
REAL = os.environ.get("REMOTING_TARGET") == "rocketmq"
CLIENTS = {"4.9": ("rocketmq49", None), "5": ("rocketmq5", "TraceTopicCustom")}


@pytest.fixture(scope="module", params=list(CLIENTS))
def traced(request, tmp_path_factory):
    """(client, scenario result, {msg kind: mqadmin queryMsgTraceById output}) of one client on a fresh target."""
    client = request.param
    module, topic = CLIENTS[client]
    work = tmp_path_factory.mktemp(f"trace{client[0]}")
    if REAL:
        from bench.brokers import RocketMQBroker
        system = RocketMQBroker(str(work / "rocketmq"), heap="1g").start()
    else:
        system = GatewayProcess(str(work / "data")).start()
    try:
        run = ScenarioRun(module, "compat.RocketTrace", [system.namesrv, f"tr{client[0]}", f"trace:{topic or 'default'}"],
                          str(work / "logs"))
        r, kinds = run["trace"], ("tx", "plain")
        queries = [["queryMsgTraceById", "-n", system.namesrv, "-i", r[kind]["msg_id"], *(["-t", topic] if topic else [])]
                   for kind in kinds]
        shown = {kind: q["output"] for kind, q in zip(kinds, run_admin_batch([queries], str(work / "mqadmin")))}
        yield client, r, shown
    finally:
        system.stop()


def rows(text: str) -> list[tuple[str, str, str]]:
    """(type, group, status) of each record line mqadmin printed."""
    return [(m[0], m[1], m[2]) for m in re.findall(r"^(Pub|Sub|EndTransaction)\s+(\S+)\s.*?\s(\S+)\s*$", text, re.M)]


def test_send_and_consume_records_of_a_plain_message(traced):
    client, r, _ = traced
    prefix, trace_topic = f"tr{client[0]}", CLIENTS[client][1] or "RMQ_SYS_TRACE_TOPIC"
    plain = r["plain"]
    assert plain["types"] == ["Pub", "SubAfter", "SubBefore"], plain
    pub = plain["records"]["Pub"]
    assert (pub["group"], pub["topic"], pub["keys"], pub["tags"], pub["success"]) == \
        (f"{prefix}-pg", f"{prefix}-traced", "plain-key", "TagT", True)
    for sub in ("SubBefore", "SubAfter"):
        assert (plain["records"][sub]["group"], plain["records"][sub]["keys"]) == (f"{prefix}-cg", "plain-key")
    assert {rec["trace_topic"] for rec in plain["records"].values()} == {trace_topic}


def test_records_of_a_committed_transactional_message(traced):
    client, r, _ = traced
    tx = r["tx"]
    assert tx["types"] == ["EndTransaction", "Pub", "SubAfter", "SubBefore"], tx
    assert tx["records"]["SubAfter"]["group"] == f"tr{client[0]}-cg"
    end = tx["records"]["EndTransaction"]
    assert (end["group"], end["transaction_state"], end["keys"]) == (f"tr{client[0]}-tx-pg", "COMMIT_MESSAGE", "tx-key")


def test_mqadmin_query_msg_trace_by_id(traced):
    client, _, shown = traced
    prefix = f"tr{client[0]}"
    assert rows(shown["plain"]) == [("Pub", f"{prefix}-pg", "success"), ("Sub", f"{prefix}-cg", "success")], shown
    assert rows(shown["tx"]) == [("Pub", f"{prefix}-tx-pg", "success"), ("Sub", f"{prefix}-cg", "success")], shown
