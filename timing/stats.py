"""Paired-ratio statistics for A/B kernel timing, in pure numpy.

Estimator (chosen, and why): each round times A and B back to back, so slow
drift (clock, temperature, a neighbour's load) hits both halves of a round alike.
We therefore work with per-round log ratios d_i = log(b_i / a_i), which cancels
that drift, and report

    ratio = exp(trimmed_mean(d, 10% each side))

- log makes the answer symmetric: swapping A and B gives exactly 1/ratio;
- the trimmed mean discards rounds hit by a one-sided hiccup (an interrupt,
  a preemption) without the coarse granularity a median has at small n;
- for well-behaved noise it equals the ratio of geometric-mean times.

ratio < 1 means B is faster. The confidence interval is a percentile bootstrap
that resamples whole rounds (the (a_i, b_i) pairs), so the pairing is kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

TRIM = 0.10
Verdict = Literal["faster", "slower", "indistinguishable"]


@dataclass(frozen=True, slots=True)
class RatioEstimate:
    """time(B) / time(A) with a bootstrap confidence interval [low, high]."""

    ratio: float
    low: float
    high: float
    confidence: float
    n_rounds: int
    n_boot: int

    @property
    def speedup(self) -> float:
        """time(A) / time(B): > 1 when B is faster."""
        return 1.0 / self.ratio


def trimmed_mean(x: np.ndarray, trim: float = TRIM, axis: int = -1) -> np.ndarray:
    """Mean after dropping floor(trim * n) values from each end along `axis`."""
    x = np.sort(x, axis=axis)
    n = x.shape[axis]
    k = int(np.floor(trim * n))
    if k and n - 2 * k >= 1:
        x = np.take(x, np.arange(k, n - k), axis=axis)
    return x.mean(axis=axis)


def _log_ratios(a_times: Sequence[float], b_times: Sequence[float]) -> np.ndarray:
    a = np.asarray(a_times, dtype=np.float64)
    b = np.asarray(b_times, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"a_times and b_times must be 1-D and of equal length, got {a.shape} and {b.shape}")
    if a.size < 2:
        raise ValueError(f"need at least 2 paired rounds, got {a.size}")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b)) and np.all(a > 0) and np.all(b > 0)):
        raise ValueError("times must be finite and positive")
    return np.log(b) - np.log(a)


def paired_ratio_ci(
    a_times: Sequence[float],
    b_times: Sequence[float],
    confidence: float = 0.95,
    n_boot: int = 2000,
    rng: np.random.Generator | int | None = None,
) -> RatioEstimate:
    """Estimate time(B)/time(A) from paired rounds with a round-resampling bootstrap CI.

    `a_times[i]` and `b_times[i]` must come from the same round. `rng` may be a
    Generator or a seed; pass one for reproducible intervals.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n_boot < 100:
        raise ValueError(f"n_boot must be >= 100 for a percentile interval, got {n_boot}")
    d = _log_ratios(a_times, b_times)
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    n = d.size
    point = float(trimmed_mean(d))
    boots = np.empty(n_boot)
    chunk = max(1, 4_000_000 // n)  # bound memory for long runs
    for start in range(0, n_boot, chunk):
        stop = min(n_boot, start + chunk)
        idx = gen.integers(0, n, size=(stop - start, n))
        boots[start:stop] = trimmed_mean(d[idx], axis=1)
    alpha = 1.0 - confidence
    lo, hi = np.quantile(boots, [alpha / 2, 1 - alpha / 2])
    return RatioEstimate(float(np.exp(point)), float(np.exp(lo)), float(np.exp(hi)), confidence, n, n_boot)


def verdict(est: RatioEstimate, tolerance: float = 0.0) -> Verdict:
    """'faster' when the whole CI lies below 1 - tolerance (B beats A by more than
    the tolerance, a fraction such as 0.005), 'slower' when it lies above
    1 + tolerance, else 'indistinguishable'.

    The tolerance is a practical-significance margin: with enough rounds any
    real but negligible difference becomes "significant", and a search should
    not accept candidates for it.
    """
    if tolerance < 0:
        raise ValueError("tolerance must be >= 0")
    if est.high < 1.0 - tolerance:
        return "faster"
    if est.low > 1.0 + tolerance:
        return "slower"
    return "indistinguishable"


def ci_half_width_pct(est: RatioEstimate) -> float:
    """Half the CI width as a percentage of the ratio: the stopping criterion for timing."""
    return 100.0 * (est.high - est.low) / 2.0 / est.ratio
