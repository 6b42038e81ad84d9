"""Per-round ratios of two interleaved systems and the verdict they support (pure logic, no I/O).

Two systems A and B run the same scenario in rounds, A and B back to back (see bench.interleave), so a
burst of load from the other jobs on the machine hits both halves of a round alike. The comparison is
the median of the per-round ratios A_i / B_i with a distribution-free confidence interval of that
median (order statistics, as in the sign test: no assumption about how the noise is distributed).
With 5 rounds the interval is min–max (94 %); more rounds narrow it (9 rounds: 2nd lowest–2nd highest,
96 %), so a noisy machine needs more rounds, not a different method. The verdict, from the interval
[lo, hi] of at least CONFIDENCE:

- "too few rounds"   fewer than MIN_ROUNDS paired rounds;
- "<A> better" / "<B> better"  lo > 1+MARGIN or hi < 1/(1+MARGIN), by the metric's direction;
- "same"            the interval lies within ±MARGIN of 1.0;
- "too noisy"        otherwise, when hi/lo > NOISY_FACTOR (more rounds or a quieter machine needed);
- "inconclusive"     otherwise (the interval reaches past the margin on one side only, or straddles it).
"""
from __future__ import annotations

import dataclasses
from math import comb

MIN_ROUNDS = 5
MARGIN = 0.05          # ±5 %: smaller differences are not claimed
NOISY_FACTOR = 1.5     # a confidence interval wider than this says the machine, not the systems
CONFIDENCE = 0.90


def median(xs: list[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def median_interval(xs: list[float], confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """(lo, hi, coverage): the order statistics x(k), x(n+1-k) around the median, for the largest k
    with P(Binomial(n, 1/2) < k) <= (1 - confidence) / 2; min–max when n is too small for that."""
    s = sorted(xs)
    n = len(s)
    k, below = 0, 0.0
    while k < n // 2 and below + comb(n, k) / 2**n <= (1 - confidence) / 2:
        below += comb(n, k) / 2**n
        k += 1
    k = max(k, 1)
    coverage = 1 - 2 * sum(comb(n, i) for i in range(k)) / 2**n
    return s[k - 1], s[n - k], coverage


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
    low: float          # min and max of the per-round ratios
    high: float
    ci_low: float       # the confidence interval of the median
    ci_high: float
    coverage: float
    verdict: str

    @property
    def conclusive(self) -> bool:
        return not self.verdict.startswith(("too ", "inconclusive"))


def compare(ratios: list[float], better: str, a: str = "A", b: str = "B") -> Comparison | None:
    """The verdict of per-round ratios A/B; `better` is "higher" or "lower" (the metric's direction)."""
    if not ratios:
        return None
    lo, hi, coverage = median_interval(ratios)
    up, down = 1 + MARGIN, 1 / (1 + MARGIN)
    if len(ratios) < MIN_ROUNDS:
        verdict = f"too few rounds ({len(ratios)} < {MIN_ROUNDS})"
    elif lo > up or hi < down:
        verdict = f"{a if (lo > up) == (better == 'higher') else b} better"
    elif lo >= down and hi <= up:
        verdict = f"same (within ±{MARGIN:.0%})"
    elif lo <= 0 or hi / lo > NOISY_FACTOR:
        verdict = f"too noisy (CI wider than ×{NOISY_FACTOR}: more rounds)"
    else:
        verdict = f"inconclusive (CI reaches past ±{MARGIN:.0%})"
    return Comparison(list(ratios), median(ratios), min(ratios), max(ratios), lo, hi, coverage, verdict)
