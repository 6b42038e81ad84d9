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

from bench import rounds
from bench import scenarios as sc
from bench.brokers import ROOT, Gateway

IDLE, SLOWLORIS = 5000, 200
SIZE, ACKS = 100, "1"
DOCS = os.path.join(ROOT, "docs", "robustness.md")
BEGIN, END = "<!-- pressure: begin -->", "<!-- pressure: end -->"


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


# ---------------------------------------------------------------- measuring

def measure(gateway: Gateway, n_rounds: int, seconds: float, say=print) -> dict[str, dict[str, list[float]]]:
    """{"produce": {"quiet": [...], "pressured": [...]}, "consume": {...}} in rec/s, paired by round."""
    topic = sc.prefill(gateway.bootstrap, 100_000, SIZE)
    out = {"produce": {"quiet": [], "pressured": []}, "consume": {"quiet": [], "pressured": []}}

    def run(state: str) -> None:
        p = sc.librdkafka_produce(gateway.bootstrap, SIZE, ACKS, seconds)["rec/s"]
        c = sc.librdkafka_consume(gateway.bootstrap, topic, 100_000)["rec/s"]
        out["produce"][state].append(p)
        out["consume"][state].append(c)
        say(f"  {state}: produce {p:,.0f} rec/s, consume {c:,.0f} rec/s")

    run("quiet")  # warm-up, not counted
    for k in out.values():
        for v in k.values():
            v.clear()
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
    scen = f"{{}} {SIZE} B (librdkafka) with {IDLE} idle + {SLOWLORIS} slowloris connections open"
    try:
        if runner.over_budget():
            raise sc.Unavailable("time budget exhausted")
        measured = measure(gateway, runner.plan.rounds, runner.plan.seconds)
    except sc.Unavailable as e:
        for what in ("produce", "consume"):
            runner.results.na(scen.format(what), "gateway", str(e))
        return
    for what, by_state in measured.items():
        for state, vals in by_state.items():
            name = scen.format(what) if state == "pressured" else f"{what} {SIZE} B (librdkafka), same rounds, quiet"
            for v in vals:
                runner.results.add(name, "rec/s", "gateway", v, "higher")
            for ref in ("kafka", "rocketmq"):
                runner.results.na(name, ref, "gateway only (connection pressure)")


def markdown(measured: dict, n_rounds: int, seconds: float) -> str:
    lines = [f"Latest `python -m bench.pressure` ({time.strftime('%Y-%m-%d', time.gmtime())}, {n_rounds} rounds, "
             f"produce runs of {seconds:g} s, consume reads 100 000 pre-filled records): librdkafka with "
             f"{IDLE} idle and {SLOWLORIS} slowloris connections held open by another process, next to the same "
             "gateway without them.", "",
             "| rec/s, median (min–max) | quiet | pressured | pressured / quiet, median of per-round ratios "
             "(min–max) |", "|---|---|---|---|"]
    for what, by_state in measured.items():
        q, p = by_state["quiet"], by_state["pressured"]
        cmp = rounds.compare(rounds.per_round_ratios(p, q), "higher", "pressured", "quiet")
        cell = "n/a" if cmp is None else f"{cmp.median:.2f} ({cmp.low:.2f}–{cmp.high:.2f}): {cmp.verdict}"
        lines.append(f"| {what} {SIZE} B | {_spread(q)} | {_spread(p)} | {cell} |")
    return "\n".join(lines)


def _spread(vals: list[float]) -> str:
    if not vals:
        return "n/a"
    return f"{rounds.median(vals):,.0f} ({min(vals):,.0f}–{max(vals):,.0f})"


def write_docs(text: str) -> None:
    with open(DOCS, encoding="utf-8") as f:
        page = f.read()
    block = f"{BEGIN}\n{text}\n{END}"
    if BEGIN in page:
        page = page[:page.index(BEGIN)] + block + page[page.index(END) + len(END):]
    else:
        page = page.rstrip("\n") + "\n\n## Throughput under connection pressure (`make bench-pressure`)\n\n" \
            + block + "\n"
    with open(DOCS, "w", encoding="utf-8") as f:
        f.write(page)


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
