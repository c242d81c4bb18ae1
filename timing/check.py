"""Byte-exact output checking of a candidate kernel against the original.

Equality is on raw bytes, not values: a reordering of SASS must not change a
single bit, so NaN payloads and the sign of zero count, and "close enough" is
never accepted. Output-only buffers are filled with the poison byte 0xFF
(NaN for floats) before every run, so an element a kernel forgets to write
keeps the poison and is caught unless the reference skips it too.

All buffers are compared, inputs included: a candidate that scribbles over an
input is wrong even if its outputs happen to match. Before comparing, the
reference is run twice on the first set; if it disagrees with itself (float
atomics, races) byte equality means nothing and the check says so.

A race can be invisible at one launch shape and plain at another (an LDS moved right
behind a barrier read stale shared memory at 4 rows and was right at 1, because the
previous launch had left the right value there). So every launch is preceded by a
fill of every SM's shared memory with the poison pattern (timing.poison), and a
candidate is checked at each launch it will serve (`more`), on input sets a re-check
can move past the ones the search used (`first_set`).
"""

from __future__ import annotations

import functools
import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from timing.inputmemo import drawn, remembered
from timing.inputs import POISON_BYTE, poisoned
from timing.spec import LaunchSpec

POISON = POISON_BYTE

__all__ = ["POISON", "CheckResult", "Mismatch", "check_pair", "compare_outputs", "poisoned", "same_bytes"]


@dataclass(frozen=True, slots=True)
class Mismatch:
    """The first differing element of the first differing buffer."""

    buffer: str
    flat_index: int
    index: tuple[int, ...]
    ref_value: str
    cand_value: str
    ref_bytes: str  # hex, memory order
    cand_bytes: str
    n_differing: int  # elements of this buffer that differ

    def describe(self) -> str:
        """One line for logs and error messages."""
        return (
            f"buffer '{self.buffer}' element {list(self.index)} (flat {self.flat_index}): "
            f"ref {self.ref_value} [{self.ref_bytes}] != cand {self.cand_value} [{self.cand_bytes}]; "
            f"{self.n_differing} element(s) differ"
        )


@dataclass(frozen=True, slots=True)
class CheckResult:
    """Outcome of check_pair. ok is True only when every byte of every set matched."""

    ok: bool
    sets: int
    mismatch: Mismatch | None = None
    set_index: int | None = None  # which input set showed the mismatch
    reference_deterministic: bool = True
    reason: str = ""
    launches: tuple[str, ...] = ()  # launch_label of each launch checked
    shared_poisoned: bool = False
    seconds: tuple[float, ...] = ()  # wall seconds at each launch checked (what a multi-shape search spends where)
    references: int = 0  # the original's runs this check made (0 once its outputs are kept: timing.inputmemo)

    def describe(self) -> str:
        if not self.ok:
            return self.reason
        where = f" at each of {len(self.launches)} launch(es): {'; '.join(self.launches)}" if self.launches else ""
        poison = ", shared memory poisoned before every launch" if self.shared_poisoned else ""
        return f"identical on {self.sets} input set(s){where}{poison}"


def same_bytes(ref: np.ndarray, cand: np.ndarray) -> bool:
    """Whether two arrays of one shape and dtype hold the same bytes: one pass over flat views
    in the widest word that divides their size. The per-element search below (a boolean per
    byte, then a reduction per element) took 0.5 s on a 128 MiB buffer and this 0.01-0.03 s
    (CPU, 2026-12-02); at 8192 x 4096 rows it was most of a multi-shape trial's byte check,
    so it runs only when the bytes differ."""
    r, c = np.ascontiguousarray(ref).reshape(-1), np.ascontiguousarray(cand).reshape(-1)
    word = next(w for w in (8, 4, 2, 1) if r.nbytes % w == 0)
    as_words = np.dtype(f"u{word}") if word > 1 else np.dtype(np.uint8)
    return bool(np.array_equal(r.view(np.uint8).view(as_words), c.view(np.uint8).view(as_words)))


def _first_difference(name: str, ref: np.ndarray, cand: np.ndarray) -> Mismatch | None:
    if same_bytes(ref, cand):
        return None
    itemsize = ref.dtype.itemsize
    rb = np.ascontiguousarray(ref).reshape(-1).view(np.uint8).reshape(-1, itemsize)
    cb = np.ascontiguousarray(cand).reshape(-1).view(np.uint8).reshape(-1, itemsize)
    differs = np.any(rb != cb, axis=1)
    if not differs.any():
        return None
    flat = int(np.argmax(differs))
    index = tuple(int(i) for i in np.unravel_index(flat, ref.shape)) if ref.ndim else ()
    return Mismatch(
        buffer=name,
        flat_index=flat,
        index=index,
        ref_value=repr(ref.reshape(-1)[flat].item()),
        cand_value=repr(cand.reshape(-1)[flat].item()),
        ref_bytes=rb[flat].tobytes().hex(),
        cand_bytes=cb[flat].tobytes().hex(),
        n_differing=int(differs.sum()),
    )


