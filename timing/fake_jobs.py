"""Stand-in jobs for exercising timing.worker without a GPU.

Each mimics one way a GPU evaluation ends: a result, a Python exception (what
cupy raises on an illegal instruction), a dead process (a driver abort), a hang
(a kernel that never finishes). Kept in the package, not in tests, so a worker
child can import them by path on any machine, the GPU one included.
"""

from __future__ import annotations

import os
import time

from reorder.base.errors import SpecError


def add(a: int, b: int) -> int:
    """Returns normally."""
    return a + b


def whoami() -> tuple[int, str | None]:
    """The worker's pid and the CUDA_VISIBLE_DEVICES it runs under."""
    return os.getpid(), os.environ.get("CUDA_VISIBLE_DEVICES")


def raise_runtime(message: str = "cudaErrorIllegalInstruction: an illegal instruction was encountered") -> None:
    """Raises like cupy does after a kernel fault."""
    raise RuntimeError(message)


def raise_spec_error(message: str = "bad spec") -> None:
    """Raises a ReorderError: a setup problem, not a fault."""
    raise SpecError(message)


def die(code: int = 1) -> None:
    """Ends the process at once, as a driver abort would."""
    os._exit(code)


def hang() -> None:
    """Never returns, as a kernel stuck in a loop would."""
    while True:
        time.sleep(3600)


def sleep(seconds: float) -> tuple[float, float]:
    """Returns after `seconds`, for parallelism tests: when it started and ended on the
    system-wide monotonic clock (comparable across processes), so a test can see two sleeps
    overlap however busy the machine is."""
    start = time.monotonic()
    time.sleep(seconds)
    return start, time.monotonic()


def unpicklable() -> object:
    """Returns something that cannot be sent back."""
    return lambda: None
