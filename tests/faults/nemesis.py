"""A seeded nemesis: the schedule (fault class, target, its argument) is drawn from
`random.Random(seed)` before the run, so a seed names the same faults every time. Every fault class
comes round in turn. Classes:
- isolate: one gateway cut from everyone (the client still reaches it);
- cut-from-etcd: one gateway cut from etcd only;
- majority-without-etcd: the other gateways cut from etcd (the target keeps it);
- one-way: asymmetric; arg "in": the target hears nothing from the others and etcd, "out": they hear
  nothing from it;
- bad-link: the target's link loses 20% of its inbound packets, is slow and reorders (netns.bad_link);
- pause: SIGSTOP past the lease TTL;
- kill: kill -9 and restart;
- clock-jump: the target's wall clock jumps by arg seconds (forward or back), then back to true time;
- disk-full: every free block of the target's data disk taken, then freed;
- fsync-error: the target's fsync/fdatasync fail with EIO (fsync_fault.c, preloaded) for the fault's
  length; a gateway that stops on it (exit 3: it acknowledges nothing it could not sync) is restarted."""
from __future__ import annotations

import random
import signal
import subprocess
import threading
import time

import disk
import fsync_fault
from nodes import Nodes

FAULTS = ("isolate", "cut-from-etcd", "majority-without-etcd", "one-way", "bad-link", "pause", "kill",
          "clock-jump", "disk-full", "fsync-error")
CLOCK_JUMPS = (-3600, -300, 300, 3600)
# A restart's time to open its Kafka port: at load 30 on 2 cores a gateway start took 20-60 s; a restart
# that missed the 60 s the runner allows would end the nemesis (and the schedule) with an error.
START_S = 240.0


def _arg(fault: str, rng: random.Random):
    if fault == "one-way":
        return rng.choice(("in", "out"))
    if fault == "clock-jump":
        return rng.choice(CLOCK_JUMPS)
    return None


def schedule(seed: int, rounds: int, gateways: list[int], faults: tuple[str, ...] = FAULTS) -> list[dict]:
    rng = random.Random(seed)
    order = list(faults)
    rng.shuffle(order)
    plan = []
    for r in range(rounds):
        fault = order[r % len(order)]
        plan.append({"fault": fault, "target": rng.choice(gateways), "arg": _arg(fault, rng)})
    return plan


class Nemesis:
    """Runs the schedule in a thread: fault for `fault_s` (a pause: TTL + 2 s), heal, `heal_s` to recover.
    `events` records each fault's start and heal times (monotonic, relative to `t0`). `finished` is set
    after the last fault; the thread itself lives on until `release()`: a gateway it restarted has it
    as parent thread, and PR_SET_PDEATHSIG (die_with_parent) sends SIGTERM when that *thread* exits
    (the first runs lost the restarted gateway that way, right after the schedule)."""

    def __init__(self, nodes: Nodes, plan: list[dict], fault_s: float, heal_s: float, t0: float) -> None:
        self.nodes, self.plan, self.fault_s, self.heal_s, self.t0 = nodes, plan, fault_s, heal_s, t0
        self.events: list[dict] = []
        self.error: BaseException | None = None
        self.finished, self._released = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def now(self) -> float:
        return time.monotonic() - self.t0

    def _run(self) -> None:
        try:
            time.sleep(self.heal_s / 2)  # the load runs fault-free first
            for step in self.plan:
                event = {**step, "start": self.now()}
                event["detail"] = self._inject(step["fault"], step["target"], step.get("arg"))
                event["healed"] = self.now()
                self.events.append(event)
                time.sleep(self.heal_s)
        except BaseException as e:  # reported by the runner; the cluster is healed there too
            if isinstance(e, subprocess.CalledProcessError):  # what the command said, in the report
                e = RuntimeError(f"{' '.join(map(str, e.cmd))} exited {e.returncode}: {(e.stderr or '').strip()}")
            self.error = e
        self.finished.set()
        self._released.wait()

    def release(self) -> None:
        """The run is over (its processes stopped): let the thread end."""
        self._released.set()
        self.thread.join()

    def _inject(self, fault: str, target: int, arg) -> str | None:
        """Hold the fault, heal it; a note on what happened (e.g. the bytes a disk-full took)."""
        net, me = self.nodes.net, f"g{target}"
        others = [f"g{i}" for i in self.nodes.ids if i != target]
        if fault == "isolate":
            net.partition([me], [*others, "etcd"])
        elif fault == "cut-from-etcd":
            net.partition([me], ["etcd"])
        elif fault == "majority-without-etcd":  # the other gateways keep only each other; target keeps etcd
            net.partition(others, [me, "etcd"])
        elif fault == "one-way":
            if arg == "in":
                net.drop_inbound(me, [*others, "etcd"])
            else:
                for node in [*others, "etcd"]:
                    net.drop_inbound(node, [me])
        elif fault == "bad-link":
            net.bad_link(me, loss=0.2, rate_kbit=512, reorder=0.25)
        elif fault == "pause":
            self.nodes.signal(target, signal.SIGSTOP)
            time.sleep(self.nodes.ttl + 2)  # past the lease TTL: the others elect
            self.nodes.signal(target, signal.SIGCONT)
            return None
        elif fault == "kill":
            self.nodes.signal(target, signal.SIGKILL)
            self.nodes.procs[me].wait()
            time.sleep(2)
            self.nodes.start_gateway(target, timeout=START_S)
            return None
        elif fault == "clock-jump":
            self.nodes.set_clock(target, arg)
            time.sleep(self.fault_s)
            self.nodes.set_clock(target, 0)
            return f"{arg:+d} s"
        elif fault == "disk-full":
            note = f"{disk.fill(self.nodes.data_dir(target)) >> 20} MiB taken"
            time.sleep(self.fault_s)
            disk.release(self.nodes.data_dir(target))
            return f"{note}, {self._restart_if_stopped(target)}"
        elif fault == "fsync-error":
            fsync_fault.fail(self.nodes.fsync_trigger(target))
            time.sleep(self.fault_s)
            fsync_fault.heal(self.nodes.fsync_trigger(target))
            return self._restart_if_stopped(target)
        time.sleep(self.fault_s)
        net.heal()
        return arg

    def _restart_if_stopped(self, target: int) -> str:
        """A gateway stops on a disk error (exit 3, as Kafka halts on a failed log dir): start it again
        at the heal, so the next faults meet three gateways. Seed 2612's long run left g2 down from
        its disk-full (the 26th fault) to the end of its schedule."""
        status = self.nodes.procs[f"g{target}"].poll()
        if status is None:
            return "still running"
        self.nodes.start_gateway(target, timeout=START_S)
        return f"stopped (exit {status}), restarted"

    def start(self) -> "Nemesis":
        self.thread.start()
        return self
