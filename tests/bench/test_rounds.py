"""The ratio, spread and verdict logic of interleaved rounds (bench.rounds) and how the report uses it."""
from __future__ import annotations

import os

import pytest

from bench import limits, report, rounds
from bench.procstat import cpu_used, thread_cpu_ns
from bench.interleave import CPU_METRIC, Interleaver
from bench.scenarios import BYTES, Unavailable


def test_order_alternates_which_system_goes_first():
    assert [rounds.order(i, ("a", "b")) for i in range(4)] == [("a", "b"), ("b", "a"), ("a", "b"), ("b", "a")]
    assert rounds.order(1, ("a",)) == ("a",)


def test_per_round_ratios_pair_values_by_round_and_skip_zero_divisors():
    assert rounds.per_round_ratios([10, 20, 30], [5, 0, 60]) == [2.0, 0.5]


def test_median_and_its_confidence_interval_from_order_statistics():
    assert rounds.median([3, 1, 2]) == 2 and rounds.median([4, 1, 2, 3]) == 2.5
    assert rounds.median_interval([5, 1, 4, 2, 3]) == (1, 5, 1 - 2 / 32)  # 5 rounds: min–max, 94 %
    lo, hi, coverage = rounds.median_interval(list(range(1, 10)))  # 9 rounds: 2nd lowest–2nd highest
    assert (lo, hi) == (2, 8) and coverage == 1 - 2 * 10 / 512
    lo, hi, coverage = rounds.median_interval(list(range(1, 16)))
    assert (lo, hi) == (4, 12) and coverage >= rounds.CONFIDENCE


def test_consistent_difference_names_the_better_system_by_metric_direction():
    ratios = [1.20, 1.25, 1.22, 1.30, 1.18]
    c = rounds.compare(ratios, "higher", "gateway", "kafka")
    assert (c.median, c.low, c.high, c.ci_low, c.ci_high) == (1.22, 1.18, 1.30, 1.18, 1.30)
    assert c.verdict == "gateway better" and c.conclusive
    assert rounds.compare(ratios, "lower", "gateway", "kafka").verdict == "kafka better"
    assert rounds.compare([1 / r for r in ratios], "higher", "gateway", "kafka").verdict == "kafka better"


def test_a_wide_interval_on_one_side_of_the_margin_still_gives_the_direction():
    assert rounds.compare([1.1, 1.9, 1.3, 1.2, 2.0], "higher", "a", "b").verdict == "a better"


def test_within_margin_is_same():
    c = rounds.compare([0.97, 1.02, 1.0, 0.99, 1.04], "higher")
    assert c.verdict.startswith("same") and c.conclusive


def test_interval_reaching_past_the_margin_is_inconclusive():
    c = rounds.compare([0.90, 1.10, 1.0, 0.92, 1.08], "higher")
    assert c.verdict.startswith("inconclusive") and not c.conclusive
    assert rounds.compare([1.02, 1.10, 1.08, 1.07, 1.09], "higher").verdict.startswith("inconclusive")


def test_rounds_that_disagree_widely_are_too_noisy_until_more_rounds_narrow_the_interval():
    five = [0.60, 1.20, 1.22, 1.18, 1.25]  # one round hit by a burst of load
    c = rounds.compare(five, "higher", "a", "b")
    assert c.verdict.startswith("too noisy") and not c.conclusive
    nine = five + [1.21, 1.19, 1.23, 1.24]
    c = rounds.compare(nine, "higher", "a", "b")
    assert c.verdict == "a better" and (c.ci_low, c.ci_high) == (1.18, 1.24)  # the outlier is outside the CI
    assert report.ratio_cell(c.median, c) == "1.21× (0.60–1.25; 96% CI 1.18–1.24)"


def test_too_few_rounds_and_no_rounds():
    assert rounds.compare([1.5, 1.5, 1.5, 1.5], "higher").verdict.startswith("too few rounds")
    assert rounds.compare([], "higher") is None


def _paired(results, scenario, metric, gateway, kafka):
    results.paired.add(scenario)
    for g, k in zip(gateway, kafka):
        results.add(scenario, metric, "gateway", g)
        results.add(scenario, metric, "kafka", k)


