"""A GPU's clocks modelled exactly: the host-clock bounds tested against a known truth, and the
host-clock study's dry run (benchmarks/studies/hostclock.py) walked without a GPU.

The model: the GPU's ideal time runs at `rate` GPU ns per host ns from `offset`; the timer
shows the ideal time floored to its `tick`; each SM's cycle counter counts `hz` cycles per
GPU ns from its own start. Sync rounds and checkpoints are drawn with random latencies on
the paths that add them (bus, polling), never on the timer's semantics, so every bound the
code computes must contain the model's truth.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from fractions import Fraction

from reorder.probe.hostaxis import Checkpoint, FlagTest, Round, SyncWindow


@dataclass
class FakeGPU:
    rate: Fraction = Fraction(1_000_013, 1_000_000)
    offset: int = 1_764_000_000_000_000_000
    tick: int = 32
    hz: Fraction = Fraction(198, 100)  # cycles per GPU ns
    sm_start: dict[int, int] = field(default_factory=lambda: {sm: 7_000_003 * sm for sm in range(132)})
    rng: random.Random = field(default_factory=lambda: random.Random(7))
    jitter: int = 0  # ns a timer reading may stray from the ideal time (as the H200's do, by a few ns)

    def ideal(self, host: Fraction | int) -> Fraction:
        return self.rate * host + self.offset

    def host_of(self, gpu_ns: Fraction | int) -> Fraction:
        """The host time at which the GPU's ideal time was gpu_ns (the truth to contain)."""
        return (Fraction(gpu_ns) - self.offset) / self.rate

    def timer(self, gpu_ns: Fraction | int) -> int:
        return math.floor(Fraction(gpu_ns) / self.tick) * self.tick

    def cycles(self, sm: int, gpu_ns: Fraction | int) -> int:
        return math.floor(self.hz * gpu_ns) + self.sm_start[sm]

    def round(self, host_down: int) -> Round:
        seen = self.ideal(host_down + self.rng.randint(300, 3000))  # bus and polling delay
        g1 = self.timer(seen)
        g2, g3 = g1 + self.tick, g1 + 2 * self.tick
        host_up = math.ceil(self.host_of(g3 + self._fraction(0, 4)) + self.rng.randint(250, 2500))
        return Round(host_down, g1, g2, g3, host_up)

    def window(self, index: int, host_start: int, rounds: int) -> SyncWindow:
        out, t = [], host_start
        for _ in range(rounds):
            r = self.round(t)
            out.append(r)
            t = r.host_up + self.rng.randint(60, 600)
        return SyncWindow(index, tuple(out))

    def _fraction(self, lo: int, hi: int) -> Fraction:
        """A random ns offset in [lo, hi], exact (a float would round clock values of 1e18 ns)."""
        return Fraction(self.rng.randint(1000 * lo, 1000 * hi), 1000)

    def checkpoint(self, sm: int, gpu_ns: Fraction, bits: int = 32) -> Checkpoint:
        """A clock read at ideal time gpu_ns between two timer reads a few ns either side."""
        stray = self._fraction(-self.jitter, self.jitter)
        before = self.timer(gpu_ns - self.rng.randint(1, 12) + stray)
        stray = self._fraction(-self.jitter, self.jitter)
        after = self.timer(gpu_ns + self.rng.randint(1, 12) + stray)
        return Checkpoint(sm, self.cycles(sm, gpu_ns) % (1 << bits), before, after)

    def flag_run(self, host_release: int, sm: int = 17) -> tuple[FlagTest, Fraction, Fraction]:
        """A flag test: checkpoints, the release read, more, the flag read, more; with the
        ideal times of the two reads."""
        t, points = self.ideal(host_release) - 60_000, []
        for _ in range(30):
            points.append(self.checkpoint(sm, t, bits=64))
            t += 2000
        released = self.ideal(host_release + 1800) + 5  # the GPU's poll saw the release
        t = released + 40
        for _ in range(30):
            points.append(self.checkpoint(sm, t, bits=64))
            t += 2000
        flagged = t + 7
        seen = int(self.host_of(flagged + 30)) + 1400  # the flag's trip to the host
        for _ in range(30):
            t += 2000
            points.append(self.checkpoint(sm, t, bits=64))
        test = FlagTest(host_release, seen, sm, self.cycles(sm, released), self.cycles(sm, flagged), tuple(points))
        return test, released, flagged


class VirtualClock:
    """A host clock advanced by the waits made on it and by 1 us per reading: the distances a
    study measures on it are the ones it asked for, however busy the machine (on the real clock a
    loaded machine stretched short waits past their bound), and a dry run waits for nothing."""

    def __init__(self, start_ns: int) -> None:
        self.now = start_ns

    def host_ns(self) -> int:
        self.now += 1_000
        return self.now

    def until(self, t_ns: int) -> None:
        self.now = max(self.now, t_ns)


class FakeSession:
    """reorder.probe.hostclock.Session's measuring calls on the model, at the host clock `now`
    (the real one unless a virtual clock is given)."""

    def __init__(self, gpu: FakeGPU | None = None, name: str = "0000:00:00.0", now=None) -> None:
        self.model = gpu or FakeGPU()
        self.gpu = name
        self.now = now

    def _host_ns(self) -> int:
        from reorder.probe.hostclock import host_ns

        return (self.now or host_ns)()

    def __enter__(self) -> FakeSession:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def sync_window(self, index: int, rounds: int) -> SyncWindow:
        return self.model.window(index, self._host_ns(), rounds)

    def flag_test(self) -> FlagTest:
        return self.model.flag_run(self._host_ns())[0]
