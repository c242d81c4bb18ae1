"""From SM cycles to GPU nanoseconds to the host's clock, with a hard bound at each step.

Link 1, cycles to GPU nanoseconds. A checkpoint reads the global timer, then the SM's
cycle counter, then the timer again, so the clock read happened in [before, after + q)
on the timer's axis, q being how far the timer's next tick can lie after a reading. Per
SM (and launch) every checkpoint is a `Window` on the line ns = m*cycles + c; the lines
meeting all of them bound any cycle count of that SM, and a checkpoint's own interval is
the line set's span at its clock (never wider than its own window).

On the H200 the windows of one SM are not quite consistent with one line: the timer and
the cycle counter stray from it by a few ns (2-7 ns over a 200 us kernel, 2026-12-01). So
every window is widened by a slack e: the least widening that makes every SM segment of the
run consistent (`needed_slack`, an empirical figure stated with the result); the bounds
are then hard under "the two clocks keep within e of one line". A segment that still has
no line (slack given smaller than it needs) keeps its own widened windows.

Link 2, GPU timer to host clock. A sync round (reorder.probe.hostclock) gives two
observations: down, the host read its clock (host_down), then released the round; the
GPU saw it, read the timer, and spun to the timer's next tick (gpu_down), so the host
clock at gpu_down was past host_down. Up, the GPU spun to a fresh tick (gpu_up) and
published it; the host saw it and read its clock (host_up), so the host clock at gpu_up
was before host_up. Between two sync windows, every line host = m*gpu + c meeting all
their observations is feasible, and an event's host time is the span over them.

Labels of what is printed and written: `exact` (a clock reading, the host's own events),
`hard` (a bound that holds under the assumptions listed with it), `empirical` (measured,
and only as good as the sample: the timer's step, latency percentiles, how far a third
window is from the line two others allow) and `estimate` (the middle of a bound, to draw).
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from reorder.base import exitcodes
from reorder.base.errors import ReorderError
from reorder.probe.lines import LineSet, Number, Window, feasible_lines, inconsistency, proven_pairs, widen

STAMP_CLOCK_BITS = 32  # the region stamps read the low word of the cycle counter
UNWRAP_GAP_NS = 500_000_000  # two reads further apart may be more than a wrap apart: a new segment
CYCLE_NS = (Fraction(1, 5), Fraction(20))  # prior: the SM clock runs between 50 MHz and 5 GHz
HOST_PER_GPU = (Fraction(99, 100), Fraction(101, 100))  # prior: the two clocks agree within 1%

LINK1_ASSUMES = (
    "one global timer for every SM",
    "an SM's cycle counter runs at one rate during a launch (a count c is read during cycle c)",
    "a timer reading is followed by the next tick within q ns (q: the largest step the timer was seen to take)",
    "the timer and the cycle counter keep within e ns of one line (e: the least widening that made every SM's "
    "checkpoints of the run consistent, empirical)",
    "a warp issues its reads in program order",
)
LINK2_ASSUMES = (
    "the GPU timer and the host clock keep a constant rate ratio between two sync windows",
    "a timer reading G was taken at or after G and before the timer's next tick",
    "one host clock (CLOCK_MONOTONIC_RAW) for every process of the host",
    "each side's reads and writes take effect in program order",
)


# ---------------------------------------------------------------- link 1


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A cycle-counter read between two timer reads on one SM."""

    sm: int
    clock: int  # as read (32 or 64 bits)
    before: int  # timer before, ns
    after: int  # timer after, ns


