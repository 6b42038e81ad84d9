"""`python -m bench.tier`: what the tier costs and gives, on a real SeaweedFS (bench/objstore_server.py).

Two gateways side by side, one with `--tier-url` (its topic tiered, local.retention.ms=1000, so files
are uploaded and deleted while it runs) and one without; `--file-size` CommitLog files (1 MiB by
default: two PUTs per MiB; the gateway's own default is 1 GiB). Rounds alternate which one is
produced to first (librdkafka, 1 KB records); the figure is the tiered / plain ratio of produce MB/s
per round (bar: >= 0.9), over the rounds in which files were committed to the tier while the tiered
gateway was produced to (a round without uploads measures nothing: left out, their count printed;
`--records` large enough that several files are sealed per round). Then the tiered topic is read
whole from offset 0, cold (every segment downloaded) and again warm (read cache), and the S3
requests per GB uploaded counted from the bucket (one PUT per segment and one per manifest). The
CPU seconds each gateway and the S3 server spent during each produce round are recorded too
(uploads of a tiered round trail into the next plain one). Prints a summary, writes bench/results/tier.json.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.brokers import ROOT
from bench import procstat, rounds
from bench.objstore_server import bench_workdir
from tests.gateway_process import GatewayProcess

VALUE = b"v" * 1000


def produce(bootstrap: str, topic: str, n: int) -> float:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 65536})
    began = time.monotonic()
    for i in range(n):
        while True:
            try:
                p.produce(topic, VALUE)
                break
            except BufferError:
                p.poll(0.01)
    assert p.flush(120) == 0
    return n * len(VALUE) / (time.monotonic() - began) / 1e6


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (/proc/PID/stat): which process a round costs."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def consume(bootstrap: str, topic: str, n: int) -> float:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    got, began = 0, time.monotonic()
    while got < n:
        m = c.poll(1.0)
        if m is not None and m.error() is None:
            got += 1
    c.close()
    return n * len(VALUE) / (time.monotonic() - began) / 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=20_000, help="records produced per gateway per round (--upload-cost: 1000 per MB uploaded)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--file-size", default="1m", help="CommitLog file size of both gateways (one upload per file)")
    ap.add_argument("--s3-nice", type=int, default=0,
                    help="run the S3 server at this niceness (a stand-in for an object store on other machines)")
    ap.add_argument("--pin", action="store_true",
                    help="the S3 server on the last CPU, both gateways and the producer on the others "
                         "(the object store's CPU then not taken from produce)")
    ap.add_argument("--produce-only", action="store_true",
                    help="only the interleaved produce rounds (skip the consume and request counts)")
    ap.add_argument("--upload-cost", action="store_true",
                    help="the upload path's own CPU per 100 MB in process (bench/tier_upload.py) instead")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="--upload-cost: cProfile the timed rounds, print the top N functions by own time")
    ap.add_argument("--disk-loss", action="store_true", help="time to serve again after a disk loss instead")
    ap.add_argument("--slow-store", action="store_true",
                    help="produce p50/p99 with the object store slow vs not instead (bench/tier_slow.py)")
    ap.add_argument("--delay-ms", type=float, default=100, help="--slow-store: delay of each chunk, each way")
    ap.add_argument("--rate", type=float, default=1 << 20, help="--slow-store: upload bytes/s through the slow link")
    ap.add_argument("--rate-records", type=int, default=3000, help="--slow-store: records/s produced (1 KB)")
    ap.add_argument("--seconds", type=float, default=5, help="--slow-store: seconds produced per gateway per round")
    ap.add_argument("--repeat", type=int, default=3, help="--disk-loss: runs of each scenario; --upload-cost: runs")
    ap.add_argument("--cluster-records", type=int, default=10_000, help="--disk-loss: records in the cluster")
    args = ap.parse_args()
    if args.upload_cost:
        from bench import tier_upload
        from gateway.config import _size
        tier_upload.main(args.repeat, args.records // 1000 or 100, _size(args.file_size), args.profile)
        return
    if args.slow_store:
        from bench import tier_slow
        tier_slow.main(args)
        return
    if args.disk_loss:
        from bench import tier_disk_loss
        tier_disk_loss.main(args.repeat, args.records, args.cluster_records)
        return
    with bench_workdir("bench-tier-", "bench-tier") as (work, s3, gateways):
        common = ["--commitlog-file-size", args.file_size]
        for name in ("plain", "tiered"):
            os.makedirs(os.path.join(work, name))
        plain = GatewayProcess(os.path.join(work, "plain", "data"), extra_args=common).start()
        gateways.append(plain)
        tiered = GatewayProcess(os.path.join(work, "tiered", "data"),
                                extra_args=common + s3.tier_args("bench-tier")).start()
        gateways.append(tiered)
        for g, configs in ((plain, {}), (tiered, {"remote.storage.enable": "true", "local.retention.ms": "1000"})):
            admin = AdminClient({"bootstrap.servers": g.kafka_bootstrap})
            admin.create_topics([NewTopic("t", 1, 1, config=configs)])["t"].result(30)
        ratios, figures, loads = [], {"plain": [], "tiered": []}, []
        by_name = {"plain": plain, "tiered": tiered}
        pids = {"plain": plain.proc.pid, "tiered": tiered.proc.pid, "s3": s3.pids()[0]}
        if args.s3_nice:
            for tid in os.listdir(f"/proc/{pids['s3']}/task"):  # Linux niceness is per thread; new ones inherit it
                os.setpriority(os.PRIO_PROCESS, int(tid), args.s3_nice)
        if args.pin:
            _pin(pids)
        committed = []  # CommitLog files committed to the tier by the end of each round (uploads keeping up?)
        during = []  # files committed while the tiered gateway was produced to, per round (uploads running?)
        cpu_s = {name: {k: [] for k in pids} for name in by_name}  # CPU seconds by process, per round
        for r in range(args.rounds):
            got = {}
            for name in rounds.order(r, ("plain", "tiered")):
                files_before = _files_committed(s3) if name == "tiered" else 0
                before = {k: cpu_seconds(pid) for k, pid in pids.items()}
                got[name] = produce(by_name[name].kafka_bootstrap, "t", args.records)
                for k, pid in pids.items():
                    cpu_s[name][k].append(round(cpu_seconds(pid) - before[k], 2))
                if name == "tiered":
                    during.append(_files_committed(s3) - files_before)
            for name in got:
                figures[name].append(got[name])
            ratios.append(got["tiered"] / got["plain"])
            loads.append(round(os.getloadavg()[0], 2))
            committed.append(_files_committed(s3))
            print(f"round {r}: tiered {got['tiered']:.1f} plain {got['plain']:.1f} MB/s, ratio {ratios[-1]:.3f}, "
                  f"files during {during[-1]}, load {loads[-1]}", flush=True)
        valid = [ratio for ratio, files in zip(ratios, during) if files > 0]
        verdict = rounds.compare(valid, "higher", "tiered", "plain")
        mb_per_round = args.records * len(VALUE) / 1e8  # CPU-s per 100 MB
        result = {"produce_mb_s": figures, "cpu_s_during_round": cpu_s, "ratio_per_round": ratios,
                  "files_committed_during_tiered_round": during,
                  "rounds_with_uploads": len(valid), "rounds_without_uploads_left_out": len(ratios) - len(valid),
                  "ratio_median": statistics.median(valid) if valid else None,
                  "ratio_min_max": [min(valid), max(valid)] if valid else None,
                  "ratio_ci": [verdict.ci_low, verdict.ci_high] if verdict else None,
                  "ratio_ci_coverage": verdict.coverage if verdict else None,
                  "verdict": verdict.verdict if verdict else "no round with uploads",
                  "load_avg": os.getloadavg(), "load_1min_per_round": loads,
                  "file_size": args.file_size, "s3_nice": args.s3_nice, "pinned": args.pin, "files_committed_after_round": committed,
                  "median_cpu_s_per_100mb": {f"{name}_round.{k}": round(statistics.median(v) / mb_per_round, 2)
                                             for name in cpu_s for k, v in cpu_s[name].items()}}
        if not args.produce_only:
            result.update(_reads(args, s3, plain, tiered))
        print(json.dumps(result, indent=1))
        os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
        with open(os.path.join(ROOT, "bench", "results", "tier.json"), "w") as f:
            json.dump(result, f, indent=1)


def _pin(pids: dict) -> None:
    """The S3 server alone on the last CPU; the gateways and this process (the producer's threads are
    started later from it) on the rest, the same in both halves of every round."""
    cpus = sorted(os.sched_getaffinity(0))
    store, rest = {cpus[-1]}, set(cpus[:-1])
    for name, pid in pids.items():
        procstat.pin(pid, store if name == "s3" else rest)
    procstat.pin(os.getpid(), rest)


def _files_committed(s3) -> int:
    """CommitLog files committed to the tier so far: one manifest each."""
    return sum(1 for k in s3.keys("bench-tier") if "/manifests/" in k)


def _reads(args, s3, plain, tiered) -> dict:
    """Consume the whole tiered topic cold and warm, the plain one from disk; S3 requests per GB."""
    total = args.records * args.rounds
    time.sleep(3)  # the last sealed files committed
    cold = consume(tiered.kafka_bootstrap, "t", total)
    warm = consume(tiered.kafka_bootstrap, "t", total)
    local = consume(plain.kafka_bootstrap, "t", total)
    keys = s3.keys("bench-tier")
    uploaded_gb = total * len(VALUE) / 1e9
    puts = sum(1 for k in keys if "/segments/" in k or "/manifests/" in k)
    return {"consume_tier_cold_mb_s": cold, "consume_tier_warm_mb_s": warm, "consume_local_mb_s": local,
            "puts_per_gb_uploaded": puts / uploaded_gb, "gets_per_gb_read_cold": puts / uploaded_gb}


if __name__ == "__main__":
    main()