def test_report_uses_median_of_round_ratios_not_ratio_of_medians():
    r = report.Results()
    # medians 300 / 300 = 1.00, but every round the gateway is ahead (the machine slowed down midway)
    _paired(r, "produce", "rec/s", [110, 220, 330, 440, 550], [100, 200, 300, 400, 500])
    (row,) = [line for line in r.markdown().splitlines() if line.startswith("| produce")]
    assert "| 1.10× (1.10–1.10 = 94% CI) | gateway better |" in row
    back = report.Results.from_json(r.to_json())
    assert back.compare("produce", "rec/s", "kafka").verdict == "gateway better"


def test_unpaired_rows_keep_the_ratio_of_medians_without_verdict():
    r = report.Results()
    r.add("start-up", "s", "gateway", 0.5)
    r.add("start-up", "s", "kafka", 5.0)
    assert "| 0.10× | — |" in r.markdown()


class _FakeSystem:
    """One thread whose CPU time the test advances."""

    def __init__(self):
        self.cpu_ns = 0

    def cpu_sample(self):
        return {1: self.cpu_ns}


def test_interleaver_pairs_rounds_alternates_and_derives_cpu_per_gb():
    r = report.Results()
    systems = {"gateway": _FakeSystem(), "kafka": _FakeSystem()}
    calls = []

    def run(name):
        calls.append(name)
        systems[name].cpu_ns += 10**9
        return {"rec/s": 200.0 if name == "gateway" else 100.0, BYTES: 0.5e9}

    done = Interleaver(r, 5, lambda: False).run("produce", systems, run)
    assert calls[:2] == ["gateway", "kafka"]  # the warm-up runs, uncounted
    assert calls[2:6] == ["gateway", "kafka", "kafka", "gateway"]
    assert len(done["gateway"]) == len(done["kafka"]) == 5
    assert r.rows[("produce", "rec/s")]["gateway"] == [200.0] * 5
    assert r.rows[("produce", CPU_METRIC)]["kafka"] == [2.0] * 5  # 1 CPU s per 0.5 GB
    assert r.compare("produce", "rec/s", "kafka").verdict == "gateway better"
    assert r.better[("produce", CPU_METRIC)] == "lower"


def test_interleaver_keeps_only_complete_rounds_when_a_system_fails():
    r = report.Results()
    systems = {"gateway": _FakeSystem(), "kafka": _FakeSystem()}
    count = {"kafka": 0}

    def run(name):
        if name == "kafka":
            count["kafka"] += 1
            if count["kafka"] >= 4:  # warm-up, rounds 1 and 2 fine; fails in round 3, and its retry
                raise Unavailable("broker gone")
        return {"rec/s": 1.0}

    Interleaver(r, 5, lambda: False).run("produce", systems, run)
    assert len(r.rows[("produce", "rec/s")]["gateway"]) == len(r.rows[("produce", "rec/s")]["kafka"]) == 2
    assert r.reasons[("produce", "kafka")] == "broker gone" and count["kafka"] == 5


def test_interleaver_retries_a_failed_run_once():
    r = report.Results()
    failures = iter([True, False])

    def run(name):
        if name == "kafka" and next(failures, False):
            raise Unavailable("client timed out")
        return {"rec/s": 1.0}

    Interleaver(r, 5, lambda: False).run("produce", {"gateway": _FakeSystem(), "kafka": _FakeSystem()}, run)
    assert len(r.rows[("produce", "rec/s")]["kafka"]) == 5 and ("produce", "kafka") not in r.reasons


def test_interleaver_over_budget_marks_every_system():
    r = report.Results()
    Interleaver(r, 5, lambda: True).run("produce", {"gateway": _FakeSystem(), "kafka": _FakeSystem()},
                                        lambda name: pytest.fail("must not run"))
    assert r.reasons[("produce", "gateway")] == r.reasons[("produce", "kafka")] == "time budget exhausted"


def test_thread_cpu_of_this_process_grows_and_a_gone_pid_reads_empty():
    import os
    import time

    before = thread_cpu_ns(os.getpid())
    assert before and all(ns > 0 for ns in before.values())
    give_up = time.monotonic() + 10
    while cpu_used(before, thread_cpu_ns(os.getpid())) < 0.05 and time.monotonic() < give_up:
        sum(range(10000))
    assert 0.05 <= cpu_used(before, thread_cpu_ns(os.getpid())) < 10
    assert thread_cpu_ns(2**22 + 7) == {}


