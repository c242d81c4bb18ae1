"""Every line consistent with a set of interval observations: the hard bound between two clocks.

Two clocks that run at a constant rate ratio are related by one line, y = m*x + c. An
observation (a `Window`) says that where the first clock read x, the second one's value
lay in [lo, hi] (either side may be open). The set of lines that meets every observation
is a convex polygon in (m, c); an event seen at x on the first clock then lies, on the
second, within the span of m*x + c over that polygon. Nothing is fitted and nothing is
averaged: the span is exactly what the observations imply under the one assumption (a
line), and the polygon is empty when the observations contradict it.

The polygon is computed in exact rational arithmetic (half-plane clipping of a box, whose
vertices are intersections of two observation lines: small rationals). Only the lower
bounds on the upper convex hull of the points (x, lo), and the upper bounds on the lower
hull of (x, hi), can shape it (a line above the hull is above every point under it), so
the rest are dropped first, exactly. Floats then only choose which observation to clip by
next: one is set aside only when its float slack exceeds the float error bound at every
vertex, or when exact arithmetic says every vertex satisfies it, so the result is the
exact feasible set. Coordinates are taken relative to the first observation, which keeps
the floats small (clock values of 1e18 ns lose nothing). Many spans at once (`spans`) are
evaluated in floats and rounded outward by more than their error: whole-unit intervals
that contain the exact ones.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

Number = int | Fraction
Vertex = tuple[Fraction, Fraction]
_EPS = float(np.finfo(np.float64).eps)


@dataclass(frozen=True, slots=True)
class Window:
    """At x on the first clock, the second clock read within [lo, hi] (None: open side)."""

    x: Number
    lo: Number | None = None
    hi: Number | None = None


@dataclass(frozen=True)
class LineSet:
    """The lines y = m*x + c meeting every window: a convex polygon in (m, c), exact.

    Vertices are stored relative to the origin (x0, y0): y - y0 = m*(x - x0) + c. An empty
    polygon means the windows contradict a line; a vertex on the starting box means the
    windows do not bound the lines on that side (`bounded` is False).
    """

    vertices: tuple[Vertex, ...]
    x0: int
    y0: int
    slope_box: tuple[Fraction, Fraction]
    intercept_box: tuple[Fraction, Fraction]
    windows: int

    @property
    def empty(self) -> bool:
        return not self.vertices

    @property
    def bounded(self) -> bool:
        return not self.empty and not any(m in self.slope_box or c in self.intercept_box for m, c in self.vertices)

    def span(self, x: Number) -> tuple[Fraction, Fraction]:
        """The least and greatest value any consistent line takes at x (absolute)."""
        if self.empty:
            raise ValueError("no line is consistent with the windows")
        dx = Fraction(x) - self.x0
        values = [m * dx + c for m, c in self.vertices]
        return self.y0 + min(values), self.y0 + max(values)

    def width(self, x: Number) -> Fraction:
        lo, hi = self.span(x)
        return hi - lo

    def spans(self, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Whole-unit enclosures of span(x) for many integer x at once (int64 in, int64 out):
        floor of the least value and ceiling of the greatest, each pushed outward by more
        than the float error of evaluating it."""
        if self.empty:
            raise ValueError("no line is consistent with the windows")
        dx = (np.asarray(xs, dtype=np.int64) - self.x0).astype(np.float64)
        m = np.array([float(v[0]) for v in self.vertices])
        c = np.array([float(v[1]) for v in self.vertices])
        values = dx[:, None] * m + c
        error = 8 * _EPS * (np.abs(dx[:, None] * m) + np.abs(c)) + 1e-6
        lo = np.floor((values - error).min(axis=1)).astype(np.int64)
        hi = np.ceil((values + error).max(axis=1)).astype(np.int64)
        return lo + self.y0, hi + self.y0

    def slopes(self) -> tuple[Fraction, Fraction]:
        ms = [m for m, _ in self.vertices]
        return min(ms), max(ms)

    def interval(self, lo: Number, hi: Number) -> tuple[Fraction, Fraction]:
        """Where an event known to lie in [lo, hi] on the first clock lies on the second: the
        least value at lo and the greatest at hi (every consistent line rises)."""
        if self.slopes()[0] <= 0:
            raise ValueError("a consistent line does not rise; order is not preserved")
        return self.span(lo)[0], self.span(hi)[1]


def feasible_lines(windows: Sequence[Window], slope: tuple[Number, Number]) -> LineSet:
    """The exact set of lines with slope in `slope` that meet every window.

    `slope` is the prior range of the rate ratio (wide: it only has to contain the truth);
    the intercept box is made wide enough that no line of that slope through any window
    touches it, so only the slope box can be reached, and only when the windows leave the
    slope open (one window, say).
    """
    finite = [w for w in windows if w.lo is not None or w.hi is not None]
    if not finite:
        raise ValueError("no window bounds the line")
    x0 = _floor(finite[0].x)
    bound = finite[0].lo if finite[0].lo is not None else finite[0].hi
    assert bound is not None  # `finite` keeps the windows with a bound
    y0 = _floor(bound)
    m_lo, m_hi = Fraction(slope[0]), Fraction(slope[1])
    lows = _hull([(w.x, w.lo) for w in finite if w.lo is not None], upper=True)
    highs = _hull([(w.x, w.hi) for w in finite if w.hi is not None], upper=False)
    rows = _half_planes([Window(x, lo=y) for x, y in lows] + [Window(x, hi=y) for x, y in highs], x0, y0)
    reach = max(abs(a) * max(abs(m_lo), abs(m_hi)) + abs(k) for a, _, k in rows)
    c_box = (-2 * reach - 1, 2 * reach + 1)
    box = ((m_lo, c_box[0]), (m_hi, c_box[0]), (m_hi, c_box[1]), (m_lo, c_box[1]))
    vertices = _solve(box, rows)
    return LineSet(tuple(vertices), x0, y0, (m_lo, m_hi), c_box, len(finite))