@dataclass(frozen=True)
class CycleLine:
    """The cycle-to-ns lines of one SM over one run of checkpoints (a segment), with the
    unwrapped clock of each; `lines` is None when no line meets them all."""

    sm: int
    clocks: tuple[int, ...]  # unwrapped, in the order of `checkpoints`
    checkpoints: tuple[Checkpoint, ...]
    lines: LineSet | None
    tick_ns: int
    bits: int  # width of the clock as read
    slack: int = 0  # ns every window was widened by on each side

    def interval(self, k: int) -> tuple[Fraction, Fraction]:
        """GPU-ns interval of checkpoint k: its window, narrowed by the line set."""
        cp = self.checkpoints[k]
        own = (Fraction(cp.before - self.slack), Fraction(cp.after + self.tick_ns + self.slack))
        if self.lines is None:
            return own
        lo, hi = self._span(self.clocks[k])
        return max(lo, own[0]), min(hi, own[1])

    def intervals(self) -> tuple[np.ndarray, np.ndarray]:
        """Whole-ns enclosures of every checkpoint's interval (int64 arrays, in order)."""
        before = np.array([cp.before for cp in self.checkpoints], dtype=np.int64) - self.slack
        after = np.array([cp.after for cp in self.checkpoints], dtype=np.int64) + self.tick_ns + self.slack
        if self.lines is None:
            return before, after
        clocks = np.array(self.clocks, dtype=np.int64)
        lo, hi = self.lines.spans(clocks)[0], self.lines.spans(clocks + 1)[1]
        return np.maximum(lo, before), np.minimum(hi, after)

    def at(self, clock: int) -> tuple[Fraction, Fraction]:
        """GPU-ns interval of any cycle count of this SM (unwrapped near the segment)."""
        if self.lines is None:
            raise ValueError(f"SM {self.sm}: no single cycle-to-ns line; only checkpoints are bounded")
        return self._span(self.unwrap(clock))

    def _span(self, clock: int) -> tuple[Fraction, Fraction]:
        """A count c was read during cycle c: from the least line value at c to the greatest at c + 1."""
        assert self.lines is not None
        return self.lines.span(clock)[0], self.lines.span(clock + 1)[1]

    def unwrap(self, clock: int) -> int:
        """A raw clock read as the unwrapped value nearest the segment's first read."""
        return self.clocks[0] + _signed(clock - self.clocks[0], self.bits)


def _signed(delta: int, bits: int) -> int:
    """A difference of two `bits`-wide counter reads, taken as the nearest signed value."""
    half = 1 << (bits - 1)
    return (delta + half) % (1 << bits) - half


def cycle_lines(
    checkpoints: Iterable[Checkpoint], tick_ns: int, bits: int = STAMP_CLOCK_BITS, slack: int = 0
) -> list[CycleLine]:
    """Per SM, the checkpoints in timer order cut where two reads lie over UNWRAP_GAP_NS
    apart (0.5 s: under a 32-bit wrap at up to 4 GHz), each segment's clocks unwrapped
    and its line set solved over windows widened by `slack` ns on each side."""
    return [_cycle_line(sm, seg, tick_ns, bits, slack) for sm, seg in _sm_segments(checkpoints)]


def needed_slack(checkpoints: Iterable[Checkpoint], tick_ns: int, bits: int = STAMP_CLOCK_BITS) -> int:
    """The least widening (whole ns) that gives every SM segment of these checkpoints one
    consistent line: 0 when the clocks kept to one line exactly (empirical)."""
    need = 0
    for _, segment in _sm_segments(checkpoints):
        clocks = _unwrapped(segment, bits)
        windows = [Window(c, cp.before, cp.after + tick_ns) for c, cp in zip(clocks, segment)]
        if feasible_lines(widen(windows, need), CYCLE_NS).empty:  # only a segment needing more moves the max
            need = inconsistency(windows, CYCLE_NS)
    return need


def _sm_segments(checkpoints: Iterable[Checkpoint]) -> list[tuple[int, list[Checkpoint]]]:
    by_sm: dict[int, list[Checkpoint]] = defaultdict(list)
    for cp in checkpoints:
        by_sm[cp.sm].append(cp)
    return [
        (sm, segment)
        for sm in sorted(by_sm)
        for segment in _segments(sorted(by_sm[sm], key=lambda c: (c.before, c.after)))
    ]


def _segments(ordered: list[Checkpoint]) -> list[list[Checkpoint]]:
    segments: list[list[Checkpoint]] = [[ordered[0]]]
    for cp in ordered[1:]:
        if cp.before - segments[-1][-1].after > UNWRAP_GAP_NS:
            segments.append([cp])
        else:
            segments[-1].append(cp)
    return segments


def _unwrapped(segment: list[Checkpoint], bits: int) -> list[int]:
    clocks = [segment[0].clock]
    for prev, cp in itertools.pairwise(segment):
        clocks.append(clocks[-1] + _signed(cp.clock - prev.clock, bits))
    return clocks


