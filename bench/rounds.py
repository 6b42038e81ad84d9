"""Per-round ratios of two interleaved systems and the verdict they support (pure logic, no I/O).

Two systems A and B run the same scenario in rounds, A and B back to back (see bench.interleave), so a
burst of load from the other jobs on the machine hits both halves of a round alike. The comparison is
the median of the per-round ratios A_i / B_i, with their min–max and interquartile range (Q1–Q3, the
hinges of the middle half of the rounds, so that one round hit by a burst cannot decide the verdict):

- "too few rounds"   fewer than MIN_ROUNDS paired rounds;
- "too noisy"        Q3/Q1 of the per-round ratios > NOISY_FACTOR (the rounds disagree on the size);
- "inconclusive"     Q1 < 1/(1+MARGIN) and Q3 > 1+MARGIN (the rounds disagree on the sign);
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
    """Q1 and Q3 as Tukey's hinges: the medians of the lower and upper halves, the middle value in
    both for odd n (for 5 rounds: the 2nd lowest and 2nd highest, so one outlier moves neither)."""
    s = sorted(xs)
    half = (len(s) + 1) // 2
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
    elif q1 <= 0 or q3 / q1 > NOISY_FACTOR:
        verdict = f"too noisy (Q3/Q1 {q3 / q1:.2f} > {NOISY_FACTOR})" if q1 > 0 else "too noisy (zero rounds)"
    elif q1 < 1 / (1 + MARGIN) and q3 > 1 + MARGIN:
        verdict = f"inconclusive (Q1–Q3 {q1:.2f}–{q3:.2f} straddles 1.0 beyond ±{MARGIN:.0%})"
    elif 1 / (1 + MARGIN) <= mid <= 1 + MARGIN:
        verdict = f"same (within ±{MARGIN:.0%})"
    else:
        a_better = (mid > 1) == (better == "higher")
        verdict = f"{a if a_better else b} better"
    return Comparison(list(ratios), mid, lo, hi, q1, q3, verdict)
