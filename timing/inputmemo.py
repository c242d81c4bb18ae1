"""Input sets drawn once per worker process and reused, within a byte budget; and the
original's outputs on them (timing.check), run once per set and launch.

A search checks every trial on the same input sets (0, 1, 2) at every launch shape, and
times it on set 0: drawing them again for each trial costs more than the launches at a large
shape (an 8192 x 4096 RMSNorm input is 33.5 M normal draws, about 0.4 s; an EmbeddingBag
table of 200000 x 128 one more). The sets are a pure function of the spec and the index
(timing.inputs), so one drawing serves every trial. Cached arrays are read-only: a caller that
tried to write one would fail loudly rather than change the next trial's inputs. On the H200 a
trial of an RMSNorm checked at 1..8192 rows spent 9 s in byte checks and 0.7 s in timing
before the original's outputs were kept too (2026-12-01). The least
recently used sets go first once MEMO_BYTES is exceeded (REORDER_INPUT_MEMO_MB to change it;
0 turns the memo off).
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from timing.inputs import draw_inputs
from timing.params import LaunchSpec

MEMO_BYTES = int(float(os.environ.get("REORDER_INPUT_MEMO_MB", "4096")) * 2**20)

_memo: OrderedDict[tuple, dict[str, Any]] = OrderedDict()
_held = [0]  # bytes held by _memo


def _nbytes(values: dict[str, Any]) -> int:
    return sum(v.nbytes for v in values.values() if isinstance(v, np.ndarray))


def drawn(spec: LaunchSpec, set_index: int) -> dict[str, Any]:
    """draw_inputs(spec, set_index), from the memo when it was drawn before in this process."""
    key = (spec, set_index)
    if key in _memo:
        _memo.move_to_end(key)
        return _memo[key]
    return _keep(key, draw_inputs(spec, set_index))


def remembered(key: tuple, make: Callable[[], dict[str, Any]]) -> tuple[dict[str, Any], bool]:
    """(make()'s value, True) the first time `key` is asked for in this process, then (the same
    value, False): the original's outputs on an input set are the same for every candidate
    checked against it, so a search runs the original once per set and launch, not per trial."""
    if key in _memo:
        _memo.move_to_end(key)
        return _memo[key], False
    return _keep(key, make()), True


def _keep(key: tuple, values: dict[str, Any]) -> dict[str, Any]:
    """Hold `values` (read-only) under `key` unless they alone exceed the budget; evict the
    least recently used past it."""
    size = _nbytes(values)
    if size > MEMO_BYTES:
        return values
    for v in values.values():
        if isinstance(v, np.ndarray):
            v.flags.writeable = False
    _memo[key] = values
    _held[0] += size
    while _held[0] > MEMO_BYTES:
        _, old = _memo.popitem(last=False)
        _held[0] -= _nbytes(old)
    return values


def clear() -> None:
    _memo.clear()
    _held[0] = 0


__all__ = ["MEMO_BYTES", "clear", "drawn", "remembered"]