def _cycle_line(sm: int, segment: list[Checkpoint], tick_ns: int, bits: int, slack: int) -> CycleLine:
    clocks = _unwrapped(segment, bits)
    windows = [Window(c, cp.before - slack, cp.after + tick_ns + slack) for c, cp in zip(clocks, segment)]
    lines = feasible_lines(windows, CYCLE_NS)
    return CycleLine(sm, tuple(clocks), tuple(segment), None if lines.empty else lines, tick_ns, bits, slack)


# ---------------------------------------------------------------- link 2


@dataclass(frozen=True, slots=True)
class Round:
    """One handshake: the host released it at host_down; the GPU saw it at gpu_seen and spun
    to the next tick, gpu_down; it then published a fresh tick, gpu_up, which the host saw
    at host_up."""

    host_down: int
    gpu_seen: int
    gpu_down: int
    gpu_up: int
    host_up: int

    def windows(self) -> tuple[Window, Window]:
        return Window(self.gpu_down, lo=self.host_down), Window(self.gpu_up, hi=self.host_up)


@dataclass(frozen=True)
class SyncWindow:
    """Hundreds of rounds in a row, one GPU."""

    index: int
    rounds: tuple[Round, ...]

    @property
    def start(self) -> int:
        return self.rounds[0].gpu_seen

    @property
    def end(self) -> int:
        return self.rounds[-1].gpu_up

    def windows(self) -> list[Window]:
        return [w for r in self.rounds for w in r.windows()]

    def tick_ns(self) -> int:
        """The largest step the timer took between the two ticks a round spun to (empirical)."""
        return max(r.gpu_up - r.gpu_down for r in self.rounds)


