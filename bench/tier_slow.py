"""`python -m bench.tier --slow-store`: produce latency on a tiered gateway whose object store is slow,
against one whose store is not. Uploads are off the produce path (a worker thread, bounded
bandwidth, retries): a slow store should delay uploads, not acknowledgements.

One SeaweedFS server; two gateways with the same tier settings (1 MiB CommitLog files, a tiered topic
with local.retention.ms=1000), "fast" on the server directly and "slow" through bench/slow_proxy.py
(DELAY_MS each way on every chunk, uploads at no more than RATE bytes/s). Rounds alternate which
gateway goes first; each is produced a paced acks=all load (confluent-kafka, 1 KB records, linger 5 ms)
and the latency send -> delivery report of every record is kept. Figures: p50/p99 per gateway per
round, the per-round ratio slow / fast of the p99 (bench.rounds, lower is better), the files each
tier committed during its rounds (the slow one lags: uploads were slowed, not stopped)."""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

from bench import rounds
from bench.brokers import ROOT, free_port, _port_open
from bench.objstore_server import bench_workdir

VALUE = b"v" * 1000


def produce_paced(bootstrap: str, topic: str, rate: int, seconds: float) -> list[float]:
    """Latencies (ms, send -> delivery report) of `rate` records/s for `seconds`, acks=all."""
    from confluent_kafka import Producer
    latencies: list[float] = []
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "enable.idempotence": False})
    began = time.perf_counter()
    for i in range(int(rate * seconds)):
        due = began + i / rate
        while (now := time.perf_counter()) < due:
            p.poll(min(due - now, 0.005))
        sent = time.perf_counter()

        def report(err, _msg, sent=sent):
            assert err is None, err
            latencies.append((time.perf_counter() - sent) * 1000)
        p.produce(topic, VALUE, on_delivery=report)
        p.poll(0)
    assert p.flush(60) == 0
    return latencies


def main(args) -> None:
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from confluent_kafka.admin import AdminClient, NewTopic
    from gateway_process import GatewayProcess
    with bench_workdir("bench-tier-slow-", "bench-tier") as (work, s3, gateways):
        proxy_port = free_port()
        upstream = int(s3.endpoint.rsplit(":", 1)[1])
        proxy = subprocess.Popen([sys.executable, "-m", "bench.slow_proxy", str(proxy_port), str(upstream),
                                  str(args.delay_ms), str(args.rate)], cwd=ROOT)
        try:
            while not _port_open(proxy_port):
                time.sleep(0.1)
            by_name = {}
            for name in ("fast", "slow"):
                tier = s3.tier_args("bench-tier", prefix=name)
                if name == "slow":
                    tier[tier.index("--tier-endpoint") + 1] = f"http://127.0.0.1:{proxy_port}"
                os.makedirs(os.path.join(work, name))
                g = GatewayProcess(os.path.join(work, name, "data"),
                                   extra_args=["--commitlog-file-size", args.file_size, *tier]).start()
                gateways.append(g)
                by_name[name] = g
                admin = AdminClient({"bootstrap.servers": g.kafka_bootstrap})
                admin.create_topics([NewTopic("t", 1, 1, config={"remote.storage.enable": "true",
                                                                  "local.retention.ms": "1000"})])["t"].result(30)
            result = _rounds(args, s3, by_name)
        finally:
            proxy.kill()
            proxy.wait()
    print(json.dumps(result, indent=1))
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "results", "tier_slow.json"), "w") as f:
        json.dump(result, f, indent=1)


def _committed(s3, name: str) -> int:
    return sum(1 for k in s3.keys("bench-tier") if k.startswith(f"{name}/manifests/"))


def _rounds(args, s3, by_name) -> dict:
    p50 = {n: [] for n in by_name}
    p99 = {n: [] for n in by_name}
    during = {n: [] for n in by_name}
    loads = []
    for r in range(args.rounds):
        for name in rounds.order(r, ("fast", "slow")):
            before = _committed(s3, name)
            lat = produce_paced(by_name[name].kafka_bootstrap, "t", args.rate_records, args.seconds)
            q = statistics.quantiles(lat, n=100)
            p50[name].append(round(q[49], 2))
            p99[name].append(round(q[98], 2))
            during[name].append(_committed(s3, name) - before)
            print(f"round {r} {name}: p50 {p50[name][-1]} p99 {p99[name][-1]} ms, files {during[name][-1]}", flush=True)
        loads.append(round(os.getloadavg()[0], 2))
    ratios = rounds.per_round_ratios(p99["slow"], p99["fast"])
    verdict = rounds.compare(ratios, "lower", "slow store", "fast store")
    p50_ratios = rounds.per_round_ratios(p50["slow"], p50["fast"])
    p50_verdict = rounds.compare(p50_ratios, "lower", "slow store", "fast store")
    return {"p50_ms": p50, "p99_ms": p99, "median_p50_ms": {n: statistics.median(v) for n, v in p50.items()},
            "median_p99_ms": {n: statistics.median(v) for n, v in p99.items()},
            "p99_ratio_slow_fast": [round(x, 3) for x in ratios],
            "p99_ratio_median": statistics.median(ratios),
            "p99_ratio_ci": [verdict.ci_low, verdict.ci_high], "verdict": verdict.verdict,
            "p50_ratio_median": statistics.median(p50_ratios),
            "p50_ratio_ci": [p50_verdict.ci_low, p50_verdict.ci_high], "p50_verdict": p50_verdict.verdict,
            "files_committed_during_round": during,
            "files_committed_end": {n: _committed(s3, n) for n in by_name},
            "load_1min_per_round": loads, "delay_ms_each_way": args.delay_ms, "upload_rate_bytes_s": args.rate,
            "records_per_s": args.rate_records, "seconds_per_round": args.seconds, "file_size": args.file_size}
