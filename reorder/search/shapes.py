"""One objective over the launch shapes a kernel serves, and the race that keeps it cheap.

A kernel tuned at one launch (one batch size) can lose at another: an RMSNorm whose loads
sit at the top of the kernel ran 1.29x at 1 row and 1.17x at 1024 rows, the same loads
placed above the reduction's barrier 1.35x and 1.07x (H200, 2026-11-30). With several
`--launch` shapes a candidate is checked at every one of them and timed at each; the search
minimises the weighted geometric mean of its per-shape ratios time(candidate)/time(original)
(a geometric mean, because a ratio of 0.5 at one shape and 2.0 at another is a wash, not a
win).

Timing every trial at every shape costs N times one shape. The race cuts that: a search
trial is timed first at the most informative shape; one clearly worse there than the
incumbent (and than each shape's best trial) is dropped and the rest are finished. *Clearly*
is learnt from the trials already timed at every shape: the CI says what noise can explain,
and the *reversal margin* says how far a trial worse at the first shape has ever made up
elsewhere (the top placement above is 5% behind at 1 row and 9% ahead at 1024 rows). Until
MIN_HISTORY trials are timed in full nothing is dropped.

Everything here is a pure function of measured ratios, so the rules are tested on the CPU.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

MIN_HISTORY = 3  # trials timed at every shape before any trial is dropped by the race
SAFETY = 0.01  # the log-ratio margin added to the learnt reversal margin ("clearly": ~1% more)


@dataclass(frozen=True, slots=True)
class Ratio:
    """time(candidate)/time(original) at one shape with its 95% CI (lower is better)."""

    value: float
    low: float
    high: float

    def line(self) -> str:
        return f"{self.value:.4f} [{self.low:.4f}, {self.high:.4f}]"

    def overlaps(self, other: Ratio) -> bool:
        """True when the two CIs share a point: the difference is within what noise explains."""
        return self.low <= other.high and other.low <= self.high


Row = Mapping[str, Ratio]  # shape label -> its ratio, for one candidate


def normalised(weights: Mapping[str, float]) -> dict[str, float]:
    """Weights summing to 1 (the user's may be any positive numbers: 1,1,2 or 0.25,0.25,0.5)."""
    total = sum(weights.values())
    return {label: w / total for label, w in weights.items()}


def geomean(row: Row, weights: Mapping[str, float]) -> Ratio:
    """The weighted geometric mean of a row's ratios, with a CI from the per-shape CIs taken as
    independent (each shape is timed on its own) and normal in log space: the lower and the
    upper half-widths are combined separately, so an asymmetric bootstrap CI stays so."""
    w = normalised({label: weights[label] for label in row})
    centre = sum(w[s] * math.log(r.value) for s, r in row.items())
    down = math.sqrt(sum((w[s] * (math.log(r.value) - math.log(r.low))) ** 2 for s, r in row.items()))
    up = math.sqrt(sum((w[s] * (math.log(r.high) - math.log(r.value))) ** 2 for s, r in row.items()))
    return Ratio(math.exp(centre), math.exp(centre - down), math.exp(centre + up))


def estimate(partial: Row, incumbent: Row, weights: Mapping[str, float]) -> Ratio:
    """The objective of a trial timed at some shapes only, the incumbent's ratios standing in
    at the others: a dropped trial's value for the sampler, worse than the incumbent's whenever
    the trial was worse where it was timed (so it is never reported as the best)."""
    row = {s: partial.get(s, incumbent[s]) for s in weights}
    return geomean(row, weights)


def _cov(xs: Sequence[float], ys: Sequence[float]) -> float:
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / len(xs)


def informative_order(
    labels: Sequence[str], weights: Mapping[str, float], history: Sequence[Row], seconds: Mapping[str, float]
) -> tuple[str, ...]:
    """The shapes in the order a search trial is timed at them, the most informative first: the
    one whose log ratio, over the trials timed at every shape, moves most with the objective's,
    per second of timing there (covariance, so a shape where every trial measures alike tells
    nothing, however heavy its weight). With too little history: heaviest weight first, then as
    given."""
    by_weight = sorted(labels, key=lambda s: (-weights[s], labels.index(s)))
    if len(history) < MIN_HISTORY:
        return tuple(by_weight)
    objective = [math.log(geomean(row, weights).value) for row in history]

    def info(label: str) -> float:
        per = [math.log(row[label].value) for row in history]
        return _cov(per, objective) / max(seconds.get(label, 1.0), 1e-3)

    return tuple(sorted(by_weight, key=lambda s: -info(s)))


def _time_at(shape: str) -> Callable[[Row], float]:
    """A row's time at `shape`, as a sort key."""
    return lambda row: row[shape].value


def _faster_at(shape: str) -> Callable[[Row, Row], bool]:
    """`better` for reversal_margin: a faster than b at `shape`."""
    return lambda a, b: a[shape].value < b[shape].value


def reversal_margin(history: Sequence[Row], first: str, better) -> float:
    """How far (log ratio at `first`) a trial behind another at `first` was ever ahead of it by
    `better(a, b)` (a better than b: at a shape, or overall), over every pair of fully timed
    trials; 0 when no such reversal was seen."""
    margin = 0.0
    for a in history:
        for b in history:
            if a is not b and better(a, b):
                margin = max(margin, math.log(a[first].value) - math.log(b[first].value))
    return margin


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether the race drops a trial after its first shape, and why (one line)."""

    drop: bool
    why: str


def race(
    first: str, measured: Ratio, history: Sequence[Row], weights: Mapping[str, float], min_history: int = MIN_HISTORY
) -> Verdict:
    """Drop a search trial timed at `first` only when its CI's low end there is behind the
    incumbent's high end (the best objective of the fully timed trials) by more than the
    objective's reversal margin, and behind each other shape's best trial by more than that
    shape's margin: it can then neither win overall nor be any shape's best (as far as the
    trials timed in full show). Too little history: never drop."""
    if len(history) < min_history:
        return Verdict(False, f"timed at every shape ({len(history)} of {min_history} trials timed in full so far)")
    lead = math.log(measured.low)
    incumbent = min(history, key=lambda row: geomean(row, weights).value)
    gap = lead - math.log(incumbent[first].high)
    need = reversal_margin(history, first, lambda a, b: geomean(a, weights).value < geomean(b, weights).value)
    if gap <= need + SAFETY:
        return Verdict(False, f"within {math.exp(need + SAFETY) - 1:.1%} of the incumbent at {first}")
    for shape in weights:
        if shape == first:
            continue
        best = min(history, key=_time_at(shape))
        margin = reversal_margin(history, first, _faster_at(shape))
        if lead - math.log(best[first].high) <= margin + SAFETY:
            return Verdict(False, f"it may still be the best at {shape}")
    return Verdict(
        True,
        f"dropped after {first}: {measured.line()} against the incumbent's {incumbent[first].line()}, "
        f"{math.exp(gap) - 1:.1%} behind where no trial timed in full made up more than {math.exp(need) - 1:.1%}",
    )


__all__ = [
    "MIN_HISTORY",
    "Ratio",
    "Row",
    "Verdict",
    "estimate",
    "geomean",
    "informative_order",
    "normalised",
    "race",
    "reversal_margin",
]
