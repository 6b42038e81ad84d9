"""Throughput under connection pressure (issue 18): a normal librdkafka producer (and consumer) on a
gateway that holds 5 000 idle and 200 slowloris connections open, next to the same gateway without
them, in alternating rounds (quiet, pressured, then pressured, quiet, ... as bench.rounds.order).

The connections come from a separate holder process (`python -m bench.pressure hold ...`), so the
client's descriptors and CPU are its own: idle ones (half on each port) send nothing; slowloris
ones announce a 1 MiB frame and send one byte a second, and reconnect when the gateway drops them
(--request-deadline-ms). Rows for `make bench` (`rows`, the full plan) and, standalone,
`python -m bench.pressure [--rounds N] [--write-docs]` (its own gateway; writes docs/robustness.md).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

from bench import report, rounds
from bench import scenarios as sc
from bench.brokers import ROOT, Gateway
from bench.procstat import cpu_used

IDLE, SLOWLORIS = 5000, 200
SIZE, ACKS = 100, "1"
DOCS = os.path.join(ROOT, "docs", "robustness.md")


# ---------------------------------------------------------------- the holder process

async def _hold(kafka_port: int, remoting_port: int, idle: int, slowloris: int) -> None:
    import trio

    ports = (kafka_port, remoting_port)
    held = [await trio.open_tcp_stream("127.0.0.1", ports[i % 2]) for i in range(idle)]

    async def slow(port: int) -> None:
        while True:
            try:
                stream = await trio.open_tcp_stream("127.0.0.1", port)
                await stream.send_all((1 << 20).to_bytes(4, "big"))
                while True:
                    await trio.sleep(1.0)
                    await stream.send_all(b"\x00")
            except OSError:  # dropped by the request deadline (or refused): come back
                await trio.sleep(0.2)
            except trio.BrokenResourceError:
                await trio.sleep(0.2)

    async with trio.open_nursery() as nursery:
        for i in range(slowloris):
            nursery.start_soon(slow, ports[i % 2])
        await trio.sleep(0.5)
        print("ready", len(held), flush=True)
        await trio.sleep_forever()


class Pressure:
    """The holder process while in the `with` block."""

    def __init__(self, gateway: Gateway, idle: int = IDLE, slowloris: int = SLOWLORIS) -> None:
        self.cmd = [sys.executable, "-m", "bench.pressure", "hold", str(gateway.kafka_port),
                    str(gateway.remoting_port), str(idle), str(slowloris)]
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> "Pressure":
        self.proc = subprocess.Popen(self.cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("ready"):
            self.__exit__()
            raise sc.Unavailable(f"the connection holder did not start ({line.strip()!r})")
        time.sleep(1.0)  # the gateway accepts the last ones
        return self

    def __exit__(self, *exc) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
            time.sleep(3.0)  # the gateway closes its ends (about 1 s of CPU): not in the next run


# ---------------------------------------------------------------- measuring

def measure(gateway: Gateway, n_rounds: int, seconds: float, say=print) -> dict[str, dict[str, list[float]]]:
    """{"produce rec/s": {"quiet": [...], "pressured": [...]}, "produce CPU s/GB": ..., "consume rec/s": ...,
    "consume CPU s/GB": ...}, paired by round (CPU: the gateway's, per GB of payload moved)."""
    topic = sc.prefill(gateway.bootstrap, 100_000, SIZE)
    out: dict[str, dict[str, list[float]]] = {}

    def timed(what: str, state: str, fn) -> float:
        cpu0 = gateway.cpu_sample()
        r = fn()
        cpu = cpu_used(cpu0, gateway.cpu_sample())
        out.setdefault(f"{what} rec/s", {"quiet": [], "pressured": []})[state].append(r["rec/s"])
        out.setdefault(f"{what} CPU s/GB", {"quiet": [], "pressured": []})[state].append(cpu / (r[sc.BYTES] / 1e9))
        return r["rec/s"]

    def run(state: str) -> None:
        p = timed("produce", state, lambda: sc.librdkafka_produce(gateway.bootstrap, SIZE, ACKS, seconds))
        c = timed("consume", state, lambda: sc.librdkafka_consume(gateway.bootstrap, topic, 100_000))
        say(f"  {state}: produce {p:,.0f} rec/s, consume {c:,.0f} rec/s")

    run("quiet")  # warm-up, not counted
    for by_state in out.values():
        for vals in by_state.values():
            vals.clear()
    for i in range(n_rounds):
        for state in rounds.order(i, ("quiet", "pressured")):
            if state == "quiet":
                run(state)
            else:
                with Pressure(gateway):
                    run(state)
    return out


def rows(runner, gateway: Gateway) -> None:
    """The bench rows (gateway only): recorded on the runner's results."""
    held = f"with {IDLE} idle + {SLOWLORIS} slowloris connections open"
    try:
        if runner.over_budget():
            raise sc.Unavailable("time budget exhausted")
        measured = measure(gateway, runner.plan.rounds, runner.plan.seconds)
    except sc.Unavailable as e:
        for what in ("produce", "consume"):
            runner.results.na(f"{what} {SIZE} B (librdkafka) {held}", "gateway", str(e))
        return
    for key, by_state in measured.items():
        what, metric = key.split(" ", 1)
        for state, vals in by_state.items():
            name = f"{what} {SIZE} B (librdkafka) " + (held if state == "pressured" else "(same rounds, quiet)")
            for v in vals:
                runner.results.add(name, metric, "gateway", v)
            for ref in ("kafka", "rocketmq"):
                runner.results.na(name, ref, "gateway only (connection pressure)")


def markdown(measured: dict, n_rounds: int, seconds: float) -> str:
    lines = [f"Latest `make bench-pressure` ({time.strftime('%Y-%m-%d', time.gmtime())}, {n_rounds} rounds, "
             f"produce runs of {seconds:g} s, consume reads 100 000 pre-filled records): librdkafka with "
             f"{IDLE} idle and {SLOWLORIS} slowloris connections held open by another process, next to the same "
             "gateway without them. CPU: the gateway's, per GB of payload.", "",
             "| 100 B records | quiet: median (min–max) | pressured: median (min–max) | pressured / quiet: median "
             "of per-round ratios (min–max; CI) |", "|---|---|---|---|"]
    for key, by_state in measured.items():
        q, p = by_state["quiet"], by_state["pressured"]
        better = "lower" if key.endswith("s/GB") else "higher"
        cmp = rounds.compare(rounds.per_round_ratios(p, q), better, "pressured", "quiet")
        cell = "n/a" if cmp is None else (f"{cmp.median:.2f} ({cmp.low:.2f}–{cmp.high:.2f}; "
                                          f"{cmp.ci_low:.2f}–{cmp.ci_high:.2f}): {cmp.verdict}")
        lines.append(f"| {key} | {_spread(q)} | {_spread(p)} | {cell} |")
    return "\n".join(lines)


def _spread(vals: list[float]) -> str:
    if not vals:
        return "n/a"
    return f"{report.fmt(rounds.median(vals))} ({report.fmt(min(vals))}–{report.fmt(max(vals))})"


def write_docs(text: str) -> None:
    report.write_marked(DOCS, "pressure", text, "## Throughput under connection pressure (`make bench-pressure`)")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["hold"]:
        import trio
        trio.run(_hold, *map(int, argv[1:5]))
        return 0
    ap = argparse.ArgumentParser(prog="python -m bench.pressure")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--write-docs", action="store_true")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rocketgate-pressure-") as tmp:
        g = Gateway(tmp).start()
        try:
            measured = measure(g, args.rounds, args.seconds)
        finally:
            g.kill9()
    text = markdown(measured, args.rounds, args.seconds)
    print(text)
    if args.write_docs:
        write_docs(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