def compare_outputs(ref: dict[str, np.ndarray], cand: dict[str, np.ndarray]) -> Mismatch | None:
    """First byte-level difference between two sets of buffers, in `ref`'s order, or None.

    Both dicts must hold the same buffer names with the same shapes and dtypes
    (they come from one spec); anything else is a programming error (ValueError).
    """
    if set(ref) != set(cand):
        raise ValueError(f"buffer names differ: {sorted(ref)} vs {sorted(cand)}")
    for name, r in ref.items():
        c = cand[name]
        r, c = np.asarray(r), np.asarray(c)
        if r.shape != c.shape or r.dtype != c.dtype:
            raise ValueError(f"buffer '{name}': {r.dtype}{r.shape} vs {c.dtype}{c.shape}")
        found = _first_difference(name, r, c)
        if found is not None:
            return found
    return None


# ---------------------------------------------------------------- GPU part


def run_once(
    kernel: object, spec: LaunchSpec, host: dict[str, np.ndarray | np.generic], poison_shared: bool = True
) -> dict[str, np.ndarray]:
    """Launch on fresh device copies of `host` and return every buffer afterwards.

    `host` already carries poison in its out buffers (draw_inputs puts it
    there); fresh copies per run mean inout buffers and poison are restored.
    With `poison_shared`, every SM's shared memory is filled with the poison
    pattern first (timing.poison), so a read of shared memory that races a store
    sees NaN rather than a previous launch's value.
    """
    from timing import gpu

    dev = gpu.to_device(host, spec)
    if poison_shared:
        from timing.poison import poison_shared_memory

        poison_shared_memory()
    gpu.launch(kernel, spec, gpu.launch_args(spec, dev))  # type: ignore[arg-type]
    gpu.synchronize()
    return gpu.buffers_to_host(spec, dev)


def launch_label(spec: LaunchSpec) -> str:
    """How a launch is named in reports: grid and block."""
    return f"grid {list(spec.grid)} block {list(spec.block)}"


def check_pair(
    a_cubin: str | Path,
    b_cubin: str | Path,
    spec: LaunchSpec,
    sets: int = 3,
    more: Sequence[LaunchSpec] = (),
    first_set: int = 0,
    poison_shared: bool = True,
) -> CheckResult:
    """Run A (reference) and B (candidate) on `sets` fresh input sets at the spec's launch
    and at each launch of `more`, and compare every byte.

    Input sets are `first_set .. first_set + sets - 1` (a re-check draws sets the search
    never saw). A race can be right at one launch shape and wrong at another, so a
    candidate is judged at every launch it will serve. A CUDA fault raises (cupy's CUDA
    error); run this inside timing.worker so the fault becomes a 'crashed' result and
    the next job gets a fresh context.
    """
    if sets < 1:
        raise ValueError("sets must be >= 1")
    launches = (spec, *more)
    seconds: list[float] = []
    references = 0
    for launch in launches:
        started = time.perf_counter()
        found, ran = _check_launch(a_cubin, b_cubin, launch, range(first_set, first_set + sets), poison_shared)
        seconds.append(time.perf_counter() - started)
        references += ran
        if found is not None:
            return replace(found, seconds=tuple(seconds), references=references)
    return CheckResult(
        True,
        sets,
        launches=tuple(launch_label(s) for s in launches),
        shared_poisoned=poison_shared,
        seconds=tuple(seconds),
        references=references,
    )


def _check_launch(
    a_cubin, b_cubin, spec: LaunchSpec, set_indices: range, poison_shared: bool
) -> tuple[CheckResult | None, int]:
    """(the first failure at one launch, or None when every set matched; the original's runs made)."""
    from timing import gpu

    ka = gpu.load_kernel(a_cubin, spec)
    kb = gpu.load_kernel(b_cubin, spec)
    where = launch_label(spec)
    ran = 0
    original = hashlib.sha256(Path(a_cubin).read_bytes()).hexdigest()  # its outputs are kept by its bytes
    for i in set_indices:
        host = drawn(spec, i)  # drawn once per worker process (timing.inputmemo)
        key = ("reference", original, spec, i, poison_shared)
        ref, fresh = remembered(key, functools.partial(run_once, ka, spec, host, poison_shared))
        ran += fresh
        if fresh and i == set_indices.start:  # judged when first run; a kept reference was judged then
            self_diff = compare_outputs(ref, run_once(ka, spec, host, poison_shared))
            ran += 1
            if self_diff is not None:
                return CheckResult(
                    False,
                    len(set_indices),
                    self_diff,
                    i,
                    reference_deterministic=False,
                    reason=f"{where}: reference is not deterministic, byte equality is meaningless: "
                    f"{self_diff.describe()}",
                    launches=(where,),
                    shared_poisoned=poison_shared,
                ), ran
        diff = compare_outputs(ref, run_once(kb, spec, host, poison_shared))
        if diff is not None:
            return CheckResult(
                False,
                len(set_indices),
                diff,
                i,
                reason=f"{where}, input set {i}: {diff.describe()}",
                launches=(where,),
                shared_poisoned=poison_shared,
            ), ran
    return None, ran
