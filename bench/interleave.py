"""Run one scenario on two (or one) running systems in alternating rounds and record the values paired
by round: one uncounted warm-up run per system, then rounds of A B, B A, A B ... (bench.rounds.order).
A round counts only if every system finished it (a failed run is retried once), so value i of each
system is from round i.

The broker's CPU time (per thread, /proc/PID/task/TID/schedstat) is read around each run; a run that reports
the payload bytes it moved (scenarios.BYTES) also yields a "broker CPU s/GB" row.
"""
from __future__ import annotations

from typing import Callable

from bench import report, rounds
from bench.procstat import cpu_used
from bench.scenarios import BYTES, Unavailable

CPU_METRIC = "broker CPU s/GB"


class Interleaver:
    def __init__(self, results: report.Results, n_rounds: int, over_budget: Callable[[], bool]):
        self.results, self.n_rounds, self.over_budget = results, n_rounds, over_budget

    def run(self, scenario: str, systems: dict, fn: Callable[[str], dict], better: str | None = None,
            warm_fn: Callable[[str], dict] | None = None) -> dict[str, list[dict]]:
        """`fn(name)` runs one repetition on system `name` (systems: name -> running System) and returns
        its metrics; `warm_fn` (default `fn`) is the uncounted warm-up. Returns the counted runs per
        system; a failure marks that system n/a and ends the scenario with the rounds done so far."""
        names = tuple(systems)
        done: dict[str, list[dict]] = {n: [] for n in names}
        try:
            for name in names:
                self._budget(scenario)
                self._one(systems[name], name, warm_fn or fn)
            for i in range(self.n_rounds):
                self._budget(scenario)
                this_round = {name: self._one(systems[name], name, fn) for name in rounds.order(i, names)}
                for name in names:
                    done[name].append(this_round[name])
                    for metric, value in this_round[name].items():
                        self.results.add(scenario, metric, name, value, better if metric != CPU_METRIC else "lower")
                self.results.paired.add(scenario)
        except _Failed as f:
            for name in names if f.system == "all" else (f.system,):
                self.results.na(scenario, name, f.reason)
            print(f"  {scenario} [{f.system}]: n/a ({f.reason})", flush=True)
        self._print(scenario, names, done)
        return done

    def record(self, scenario: str, metric: str, values: dict[str, list[float]], better: str | None = None) -> None:
        """Values already paired by round (value i of each system from round i), such as the slices
        of one client that alternates between the systems itself."""
        n = min(len(v) for v in values.values())
        for name, vals in values.items():
            for v in vals[:n]:
                self.results.add(scenario, metric, name, v, better)
        self.results.paired.add(scenario)
        self._print(scenario, tuple(values), {name: [{metric: v} for v in vals[:n]] for name, vals in values.items()})

    def _budget(self, scenario: str) -> None:
        if self.over_budget():
            raise _Failed("all", "time budget exhausted")

    def _one(self, system, name: str, fn: Callable[[str], dict]) -> dict:
        """One run, retried once if it fails (a client that timed out on a starved machine); a second
        failure ends the scenario for this system."""
        for attempt in (1, 2):
            cpu0 = system.cpu_sample()
            try:
                metrics = dict(fn(name))
                break
            except Exception as e:  # noqa: BLE001 - one failed measurement must not end the run
                reason = str(e) if isinstance(e, Unavailable) else f"{type(e).__name__}: {e}"
                if attempt == 2 or self.over_budget():
                    raise _Failed(name, reason)
                print(f"    [{name}] run failed, retrying once: {reason[:200]}", flush=True)
        cpu = cpu_used(cpu0, system.cpu_sample())
        moved = metrics.pop(BYTES, None)
        if moved:
            metrics[CPU_METRIC] = cpu / (moved / 1e9)
        return metrics

    def _print(self, scenario: str, names: tuple[str, ...], done: dict[str, list[dict]]) -> None:
        if not all(done[n] for n in names):
            return
        metric = next(iter(done[names[0]][0]))
        cells = [f"{n}={report.fmt(rounds.median([m[metric] for m in done[n]]))}" for n in names]
        line = f"  {scenario} {metric}: " + ", ".join(cells) + f" ({len(done[names[0]])} rounds)"
        if len(names) == 2:
            cmp = self.results.compare(scenario, metric, names[1])
            if cmp:
                line += f"; {names[0]}/{names[1]} {report.ratio_cell(cmp.median, cmp)} {cmp.verdict}"
        print(line, flush=True)


class _Failed(Exception):
    def __init__(self, system: str, reason: str):
        super().__init__(reason)
        self.system, self.reason = system, reason