def test_cpu_used_counts_new_threads_in_full_and_ended_ones_not_at_all():
    assert cpu_used({1: 5 * 10**9, 2: 10**9}, {1: 6 * 10**9, 3: 2 * 10**9}) == 3.0


def test_physical_limits_measure_and_shares(tmp_path):
    assert limits.disk_write_mbps(str(tmp_path), 4 << 20) > 0 and list(tmp_path.iterdir()) == []
    assert limits.loopback_mbps(0.1) > 0
    lines = limits.shares({"disk write MB/s": 500.0, "loopback MB/s": 2000.0},
                          {"gateway": {"produce": 250.0, "consume": 1000.0}})
    assert lines == ["gateway: produce 250 MB/s (50% of disk write, 12% of loopback); "
                     "consume 1,000 MB/s (50% of loopback)"]


def test_compare_section_is_replaced_in_place_and_kept_by_a_main_run(tmp_path):
    doc = tmp_path / "performance.md"
    doc.write_text("# Performance\n\n## Latest run (quick plan)\n\nq\n\n## How it is measured\n\nm\n\n"
                   "## Store\n\nstore 42\n")
    meta = {"date": "d", "plan": "compare", "elapsed_s": 1, "rounds": 5, "this_head": "abc",
            "other_tree": "/x", "other_head": "def"}
    r = report.Results("gateway", ("other",))
    _paired(r, "produce", "rec/s", [100] * 5, [100] * 5)
    r.rows[("produce", "rec/s")]["other"] = r.rows[("produce", "rec/s")].pop("kafka")
    report.write_compare_section(r, meta, str(doc))
    report.write_compare_section(r, meta, str(doc))  # a second run replaces the first
    text = doc.read_text()
    assert text.count(report.COMPARE_HEADING) == 1 and "same (within ±5%)" in text
    assert text.index("## Latest run") < text.index(report.COMPARE_HEADING) < text.index("## How it is")
    main = report.Results()
    main.chart = lambda path: False
    report.write_docs(main, {**meta, "plan": "quick", "cpu": "c", "memory": "m", "os": "o", "python": "p",
                             "java": "j", "kafka": "k", "rocketmq": "r", "librdkafka": "l"}, str(doc))
    text = doc.read_text()
    assert text.count(report.COMPARE_HEADING) == 1 and "store 42" in text and "same (within" in text


def test_a_kept_plan_section_from_the_sequential_method_is_marked(tmp_path):
    doc = tmp_path / "performance.md"
    doc.write_text("# Performance\n\n## Latest run (full plan)\n\n| a | b |\n\n## Store\n\ns\n")
    r = report.Results()
    r.chart = lambda path: False
    meta = {"date": "d", "plan": "quick", "elapsed_s": 1, "cpu": "c", "memory": "m", "os": "o", "python": "p",
            "java": "j", "kafka": "k", "rocketmq": "r", "librdkafka": "l"}
    report.write_docs(r, meta, str(doc))
    report.write_docs(r, meta, str(doc))  # noted once, not once per rewrite
    text = doc.read_text()
    assert text.count(report.SEQUENTIAL_NOTE) == 1
    assert text.index("## Latest run (full plan)") < text.index(report.SEQUENTIAL_NOTE) < text.index("| a | b |")


def test_limits_lines_give_before_after_and_each_systems_share():
    r = report.Results()
    for v in (100.0, 300.0, 200.0):
        r.add("produce 1 KiB", "MB/s", "gateway", v)
    r.add("consume 1 KiB", "MB/s", "gateway", 500.0)
    r.add("native send", "TPS", "gateway", 9.0)  # not MB/s: no share
    r.add("native send 128 B (Java RmqBench)", "MB/s", "rocketmq", 4.0)  # RocketMQ's remoting rows count
    r.add("native consume 128 B (Java push consumer)", "MB/s", "rocketmq", 9.0)
    r.add("durable native send 128 B", "MB/s", "rocketmq", 300.0)  # fsync rows are not a best case
    measured = {"before": {"load average": 3.456, "disk write MB/s": 400.0, "loopback MB/s": 1000.0},
                "after": {"load average": 5.0, "disk write MB/s": 300.0, "loopback MB/s": 900.0}}
    head, gateway, rocketmq = report.limits_lines(r, measured)
    assert head.endswith("disk write MB/s 400 / 300; loopback MB/s 1,000 / 900; load average 3.46 / 5.00")
    assert gateway == "gateway: produce 200 MB/s (50% of disk write, 20% of loopback); consume 500 MB/s (50% of loopback)"
    assert rocketmq == "rocketmq: produce 4 MB/s (1% of disk write, 0% of loopback); consume 9 MB/s (1% of loopback)"
    assert report.limits_lines(r, {}) == []


