"""Paired bootstrap ratio: point estimate, interval coverage, verdicts, and the timing helpers."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from timing.paired import choose_repeats, clock_keep_mask, next_checkpoint
from timing.stats import RatioEstimate, ci_half_width_pct, paired_ratio_ci, trimmed_mean, verdict


def simulate(rng: np.random.Generator, true_ratio: float, n: int, noise: float = 0.02, drift: float = 0.05):
    """Rounds with a shared per-round drift (cancels in the pairing) plus independent noise."""
    common = np.exp(rng.normal(0, drift, n))
    a = 100.0 * common * np.exp(rng.normal(0, noise, n))
    b = 100.0 * true_ratio * common * np.exp(rng.normal(0, noise, n))
    return a, b


def test_point_estimate_and_symmetry() -> None:
    rng = np.random.default_rng(0)
    a, b = simulate(rng, 0.9, 200)
    est = paired_ratio_ci(a, b, rng=1)
    assert abs(est.ratio - 0.9) < 0.01
    assert est.low < est.ratio < est.high
    assert est.n_rounds == 200 and est.confidence == 0.95
    flipped = paired_ratio_ci(b, a, rng=1)
    assert flipped.ratio == pytest.approx(1 / est.ratio, rel=1e-12)


def test_reproducible_with_seed() -> None:
    a, b = simulate(np.random.default_rng(3), 1.0, 50)
    assert paired_ratio_ci(a, b, rng=7) == paired_ratio_ci(a, b, rng=7)


def test_pairing_removes_drift() -> None:
    """With large shared drift, the paired CI stays narrow (an unpaired one would not)."""
    a, b = simulate(np.random.default_rng(4), 1.0, 100, noise=0.005, drift=0.3)
    assert ci_half_width_pct(paired_ratio_ci(a, b, rng=0)) < 0.5


def test_trimming_resists_an_outlier_round() -> None:
    a, b = simulate(np.random.default_rng(5), 1.0, 50, noise=0.002, drift=0.0)
    clean = paired_ratio_ci(a, b, rng=0)
    b[7] *= 50  # one round hit by a preemption: a ratio of means would be ~2x off
    est = paired_ratio_ci(a, b, rng=0)
    assert abs(est.ratio - clean.ratio) < 0.0005
    assert est.high - est.low < 2 * (clean.high - clean.low)


def test_ci_coverage_by_simulation() -> None:
    """About 95% of 95% intervals must contain the true ratio."""
    rng = np.random.default_rng(2024)
    true_ratio, hits, trials = 0.97, 0, 300
    for _ in range(trials):
        a, b = simulate(rng, true_ratio, 40)
        est = paired_ratio_ci(a, b, n_boot=1000, rng=rng)
        hits += est.low <= true_ratio <= est.high
    coverage = hits / trials
    assert 0.90 <= coverage <= 0.99, coverage


def test_verdicts() -> None:
    def est(lo: float, hi: float) -> RatioEstimate:
        return RatioEstimate((lo + hi) / 2, lo, hi, 0.95, 10, 1000)

    assert verdict(est(0.95, 0.99)) == "faster"
    assert verdict(est(1.01, 1.05)) == "slower"
    assert verdict(est(0.98, 1.01)) == "indistinguishable"
    assert verdict(est(0.985, 0.995), tolerance=0.02) == "indistinguishable"
    assert verdict(est(0.95, 0.97), tolerance=0.02) == "faster"
    with pytest.raises(ValueError):
        verdict(est(0.9, 0.95), tolerance=-1)


def test_half_width() -> None:
    assert ci_half_width_pct(RatioEstimate(1.0, 0.99, 1.01, 0.95, 5, 100)) == pytest.approx(1.0)
    assert RatioEstimate(0.5, 0.4, 0.6, 0.95, 5, 100).speedup == 2.0


@pytest.mark.parametrize(
    "a,b",
    [([1.0], [1.0]), ([1.0, 2.0], [1.0]), ([1.0, -1.0], [1.0, 1.0]), ([1.0, np.nan], [1.0, 1.0])],
)
def test_bad_inputs(a: list, b: list) -> None:
    with pytest.raises(ValueError):
        paired_ratio_ci(a, b)


def test_trimmed_mean() -> None:
    x = np.array([0.0] * 9 + [1000.0])
    assert trimmed_mean(x, 0.1) == 0.0
    assert trimmed_mean(np.array([1.0, 3.0]), 0.1) == 2.0
    assert np.allclose(trimmed_mean(np.array([[1.0, 2.0, 3.0], [4, 5, 6]]), axis=1), [2.0, 5.0])


def test_choose_repeats() -> None:
    assert choose_repeats(10.0) == 20
    assert choose_repeats(500.0) == 1
    assert choose_repeats(0.001) == 10_000
    assert choose_repeats(0.0) == 10_000


def test_clock_keep_mask() -> None:
    assert clock_keep_mask([1980, 1975, 1500, 1980]).tolist() == [True, True, False, True]
    assert clock_keep_mask([np.nan, np.nan]).tolist() == [True, True]
    assert clock_keep_mask([1980, np.nan, 100]).tolist() == [True, True, False]


def test_next_checkpoint_grows() -> None:
    points = [20]
    while points[-1] < 5000:
        points.append(next_checkpoint(points[-1], 20))
    assert all(b > a for a, b in itertools.pairwise(points))
    assert len(points) < 40


def _synthetic_round(ratio: float, noise: float, seed: int, throttled_every: int = 0):
    """A stand-in for one GPU round: A ~ 10 us, B ~ ratio * A, both with noise; every
    `throttled_every`-th round at a throttled clock (and slower)."""
    rng = np.random.default_rng(seed)
    count = [0]

    def one_round(order):
        count[0] += 1
        slow = 1.5 if throttled_every and count[0] % throttled_every == 0 else 1.0
        a = 10.0 * slow * np.exp(noise * rng.standard_normal())
        b = 10.0 * ratio * slow * np.exp(noise * rng.standard_normal())
        return a, b, 1980.0 / slow

    return one_round, count


def test_the_round_loop_stops_at_the_target_and_the_summary_drops_throttled_rounds():
    from timing.paired import run_rounds, summarize

    one_round, count = _synthetic_round(0.9, 0.01, seed=1, throttled_every=10)
    rng = np.random.default_rng(0)
    rounds = run_rounds(
        one_round, rng, target_ci_pct=0.5, budget_s=30, min_rounds=30, max_rounds=20_000, confidence=0.95
    )
    assert rounds.stopped == "target" and len(rounds.times) == count[0] < 20_000
    result = summarize(rounds, "graph", "warm", (20, 20), 0.95, rng, t_begin=0.0)
    assert result.dropped_rounds == count[0] // 10  # the throttled rounds, and only they
    assert result.ratio.low < 0.9 < result.ratio.high and ci_half_width_pct(result.ratio) < 0.5
    assert abs(result.a_us - 10.0) < 0.2 and result.launches_per_replay == (20, 20)


def test_the_round_loop_stops_at_max_rounds_when_the_ci_stays_wide():
    from timing.paired import run_rounds

    one_round, count = _synthetic_round(1.0, 0.5, seed=2)
    rounds = run_rounds(
        one_round,
        np.random.default_rng(0),
        target_ci_pct=0.01,
        budget_s=30,
        min_rounds=30,
        max_rounds=200,
        confidence=0.95,
    )
    assert rounds.stopped == "max_rounds" and count[0] == 200


def test_a_summary_with_too_few_unthrottled_rounds_is_an_error():
    from reorder.base.errors import GpuError
    from timing.paired import Rounds, summarize

    rounds = Rounds(np.ones((3, 2)), np.array([2000.0, 1000.0, 1000.0]), "budget")
    with pytest.raises(GpuError, match="only 1 of 3"):
        summarize(rounds, "graph", "warm", (1, 1), 0.95, np.random.default_rng(0), 0.0)
