"""CPU time of processes from /proc, thread by thread and in ns (/proc/PID/stat counts 10 ms ticks,
too coarse for a broker's share of a sub-second run)."""
from __future__ import annotations

import os


def thread_cpu_ns(pid: int) -> dict[int, int]:
    """CPU time of each live thread of a process, in ns, by thread id (the first field of
    /proc/PID/task/TID/schedstat: exact, where /proc/PID/stat counts 10 ms ticks); {} if it is gone."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                out[int(tid)] = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # the thread ended meanwhile
    return out


def cpu_used(before: dict[int, int], after: dict[int, int]) -> float:
    """CPU seconds between two samples of thread_cpu_ns, thread by thread: a thread born in between
    counts in full; one that ended in between is missed (its use since the first sample is lost)."""
    return sum(ns - before.get(tid, 0) for tid, ns in after.items()) / 1e9


def pin(pid: int, cpus: set[int]) -> None:
    """Every thread of a process onto `cpus` (Linux affinity is per thread; threads started later
    inherit their creator's, so pinning the existing ones pins the process from now on)."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except (ProcessLookupError, FileNotFoundError):
            pass  # the thread ended meanwhile