def test_interleaver_records_values_paired_elsewhere():
    r = report.Results()
    Interleaver(r, 5, lambda: False).record("slices", "rec/s", {"gateway": [2.0] * 6, "kafka": [1.0] * 5})
    assert r.rows[("slices", "rec/s")] == {"gateway": [2.0] * 5, "kafka": [1.0] * 5}
    assert r.compare("slices", "rec/s", "kafka").verdict == "gateway better"


def test_one_client_alternating_slices_between_two_gateways(tmp_path):
    from bench.brokers import Gateway
    from bench import scenarios as sc

    with Gateway(str(tmp_path / "a")) as a, Gateway(str(tmp_path / "b")) as b:
        rates = sc.librdkafka_produce_slices({"a": a.bootstrap, "b": b.bootstrap}, 100, "1", 2, seconds=0.1)
    assert set(rates) == {"a", "b"} and all(len(v) == 2 and min(v) > 0 for v in rates.values())


def test_rmqbench_runs_report_the_payload_bytes_the_broker_took(monkeypatch):
    """RocketMQ's CPU s/GB rows: a send run counts its uncounted warm-up's sends at the window's rate
    (the broker's CPU is read around the whole JVM run); a consume run counts what it received."""
    from bench import scenarios as sc

    out = {"produce": '{"sent": 3000, "failed": 0, "tps": 1000.0, "p99_ms": 2.0}\n'
                      '{"sent": 5000, "failed": 0, "tps": 1250.0, "p99_ms": 2.0}',
           "consume": 'log line\n{"received": 4000, "expected": 4000, "tps": 800.0}'}
    monkeypatch.setattr(sc, "_java", lambda kind, main, args, timeout: out[args[0]])
    first, second = sc.rmq_produce_reps("ns", "t", 3.0, 2, size=100, warmup=2.0)
    assert first[BYTES] == (3000 + 2 * 1000) * 100 and second[BYTES] == 5000 * 100  # warm-up: first window only
    assert first["sent"] == 3000  # what the consumer must read back stays the counted sends
    assert first["MB/s"] == 1000 * 100 / 1e6
    assert sc.rmq_consume_reps("ns", "t", 4000, 1, size=100) == [{"TPS": 800.0, "MB/s": 0.08, BYTES: 400_000}]


def test_phases_option_keeps_each_phases_share_of_the_budget():
    import argparse
    import copy

    from bench.__main__ import keep_phases
    from bench.plans import PLANS

    plan = copy.deepcopy(PLANS["full"])
    keep_phases(argparse.ArgumentParser(), plan, ["durable", "main"])
    assert plan.phases == [("main", 0.62), ("durable", 0.13)]  # the plan's order, not the option's
    assert plan.budget_s == pytest.approx(PLANS["full"].budget_s * 0.75)
    with pytest.raises(SystemExit):
        keep_phases(argparse.ArgumentParser(), copy.deepcopy(PLANS["full"]), ["main", "warmup"])


def test_bench_gateways_refuse_writes_only_as_late_as_rocketmq(tmp_path):
    """A shared disk past the gateway's default 75 % must not make only the gateway refuse writes."""
    from bench.brokers import Gateway, RocketMQBroker

    g = Gateway(str(tmp_path / "g"))
    cmd = []
    g._spawn = lambda name, c, cwd: cmd.extend(c)
    g._wait = lambda *a: None
    g._launch()
    rocketmq = RocketMQBroker(str(tmp_path / "r"))
    os.makedirs(rocketmq.workdir, exist_ok=True)
    rocketmq._prepare()
    with open(os.path.join(rocketmq.workdir, "broker.conf")) as f:
        assert "diskMaxUsedSpaceRatio=95\n" in f.read()
    assert cmd[cmd.index("--disk-max-used-space-ratio") + 1] == "95"
