"""Poison every SM's shared memory before a checked launch.

A candidate that reads shared memory before another warp's store has landed (an LDS
moved too close behind `BAR.SYNC`) reads whatever the SM's shared memory held. When the
previous launch was the same kernel on the same inputs, that stale value is the right
one by coincidence, and a byte check passes (a wrong kernel was shipped this way: right
at 1 row, wrong at 4). Filling shared memory with the poison pattern right before each
checked launch turns such a read into a NaN in the output.

The filler (kernels/poison_shared.cu, compiled per arch and checked in) runs with the
largest opt-in dynamic shared memory and twice as many blocks as SMs, so every SM's
whole shared memory is written. Launches go to the same stream as the checked launch,
so they are ordered before it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from timing.inputs import POISON_BYTE

KERNELS = Path(__file__).parent / "kernels"
PATTERN = int.from_bytes(bytes([POISON_BYTE]) * 4, "little")  # 0xFFFFFFFF: NaN as a float
THREADS = 1024


@dataclass(frozen=True, slots=True)
class Filler:
    """The loaded filler kernel and the launch that covers every SM."""

    module: Any
    function: Any
    blocks: int
    shared_bytes: int


def filler_cubin(major: int, minor: int) -> Path:
    """The checked-in filler for a compute capability (sm_90 for 9.x, sm_80 for 8.x)."""
    return KERNELS / f"poison_shared_sm_{major}0.cubin"


@lru_cache(maxsize=4)
def _filler(device_id: int) -> Filler:
    import cupy as cp

    props = cp.cuda.runtime.getDeviceProperties(device_id)
    attr = cp.cuda.runtime.deviceGetAttribute
    optin = attr(cp.cuda.runtime.cudaDevAttrMaxSharedMemoryPerBlockOptin, device_id)
    module = cp.RawModule(path=str(filler_cubin(props["major"], props["minor"])))
    function = module.get_function("poison_shared")
    function.max_dynamic_shared_size_bytes = optin
    return Filler(module, function, 2 * props["multiProcessorCount"], optin)


def poison_shared_memory() -> None:
    """Fill the shared memory of every SM of the current device with the poison pattern."""
    import cupy as cp

    f = _filler(cp.cuda.Device().id)
    words = f.shared_bytes // 4
    f.function((f.blocks,), (THREADS,), (np.uint32(PATTERN), np.uint32(words)), shared_mem=f.shared_bytes)


def sm_count() -> int:
    """SMs of the current device: a launch that fills the GPU has at least twice as many blocks."""
    import cupy as cp

    return int(cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["multiProcessorCount"])
