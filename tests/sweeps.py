"""Full sweeps or the CPU tier's sample of them.

A few `slow` tests check one rule over every kernel, pair or case the project has. The CPU tier
(`.ci/run`, 2 cores) runs a fixed, stated sample of each: every fourth item in a fixed order,
each test still asserting that its sample reaches every family it names. With
`REORDER_FULL_SWEEPS=1` every item is checked (docs/testing.md says where that runs).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")

FULL = os.environ.get("REORDER_FULL_SWEEPS") == "1"


def sample(items: Sequence[T], every: int = 4) -> list[T]:
    """All of `items` under REORDER_FULL_SWEEPS=1, else every `every`-th one from the first."""
    return list(items) if FULL else list(items)[::every]


def at_least(full: int, sampled: int) -> int:
    """The count a full sweep must reach, or the one the tier's fixed sample must."""
    return full if FULL else sampled