def _hull(points: list[tuple[Number, Number]], upper: bool) -> list[tuple[Number, Number]]:
    """The upper (or lower) convex hull of points, in x order: for bounds from below, a line
    above these is above every point; among points of one x only the binding one stays.
    Plain ints stay ints (exact, and far faster than Fractions)."""
    best: dict[Number, Number] = {}
    for x, y in points:
        if x not in best or (y > best[x] if upper else y < best[x]):
            best[x] = y
    hull: list[tuple[Number, Number]] = []
    for p in sorted(best.items()):
        while len(hull) >= 2 and _turn(hull[-2], hull[-1], p, upper):
            hull.pop()
        hull.append(p)
    return hull


def _turn(a: tuple[Number, Number], b: tuple[Number, Number], c: tuple[Number, Number], upper: bool) -> bool:
    """True when b lies on or under (upper hull) / over (lower hull) the segment a-c."""
    cross = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
    return cross >= 0 if upper else cross <= 0


def _floor(value: Number) -> int:
    return int(value // 1)


def _half_planes(windows: Sequence[Window], x0: int, y0: int) -> list[tuple[Fraction, int, Fraction]]:
    """Each window side as a*m + b*c >= k in the centred frame (b is +1 or -1)."""
    rows = []
    for w in windows:
        dx = Fraction(w.x) - x0
        if w.lo is not None:
            rows.append((dx, 1, Fraction(w.lo) - y0))
        if w.hi is not None:
            rows.append((-dx, -1, y0 - Fraction(w.hi)))
    return rows


def _solve(box: Sequence[Vertex], rows: list[tuple[Fraction, int, Fraction]]) -> list[Vertex]:
    """Clip `box` by every row that cuts it, most violated first, until none cuts it."""
    a = np.array([float(r[0]) for r in rows])
    b = np.array([float(r[1]) for r in rows])
    k = np.array([float(r[2]) for r in rows])
    live = np.ones(len(rows), dtype=bool)
    poly = list(box)
    while poly:
        vm = np.array([float(m) for m, _ in poly])
        vc = np.array([float(c) for _, c in poly])
        terms = np.abs(a[:, None] * vm) + np.abs(b[:, None] * vc) + np.abs(k[:, None])
        slack = a[:, None] * vm + b[:, None] * vc - k[:, None]
        tol = 16 * _EPS * terms + 1e-300
        worst = np.where(live, (slack - tol).min(axis=1), np.inf)
        suspects = np.flatnonzero(worst < 0)
        if suspects.size == 0:
            return poly
        cut = None
        for i in suspects[np.argsort(slack.min(axis=1)[suspects])]:
            ai, bi, ki = rows[i]
            if all(ai * m + bi * c >= ki for m, c in poly):
                live[i] = False  # exact: every vertex satisfies it, and the polygon only shrinks
                continue
            cut = i
            break
        if cut is None:
            return poly
        live[cut] = False
        poly = clip(poly, *rows[cut])
    return poly


def clip(poly: Sequence[Vertex], a: Fraction, b: int, k: Fraction) -> list[Vertex]:
    """The part of a convex polygon where a*m + b*c >= k (Sutherland-Hodgman, exact)."""
    out: list[Vertex] = []
    values = [a * m + b * c - k for m, c in poly]
    n = len(poly)
    for i in range(n):
        p, q = poly[i], poly[(i + 1) % n]
        fp, fq = values[i], values[(i + 1) % n]
        if fp >= 0:
            out.append(p)
        if (fp > 0 > fq) or (fp < 0 < fq):
            t = fp / (fp - fq)
            out.append((p[0] + t * (q[0] - p[0]), p[1] + t * (q[1] - p[1])))
    return [v for i, v in enumerate(out) if v != out[i - 1]] if len(out) > 1 else out


def widen(windows: Sequence[Window], by: Number) -> list[Window]:
    """Every window opened by `by` on each closed side (to measure how far a set is from
    being consistent with one line)."""
    return [Window(w.x, None if w.lo is None else w.lo - by, None if w.hi is None else w.hi + by) for w in windows]


def inconsistency(windows: Sequence[Window], slope: tuple[Number, Number], limit: int = 1 << 40) -> int:
    """The least whole number of units each window must be widened by for one line to meet
    them all (0 when they are consistent): how far the data are from the one-line
    assumption. Bisection over feasibility; `limit` caps the search."""
    if not feasible_lines(windows, slope).empty:
        return 0
    lo, hi = 0, 1
    while feasible_lines(widen(windows, hi), slope).empty:
        lo, hi = hi, hi * 2
        if hi > limit:
            return limit
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if feasible_lines(widen(windows, mid), slope).empty:
            lo = mid
        else:
            hi = mid
    return hi


def proven_pairs(intervals: Sequence[tuple[Number, Number]]) -> int:
    """How many pairs of events have an order the intervals prove: one ends before the
    other starts (a pair whose intervals overlap may have happened either way)."""
    starts = sorted(lo for lo, _ in intervals)
    return sum(len(starts) - bisect.bisect_right(starts, hi) for _, hi in intervals)
