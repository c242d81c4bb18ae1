"""The line-feasibility solver behind the host clock: exact, and containing the truth."""

from __future__ import annotations

import itertools
import random
from fractions import Fraction

import numpy as np

from reorder.probe.lines import Window, clip, feasible_lines, inconsistency, proven_pairs

X0 = 1_764_000_000_000_000_000
SLOPE = (Fraction(1, 2), Fraction(2))


def noisy_windows(m: Fraction, c: int, xs, rng: random.Random) -> list[Window]:
    """One window below and one above the line at each x, each a random distance off it."""
    out = []
    for x in xs:
        y = m * (x - X0) + c
        out.append(Window(x, lo=int(y) - rng.randint(0, 900)))
        out.append(Window(x + 37, hi=int(m * (x + 37 - X0) + c) + 1 + rng.randint(0, 900)))
    return out


def test_the_true_line_is_feasible_and_every_span_contains_its_value():
    rng = random.Random(3)
    m, c = Fraction(1_000_023, 1_000_000), 5 * 10**17
    xs = [X0 + 1000 * i for i in range(300)] + [X0 + 10**9 + 1000 * i for i in range(300)]
    lines = feasible_lines(noisy_windows(m, c, xs, rng), SLOPE)
    assert lines.bounded and lines.slopes()[0] <= m <= lines.slopes()[1]
    probe = [X0 - 10**8, X0, X0 + 5 * 10**8, X0 + 10**9 + 300_000, X0 + 3 * 10**9]
    for x in probe:
        lo, hi = lines.span(x)
        assert lo <= m * (x - X0) + c <= hi
    # between the two groups the bound is no wider than at either group (a line set's width is
    # convex in x); outside them it grows
    assert lines.width(X0 + 5 * 10**8) <= max(lines.width(X0), lines.width(X0 + 10**9))
    assert lines.width(X0 + 3 * 10**9) > lines.width(X0 + 10**9)
    lo, hi = lines.spans(np.array(probe, dtype=np.int64))
    for x, a, b in zip(probe, lo.tolist(), hi.tolist()):
        exact = lines.span(x)
        assert a <= exact[0] and b >= exact[1] and b - a <= exact[1] - exact[0] + 2


def test_the_hull_and_the_float_screen_change_nothing():
    """Against plain exact clipping by every window, on small random sets."""
    rng = random.Random(11)
    for _ in range(20):
        windows = noisy_windows(
            Fraction(rng.randint(900, 1100), 1000), 0, [X0 + rng.randint(0, 10**6) for _ in range(12)], rng
        )
        got = feasible_lines(windows, SLOPE)
        poly = [
            (SLOPE[0], got.intercept_box[0]),
            (SLOPE[1], got.intercept_box[0]),
            (SLOPE[1], got.intercept_box[1]),
            (SLOPE[0], got.intercept_box[1]),
        ]
        for w in windows:
            dx = w.x - got.x0
            if w.lo is not None:
                poly = clip(poly, Fraction(dx), 1, Fraction(w.lo - got.y0))
            if w.hi is not None:
                poly = clip(poly, Fraction(-dx), -1, Fraction(got.y0 - w.hi))
        assert sorted(poly) == sorted(got.vertices)


def test_contradicting_windows_leave_no_line_and_say_by_how_much():
    windows = [Window(0, 0, 10), Window(0, 20, 30)]
    assert feasible_lines(windows, SLOPE).empty
    assert inconsistency(windows, SLOPE) == 5
    assert inconsistency([Window(0, 0, 10), Window(10, 5, 20)], SLOPE) == 0


def test_one_window_leaves_the_slope_open():
    lines = feasible_lines([Window(100, 0, 10)], SLOPE)
    assert not lines.bounded
    assert lines.span(100) == (0, 10)  # the window itself, exactly


def test_a_host_observed_event_lies_in_its_bound():
    """A GPU tick published to the host: the host saw it at h_seen; the tick's host interval,
    from sync rounds that exclude it, contains its true host time and starts before h_seen."""
    rng = random.Random(5)
    m = Fraction(999_987, 1_000_000)

    def truth(g: int) -> Fraction:  # the host time of GPU time g
        return m * (g - X0) + 10**12

    rounds = []
    for g in itertools.chain(range(X0, X0 + 400_000, 1000), range(X0 + 2 * 10**8, X0 + 2 * 10**8 + 400_000, 1000)):
        rounds.append(Window(g, lo=int(truth(g)) - rng.randint(400, 3000)))
        rounds.append(Window(g + 64, hi=int(truth(g + 64)) + 1 + rng.randint(300, 2500)))
    lines = feasible_lines(rounds, SLOPE)
    for g in range(X0 + 10**8, X0 + 10**8 + 20 * 7919, 7919):
        seen = truth(g) + rng.randint(300, 2500)  # the flag's trip to the host
        lo, hi = lines.interval(g, g)
        assert lo <= truth(g) <= hi
        assert lo <= seen


def test_proven_pairs_counts_disjoint_intervals():
    rng = random.Random(2)
    for _ in range(30):
        spans = []
        for _ in range(rng.randint(0, 12)):
            a = rng.randint(0, 50)
            spans.append((a, a + rng.randint(0, 15)))
        brute = sum(1 for p, q in itertools.combinations(spans, 2) if p[1] < q[0] or q[1] < p[0])
        assert proven_pairs(spans) == brute
