"""`python -m bench.tls [--rounds N] [--seconds S] [--records N]` (`make bench-tls`): what TLS and
SASL_SSL cost the gateway's produce/consume throughput, beside what they cost Apache Kafka.

Each system runs once with three listeners side by side: PLAINTEXT, SSL (TLS, no client certificate)
and SASL_SSL (SCRAM-SHA-256 over TLS), the same certificate, and an authorizer on every listener
(Kafka's StandardAuthorizer, the gateway's `--authorizer acl`; the bench user and ANONYMOUS are
super users), so only the transport differs between the listeners. One measured run on a system is
librdkafka (a separate process, as in bench.kafka_client) producing 1 KiB records acks=1 for S seconds,
or reading N pre-filled 1 KiB records, over each of the three listeners back to back; it reports the
MB/s of each and the ratios SSL/PLAINTEXT and SASL_SSL/PLAINTEXT. Runs alternate between the systems
in rounds (bench.interleave), so the per-round ratio gateway/Kafka of each metric has a verdict.

The issue's bar: TLS must not cost the gateway a larger share of its throughput than it costs Kafka by
more than 10 points, i.e. per round (Kafka's SASL_SSL/PLAINTEXT - the gateway's) <= 0.10. Results go
to bench/results/tls.json and are printed as Markdown (docs/performance.md, "TLS and SASL_SSL").
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

from bench import report, rounds
from bench import scenarios as sc
from bench.brokers import ROOT, Gateway, KafkaBroker, free_port
from bench.interleave import Interleaver
from bench.scenarios import Unavailable
from security.credentials import CredentialStore
from tests.security.certs import make_certs

USER, PASSWORD = "bench", "bench-secret"
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_SSL")
SIZE = 1024
DATA_BUDGET = 3 << 30  # a system holding more is renewed (empty store, re-warmed) before its next round


def secured_kafka(workdir: str, certs) -> tuple[KafkaBroker, dict[str, str]]:
    """Kafka with PLAINTEXT, SSL and SASL_SSL listeners; SCRAM user `bench` made at format time."""
    keystore = os.path.join(workdir, "keystore.pem")
    os.makedirs(workdir, exist_ok=True)
    with open(keystore, "w") as out:
        for path in (certs.server_key, certs.server_cert):
            out.write(open(path).read())
    k = KafkaBroker(workdir, format_args=["--add-scram", f"SCRAM-SHA-256=[name={USER},password={PASSWORD}]"])
    ssl_port, sasl_port = free_port(), free_port()
    listeners = f"PLAINTEXT://127.0.0.1:{k.port},SSL://127.0.0.1:{ssl_port},SASL_SSL://127.0.0.1:{sasl_port}"
    k.extra = {
        "listeners": f"{listeners},CONTROLLER://127.0.0.1:{k.controller_port}",
        "advertised.listeners": listeners,
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256",
        "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config":
            "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": keystore,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": f"User:{USER};User:ANONYMOUS",
    }
    return k, {"PLAINTEXT": k.bootstrap, "SSL": f"127.0.0.1:{ssl_port}", "SASL_SSL": f"127.0.0.1:{sasl_port}"}


def add_bench_user(workdir: str) -> None:
    CredentialStore(os.path.join(workdir, "data", "config")).set_password(USER, PASSWORD)


def secured_gateway(workdir: str, certs) -> tuple[Gateway, dict[str, str]]:
    """The gateway with the same three listeners, user `bench` in its credential store."""
    add_bench_user(workdir)
    ssl_port, sasl_port = free_port(), free_port()
    g = Gateway(workdir, extra_args=[
        "--listener", f"TLS=SSL://127.0.0.1:{ssl_port}", "--listener", f"SASL=SASL_SSL://127.0.0.1:{sasl_port}",
        "--tls-cert", certs.server_cert, "--tls-key", certs.server_key, "--authorizer", "acl",
        "--super-users", f"User:{USER},User:ANONYMOUS"])
    return g, {"PLAINTEXT": g.bootstrap, "SSL": f"127.0.0.1:{ssl_port}", "SASL_SSL": f"127.0.0.1:{sasl_port}"}


def client_conf(protocol: str, ca: str) -> dict:
    if protocol == "PLAINTEXT":
        return {}
    conf = {"security.protocol": protocol, "ssl.ca.location": ca}
    if protocol.startswith("SASL"):
        conf.update({"sasl.mechanism": "SCRAM-SHA-256", "sasl.username": USER, "sasl.password": PASSWORD})
    return conf


def _with_ratios(mbs: dict[str, float]) -> dict:
    out = {f"{p} MB/s": mbs[p] for p in PROTOCOLS}
    for p in PROTOCOLS[1:]:
        out[f"{p}/PLAINTEXT"] = mbs[p] / mbs["PLAINTEXT"]
    return out


def produce_round(addresses: dict[str, str], ca: str, seconds: float) -> dict:
    mbs = {}
    for p in PROTOCOLS:
        r = sc.kafka_client(seconds + 150, cmd="produce", bootstrap=addresses[p], topic=sc.new_topic("tls"),
                            size=SIZE, acks="1", seconds=seconds, create=4, client_conf=client_conf(p, ca))
        if r["failed"]:
            raise Unavailable(f"{p}: {r['failed']} records failed: {r['errors']}")
        mbs[p] = r["mbps"]
    return _with_ratios(mbs)


def bounded_produce_round(system, addresses: dict[str, str], ca: str, seconds: float) -> dict:
    """A produce round, after renewing the system if its store passed DATA_BUDGET (7 rounds of 2 s
    write over 20 GB per system otherwise); a renewed system is warmed up again before it counts."""
    if system.data_bytes() > DATA_BUDGET:
        seed = (lambda: add_bench_user(system.workdir)) if isinstance(system, Gateway) else None
        system.renew(seed)
        produce_round(addresses, ca, seconds)
    return produce_round(addresses, ca, seconds)


def consume_round(addresses: dict[str, str], ca: str, topic: str, records: int) -> dict:
    mbs = {}
    for p in PROTOCOLS:
        r = sc.kafka_client(150, cmd="consume", bootstrap=addresses[p], topic=topic, records=records, timeout=120,
                            client_conf=client_conf(p, ca))
        if not r["complete"]:
            raise Unavailable(f"{p}: read {r['records']} of {records}")
        mbs[p] = r["mbps"]
    return _with_ratios(mbs)


def bar_lines(results: report.Results, scenarios: list[str]) -> list[str]:
    """Per scenario and secured protocol: each system's throughput ratio secured/PLAINTEXT, and the
    gateway's extra cost in points per round (Kafka's ratio - the gateway's), against the 10-point bar."""
    lines = ["| scenario | protocol | Kafka: secured / PLAINTEXT | gateway: secured / PLAINTEXT | "
             "gateway's extra cost, points: median (min–max) | bar ≤ 10 |", "|---|---|---|---|---|---|"]
    for scenario in scenarios:
        for p in PROTOCOLS[1:]:
            by = results.rows.get((scenario, f"{p}/PLAINTEXT"), {})
            k, g = by.get("kafka"), by.get("gateway")
            if not k or not g or len(k) != len(g):
                lines.append(f"| {scenario} | {p} | n/a | n/a | n/a | — |")
                continue
            extra = [100 * (a - b) for a, b in zip(k, g)]
            med = rounds.median(extra)
            lines.append(f"| {scenario} | {p} | {rounds.median(k):.2f} ({min(k):.2f}–{max(k):.2f}) | "
                         f"{rounds.median(g):.2f} ({min(g):.2f}–{max(g):.2f}) | {med:+.1f} ({min(extra):+.1f}–"
                         f"{max(extra):+.1f}) | {'met' if med <= 10 else 'NOT met'} |")
    return lines


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.tls")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=2.0, help="one produce run per listener")
    ap.add_argument("--records", type=int, default=200_000, help="records read back per listener")
    args = ap.parse_args(argv)
    began = time.monotonic()
    results = report.Results(references=("kafka",))
    inter = Interleaver(results, args.rounds, lambda: time.monotonic() - began > 3600)
    with tempfile.TemporaryDirectory(prefix="bench-tls-") as work:
        certs = make_certs(os.path.join(work, "certs"))
        kafka, k_addr = secured_kafka(os.path.join(work, "kafka"), certs)
        gateway, g_addr = secured_gateway(os.path.join(work, "gateway"), certs)
        addresses = {"kafka": k_addr, "gateway": g_addr}
        with kafka, gateway:
            systems = {"gateway": gateway, "kafka": kafka}
            produce = f"produce {SIZE} B acks=1 (librdkafka)"
            inter.run(produce, systems,
                      lambda n: bounded_produce_round(systems[n], addresses[n], certs.ca, args.seconds), "higher")
            consume = f"consume {SIZE} B (pre-filled, librdkafka)"
            try:  # a failed pre-fill costs the consume rows, not the produce rows already measured
                topics = {n: sc.prefill(addresses[n]["PLAINTEXT"], args.records, SIZE) for n in systems}
            except Unavailable as exc:
                print(f"consume rows skipped: pre-fill failed: {exc}", file=sys.stderr)
            else:
                inter.run(consume, systems,
                          lambda n: consume_round(addresses[n], certs.ca, topics[n], args.records), "higher")
    meta = report.machine("tls", time.monotonic() - began)
    table, bars = results.markdown(), "\n".join(bar_lines(results, [produce, consume]))
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "results", "tls.json"), "w") as f:
        json.dump({"meta": meta, "rounds": args.rounds, "seconds": args.seconds, "records": args.records,
                   "results": results.to_json()}, f, indent=1)
    print(f"\n{json.dumps(meta)}\n\n{table}\n\n{bars}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
