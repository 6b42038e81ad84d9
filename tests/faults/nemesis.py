"""A seeded nemesis: the schedule (fault class, target, when) is drawn from `random.Random(seed)`
before the run, so a seed names the same faults every time. Every fault class comes round in turn."""
from __future__ import annotations

import random
import signal
import threading
import time

from nodes import Nodes

FAULTS = ("isolate", "cut-from-etcd", "majority-without-etcd", "pause", "kill")


def schedule(seed: int, rounds: int, gateways: list[int]) -> list[dict]:
    rng = random.Random(seed)
    order = list(FAULTS)
    rng.shuffle(order)
    return [{"fault": order[r % len(order)], "target": rng.choice(gateways)} for r in range(rounds)]


class Nemesis:
    """Runs the schedule in a thread: fault for `fault_s` (a pause: TTL + 2 s), heal, `heal_s` to recover.
    `events` records each fault's start and heal times (monotonic, relative to `t0`)."""

    def __init__(self, nodes: Nodes, plan: list[dict], fault_s: float, heal_s: float, t0: float) -> None:
        self.nodes, self.plan, self.fault_s, self.heal_s, self.t0 = nodes, plan, fault_s, heal_s, t0
        self.events: list[dict] = []
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def now(self) -> float:
        return time.monotonic() - self.t0

    def _run(self) -> None:
        try:
            time.sleep(self.heal_s / 2)  # the load runs fault-free first
            for step in self.plan:
                event = {**step, "start": self.now()}
                self._inject(step["fault"], step["target"])
                event["healed"] = self.now()
                self.events.append(event)
                time.sleep(self.heal_s)
        except BaseException as e:  # reported by the runner; the cluster is healed there too
            self.error = e

    def _inject(self, fault: str, target: int) -> None:
        net, me = self.nodes.net, f"g{target}"
        others = [f"g{i}" for i in self.nodes.ids if i != target]
        if fault == "isolate":
            net.partition([me], [*others, "etcd"])
        elif fault == "cut-from-etcd":
            net.partition([me], ["etcd"])
        elif fault == "majority-without-etcd":  # the other gateways keep only each other; target keeps etcd
            net.partition(others, [me, "etcd"])
        elif fault == "pause":
            self.nodes.signal(target, signal.SIGSTOP)
            time.sleep(self.nodes.ttl + 2)  # past the lease TTL: the others elect
            self.nodes.signal(target, signal.SIGCONT)
            return
        elif fault == "kill":
            self.nodes.signal(target, signal.SIGKILL)
            self.nodes.procs[me].wait()
            time.sleep(2)
            self.nodes.start_gateway(target)
            return
        time.sleep(self.fault_s)
        net.heal()

    def start(self) -> "Nemesis":
        self.thread.start()
        return self