@dataclass(frozen=True)
class HostAxis:
    """One GPU's timer on the host clock: its sync windows and the line sets between each
    consecutive pair (one set when there is one window)."""

    gpu: str
    syncs: tuple[SyncWindow, ...]
    pairs: tuple[LineSet, ...]

    def lines_at(self, gpu_ns: Fraction | int) -> LineSet:
        """The line set of the two windows around gpu_ns (the nearest two outside them)."""
        starts = [s.start for s in self.syncs]
        i = bisect.bisect_right(starts, gpu_ns) - 1
        return self.pairs[min(max(i, 0), len(self.pairs) - 1)]

    def interval(self, lo: Fraction | int, hi: Fraction | int) -> tuple[Fraction, Fraction]:
        """Host interval of an event in [lo, hi] on the GPU timer."""
        return self.lines_at(lo).interval(lo, lo)[0], self.lines_at(hi).interval(hi, hi)[1]

    def width(self, gpu_ns: Fraction | int) -> Fraction:
        return self.lines_at(gpu_ns).width(gpu_ns)

    def intervals(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Whole-ns host enclosures of many GPU intervals at once (int64 arrays)."""
        lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
        starts = np.array([s.start for s in self.syncs], dtype=np.int64)
        last = len(self.pairs) - 1
        pick_lo = np.clip(np.searchsorted(starts, lo, side="right") - 1, 0, last)
        pick_hi = np.clip(np.searchsorted(starts, hi, side="right") - 1, 0, last)
        out_lo, out_hi = np.empty_like(lo), np.empty_like(hi)
        for i, lines in enumerate(self.pairs):
            if (sel := pick_lo == i).any():
                out_lo[sel] = lines.spans(lo[sel])[0]
            if (sel := pick_hi == i).any():
                out_hi[sel] = lines.spans(hi[sel])[1]
        return out_lo, out_hi

    def outside(self, gpu_ns: Fraction | int) -> bool:
        """True when gpu_ns is before the first window or after the last (extrapolated)."""
        return gpu_ns < self.syncs[0].start or gpu_ns > self.syncs[-1].end


class InconsistentSync(ReorderError, ValueError):
    """Two sync windows that no constant-rate line can join: the clocks broke an assumption."""

    exit_code = exitcodes.VERDICT


def host_axis(gpu: str, syncs: Sequence[SyncWindow]) -> HostAxis:
    """Solve the line set of every consecutive pair of sync windows."""
    ordered = tuple(sorted(syncs, key=lambda s: s.start))
    groups = [ordered] if len(ordered) == 1 else [ordered[i : i + 2] for i in range(len(ordered) - 1)]
    pairs = []
    for group in groups:
        lines = feasible_lines([w for s in group for w in s.windows()], HOST_PER_GPU)
        if lines.empty:
            names = " and ".join(str(s.index) for s in group)
            raise InconsistentSync(f"sync windows {names}: no constant-rate line meets every round")
        pairs.append(lines)
    return HostAxis(gpu, ordered, tuple(pairs))


def rate_check(syncs: Sequence[SyncWindow]) -> int:
    """How many ns every round of three or more windows must be widened by for one line to
    meet them all: 0 when the rate ratio held constant across them (empirical)."""
    return inconsistency([w for s in syncs for w in s.windows()], HOST_PER_GPU)


# ---------------------------------------------------------------- events


@dataclass(frozen=True, slots=True)
class Event:
    """One event on both axes: GPU-ns and host-ns intervals (hard), and where it came from."""

    gpu: str
    gpu_lo: Number
    gpu_hi: Number
    host_lo: Number
    host_hi: Number

    @property
    def host_mid(self) -> Fraction:
        """The middle of the host bound: an estimate, to draw with."""
        return Fraction(self.host_lo + self.host_hi, 2)


def proven_orders(events: Sequence[Event]) -> tuple[int, int]:
    """(pairs whose order is proven, all pairs). Two events of one GPU are compared on its
    timer (one timer for all SMs; every host line rises, so that order is the host's too);
    events of different GPUs on the host axis."""
    by_gpu: dict[str, list[Event]] = defaultdict(list)
    for e in events:
        by_gpu[e.gpu].append(e)
    across = proven_pairs([(e.host_lo, e.host_hi) for e in events])
    for group in by_gpu.values():
        across -= proven_pairs([(e.host_lo, e.host_hi) for e in group])
        across += proven_pairs([(e.gpu_lo, e.gpu_hi) for e in group])
    n = len(events)
    return across, n * (n - 1) // 2


def first_entry(events: Sequence[Event]) -> tuple[Number, Number]:
    """Host interval of the earliest of several events: [least start, least end]."""
    return min(e.host_lo for e in events), min(e.host_hi for e in events)


# ---------------------------------------------------------------- the flag test


@dataclass(frozen=True)
class FlagTest:
    """One flag test (reorder.probe.hostclock): what the host did and saw, and the kernel's reads."""

    host_release: int  # exact: host clock just before it released the kernel
    host_seen: int  # exact: host clock just after it saw the flag
    sm: int
    release_clock: int  # cycle counter read after the kernel saw the release
    flag_clock: int  # cycle counter read before the kernel set the flag
    checkpoints: tuple[Checkpoint, ...]


@dataclass(frozen=True)
class FlagCheck:
    """The host intervals of a flag test's two cycle reads, against what the host knows:
    the release read came after the host released the kernel, the flag read before the
    host saw the flag. `sound` is what any correct bound must satisfy; `ends_before_seen`
    (the flag read's interval ends before the host saw the flag) and `starts_after_release`
    say the bound was tight enough to prove those orders."""

    host_release: int
    host_seen: int
    release: tuple[int, int]
    flag: tuple[int, int]
    flag_gpu_width: int  # link 1 alone, ns

    @property
    def sound(self) -> bool:
        return self.release[1] >= self.host_release and self.flag[0] <= self.host_seen

    @property
    def ends_before_seen(self) -> bool:
        return self.flag[1] < self.host_seen

    @property
    def starts_after_release(self) -> bool:
        return self.release[0] > self.host_release


def flag_check(test: FlagTest, axis: HostAxis, tick_ns: int, slack: int = 0) -> FlagCheck:
    """Both cycle reads through the SM's line set (64-bit clock, windows widened by `slack`)
    and the host axis."""
    lines = [c for c in cycle_lines(test.checkpoints, tick_ns, bits=64, slack=slack) if c.lines is not None]
    if len(lines) != 1:
        raise ValueError(f"flag test on SM {test.sm}: no cycle-to-ns line at a slack of {slack} ns")
    release, flag = lines[0].at(test.release_clock), lines[0].at(test.flag_clock)

    def host(span: tuple[Fraction, Fraction]) -> tuple[int, int]:
        lo, hi = axis.interval(*span)
        return math.floor(lo), math.ceil(hi)

    width = math.ceil(flag[1]) - math.floor(flag[0])
    return FlagCheck(test.host_release, test.host_seen, host(release), host(flag), width)
