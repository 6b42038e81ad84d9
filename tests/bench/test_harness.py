"""The bench harness itself (no JVM here: Kafka/RocketMQ starts belong to `make bench`, not CI)."""
from __future__ import annotations

import socket

import pytest

from bench import report
from bench import scenarios as sc
from bench.brokers import BrokerError, Gateway, private_memory


def _connects(addr: str) -> bool:
    host, port = addr.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=1):
            return True
    except OSError:
        return False


def test_gateway_starts_and_stops(tmp_path):
    with Gateway(str(tmp_path / "g"), flush="sync") as g:
        assert _connects(g.bootstrap) and _connects(g.namesrv)
        (pid,) = g.pids()
        assert private_memory(pid) > 0
    assert not _connects(g.bootstrap)
    assert g.pids() == []
    assert private_memory(pid) == 0


def test_python_client_send_and_consume_rows(tmp_path):
    """The Python-client rows: send windows, then a new group reads every message sent back."""
    with Gateway(str(tmp_path / "g")) as g:
        sends, reads = sc.python_native_reps(g.namesrv, 0.5, 2)
    assert len(sends) == 2 and all(r["TPS"] > 0 for r in sends)
    assert len(reads) == 2 and all(r["consumed"] == r["expected"] > 1 for r in reads)
    assert all(r["TPS"] > 0 for r in sc.python_consume_tps(reads))
    with pytest.raises(sc.Unavailable):
        sc.python_consume_tps([{**reads[0], "consumed": reads[0]["expected"] - 1}])


def test_gateway_restart_after_kill9_keeps_ports(tmp_path):
    g = Gateway(str(tmp_path / "g")).start()
    try:
        before = g.bootstrap
        g.kill9()
        assert not _connects(before)
        g.start()
        assert g.bootstrap == before and _connects(before)
    finally:
        g.stop()


def test_failed_start_reports_log_tail(tmp_path):
    g = Gateway(str(tmp_path / "g"), extra_args=["--no-such-option"])
    with pytest.raises(BrokerError) as info:
        g.start()
    assert "no-such-option" in str(info.value)
    assert g.pids() == []


def test_report_table_ratio_spread_and_own_sections_kept(tmp_path):
    r = report.Results()
    for v in (100.0, 300.0, 200.0):
        r.add("produce 100 B", "rec/s", "kafka", v)
    for v in (50.0, 150.0, 100.0):
        r.add("produce 100 B", "rec/s", "gateway", v)
    r.na("native send", "gateway", "remoting | not ready")
    table = r.markdown()
    assert "| produce 100 B | rec/s | kafka | 200 (100–300) | 100 (50.0–150) | 0.50× |" in table
    assert "remoting / not ready" in table  # a pipe in a reason must not break the table
    doc = tmp_path / "performance.md"
    doc.write_text("# Performance\n\nstale-text\n\n## Latest run (quick plan)\n\nold quick 7\n\n"
                   "## Store\n\nstore figures 42\n\n## Semantics\n\ndelay p99 3\n\n## Spark\n\nspark 1.1x\n")
    meta = {"date": "d", "plan": "quick", "elapsed_s": 1, "cpu": "c", "memory": "m", "os": "o",
            "python": "p", "java": "j", "kafka": "k", "rocketmq": "r", "librdkafka": "l"}
    r.chart = lambda path: False  # no PNG for this check
    report.write_docs(r, meta, str(doc))
    text = doc.read_text()
    assert "store figures 42" in text and "0.50×" in text and "stale-text" not in text
    assert "delay p99 3" in text and "spark 1.1x" in text and "old quick 7" not in text
    assert text.index("## Store") < text.index("## Semantics") < text.index("## Spark")
