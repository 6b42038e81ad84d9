"""Per-round ratios of two interleaved systems and the verdict they support (pure logic, no I/O).

Two systems A and B run the same scenario in rounds, A and B back to back (see bench.interleave), so a
burst of load from the other jobs on the machine hits both halves of a round alike. The comparison is
the median of the per-round ratios A_i / B_i, with their min–max and interquartile range; the verdict
says whether the rounds support a conclusion at all:

- "too few rounds"   fewer than MIN_ROUNDS paired rounds;
- "too noisy"        max/min of the per-round ratios > NOISY_FACTOR (the rounds disagree on the size);
- "inconclusive"     the ratios straddle 1.0 by more than MARGIN on both sides (they disagree on the sign);
- "same"            the median lies within ±MARGIN of 1.0;
- "<A> better" / "<B> better"  otherwise, by the metric's direction (higher rec/s, lower ms).
"""
from __future__ import annotations

import dataclasses

MIN_ROUNDS = 5
MARGIN = 0.05          # ±5 %: smaller differences are not claimed
NOISY_FACTOR = 1.5     # per-round ratios further apart than this say the machine, not the systems


def median(xs: list[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def quartiles(xs: list[float]) -> tuple[float, float]:
    """Q1 and Q3 as the medians of the lower and upper halves (the middle value left out for odd n)."""
    s = sorted(xs)
    half = len(s) // 2
    if half == 0:
        return s[0], s[0]
    return median(s[:half]), median(s[len(s) - half:])


def order(round_index: int, systems: tuple[str, ...]) -> tuple[str, ...]:
    """A B, then B A, then A B ...: neither system always runs right after the other's load."""
    return systems if round_index % 2 == 0 else tuple(reversed(systems))


def per_round_ratios(a: list[float], b: list[float]) -> list[float]:
    """A_i / B_i for the rounds where both have a value and B's is not zero."""
    return [x / y for x, y in zip(a, b) if y]


@dataclasses.dataclass(frozen=True)
class Comparison:
    ratios: list[float]
    median: float
    low: float
    high: float
    q1: float
    q3: float
    verdict: str

    @property
    def conclusive(self) -> bool:
        return not self.verdict.startswith(("too ", "inconclusive"))


def compare(ratios: list[float], better: str, a: str = "A", b: str = "B") -> Comparison | None:
    """The verdict of per-round ratios A/B; `better` is "higher" or "lower" (the metric's direction)."""
    if not ratios:
        return None
    lo, hi, mid = min(ratios), max(ratios), median(ratios)
    q1, q3 = quartiles(ratios)
    if len(ratios) < MIN_ROUNDS:
        verdict = f"too few rounds ({len(ratios)} < {MIN_ROUNDS})"
    elif lo <= 0 or hi / lo > NOISY_FACTOR:
        verdict = f"too noisy (max/min {hi / lo:.2f} > {NOISY_FACTOR})" if lo > 0 else "too noisy (a zero round)"
    elif lo < 1 / (1 + MARGIN) and hi > 1 + MARGIN:
        verdict = f"inconclusive (rounds straddle 1.0 beyond ±{MARGIN:.0%})"
    elif 1 / (1 + MARGIN) <= mid <= 1 + MARGIN:
        verdict = f"same (within ±{MARGIN:.0%})"
    else:
        a_better = (mid > 1) == (better == "higher")
        verdict = f"{a if a_better else b} better"
    return Comparison(list(ratios), mid, lo, hi, q1, q3, verdict)
