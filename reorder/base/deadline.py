"""When a command must be done, and how a step that runs past it is cut.

`--time 60s` promises an answer by about then, whatever the phase: a search trial, a
finalist's timing, a re-check, the verifier's walk of a 20,000-instruction winner. Most of
those are calls into code that has no notion of time (an analysis, ptxas, a GPU job), so
time is enforced from outside: `move_on_at(t)` arms a timer, and at `t` the main thread gets
`DeadlineReached` wherever it is (a blocking wait included: the timer's signal interrupts
it). The step unwinds as it would for Ctrl-C (workers killed, temporary files removed) and
the `with` block ends with `cut.reached` set; the caller keeps what finished before.

DeadlineReached is a BaseException so that no `except Exception` in the code being cut can
swallow it; writes that must not be cut in half run `shielded` (reorder.base.lifetime) and
take the cut when they end.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from reorder.base.lifetime import deliver

MIN_GRACE_S = 10.0  # past --time, what the exit itself may take: the longer of this
GRACE_SHARE = 0.05  # and this share of --time


def grace_s(limit_s: float) -> float:
    """How far past `--time` a run may end: max(10 s, 5% of it). Nothing is planned into it;
    it is what cutting, killing workers and writing the result may take on a loaded machine."""
    return max(MIN_GRACE_S, GRACE_SHARE * limit_s)


@dataclass(frozen=True)
class Deadline:
    """A command's time: it started at `start` (time.monotonic) and was given `limit_s`."""

    start: float
    limit_s: float

    @property
    def end(self) -> float:
        """Where the planned work must be done (start + --time)."""
        return self.start + self.limit_s

    @property
    def hard_end(self) -> float:
        """The latest the command may exit (end + grace)."""
        return self.end + grace_s(self.limit_s)

    def left(self, until: float | None = None) -> float:
        """Seconds from now to `until` (default: the end), never below 0."""
        return max(0.0, (self.end if until is None else until) - time.monotonic())

    def used(self) -> float:
        return time.monotonic() - self.start


def process_start() -> float:
    """When this process started, on the time.monotonic clock: the user's `--time 60s` counts
    from the command line, interpreter start and imports included. Where /proc is missing,
    now."""
    try:
        with open(f"/proc/{os.getpid()}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        started_ticks = int(fields[19])  # field 22, starttime, in clock ticks since boot
        since_boot = time.clock_gettime(time.CLOCK_BOOTTIME)
        age = since_boot - started_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return time.monotonic()
    return time.monotonic() - max(0.0, age)


class DeadlineReached(BaseException):
    """Raised in the main thread when a `move_on_at` block's time is up."""

    def __init__(self, cut: Cut) -> None:
        super().__init__("deadline reached")
        self.cut = cut


@dataclass(eq=False)
class Cut:
    """One `move_on_at` block: its time, and whether the block was cut there."""

    at: float
    reached: bool = False
    _fired: bool = field(default=False, repr=False)
    _closed: bool = field(default=False, repr=False)


_ACTIVE: list[Cut] = []  # the open blocks, outermost first (main thread only)


def _on_alarm(signum, frame) -> None:
    now = time.monotonic()
    due = [c for c in _ACTIVE if c.at <= now and not c._closed]
    if not due:
        _arm()
        return
    cut = due[0]  # the outermost: everything inside it ends too
    cut._fired = True
    _arm()
    deliver(DeadlineReached(cut))


REFIRE_S = 0.5  # a cut whose raise was swallowed (a GC callback) is raised again this often


def _arm() -> None:
    """Point the process timer at the earliest open block's time, or, for one already fired
    and still open, REFIRE_S from now; disarm it when no block is open."""
    now = time.monotonic()
    times = [now + REFIRE_S if c._fired else c.at for c in _ACTIVE if not c._closed]
    if not times:
        signal.setitimer(signal.ITIMER_REAL, 0)
        return
    signal.setitimer(signal.ITIMER_REAL, max(1e-3, min(times) - now))


@contextlib.contextmanager
def move_on_at(at: float) -> Iterator[Cut]:
    """Run the block until time.monotonic() reaches `at`; then cut it (see the module's
    docstring) and carry on after it with `cut.reached` True. Blocks nest; an outer block's
    time cuts the inner ones with it. Outside the main thread nothing is cut."""
    cut = Cut(at)
    if threading.current_thread() is not threading.main_thread():
        yield cut
        return
    if not _ACTIVE:
        signal.signal(signal.SIGALRM, _on_alarm)
    _ACTIVE.append(cut)
    try:
        _arm()  # a time already past cuts the block at its first bytecode (the timer's minimum)
        yield cut
    except DeadlineReached as exc:
        if exc.cut is not cut:
            raise
        cut.reached = True
    finally:
        cut._closed = True
        _ACTIVE.remove(cut)
        _arm()
        if not _ACTIVE:
            signal.signal(signal.SIGALRM, signal.SIG_DFL)


def raise_if_cut() -> None:
    """Raise DeadlineReached for the outermost open block whose time has come: a safe point
    for loops, and the backstop for a raise that landed in a callback and was dropped."""
    now = time.monotonic()
    for cut in _ACTIVE:
        if cut.at <= now and not cut._closed:
            cut._fired = True
            raise DeadlineReached(cut)


def checkpoint() -> None:
    """A loop's safe point: a signal or a deadline whose first raise was swallowed ends it."""
    from reorder.base.lifetime import raise_if_terminated

    raise_if_terminated()
    raise_if_cut()
