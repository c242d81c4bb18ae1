"""Work done once per test run however many pytest-xdist workers ask for it."""

from __future__ import annotations

import fcntl
from collections.abc import Callable
from pathlib import Path


def once(marker: Path, make: Callable[[], str]) -> str:
    """The text `make()` returned the first time any process asked for `marker`: the first to
    take the lock beside it runs `make` and writes the text; the others wait, then read it."""
    marker.parent.mkdir(parents=True, exist_ok=True)
    with open(marker.with_name(marker.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists():
            marker.write_text(make())
    return marker.read_text()
