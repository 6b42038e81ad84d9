"""kill -9 under produce load, 3 cycles (the 50-cycle run is `make soak`, tests/robustness/soak.py):
every acknowledged Kafka (idempotent, acks=all) and RocketMQ (SYNC) message is stored exactly once,
and `--verify` finds nothing to quarantine at any restart."""
from __future__ import annotations

from tests.robustness import soak


def test_kill9_under_load_loses_and_duplicates_nothing(tmp_path):
    report = soak.run(cycles=3, seed=7, workdir=str(tmp_path), say=lambda _line: None)
    for r in report["results"]:
        assert r["acked"] > 0, r
        assert (r["lost"], r["duplicated"]) == (0, 0), r
    assert [q for _, q in report["verified"]] == [0] * 4
    assert report["tracebacks"] == 0
