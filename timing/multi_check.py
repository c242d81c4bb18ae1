"""Byte-check many candidates against one original on the device (a worker job).

timing.check compares one pair and copies every buffer back to the host for each run; a
Triton cell has a dozen candidates over buffers of up to a few hundred MB, so here the
inputs are drawn once per input set (timing.inputs: the same bytes as any other check),
kept on the device, and every run gets a device copy of them. Before each launch every SM's
shared memory is poisoned (timing.poison), so a read that races a store reads NaN rather than
the previous launch's value. After the run its buffers are compared byte for byte with the
original's on the device; only a difference is looked at more closely.

The original is run twice on the first set: a kernel that is not deterministic cannot be
byte-checked, and says so. A candidate may have its own spec (block, shared) over the same
parameters as the original's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from timing.multi import Build, same_buffers
from timing.spec import BufferParam


def run_build(build: Build, pristine: dict[str, Any], poison: bool) -> dict[str, Any]:
    """One launch on device copies of `pristine` (shared memory poisoned first when asked);
    every buffer afterwards, by name."""
    from timing import gpu

    cp = gpu.cupy_module()
    fresh = {k: (cp.copy(v) if isinstance(v, cp.ndarray) else v) for k, v in pristine.items()}
    kernel = gpu.load_kernel(build.cubin, build.spec)
    if poison:
        from timing.poison import poison_shared_memory

        poison_shared_memory()
    gpu.launch(kernel, build.spec, gpu.launch_args(build.spec, fresh))
    gpu.synchronize()
    return {p.name: fresh[p.name] for p in build.spec.params if isinstance(p, BufferParam)}


def first_difference(ref: dict[str, Any], got: dict[str, Any]) -> str:
    """'' when every buffer is byte-identical, else which buffer, how many bytes and where."""
    import cupy as cp

    for name, a in ref.items():
        x, y = a.reshape(-1).view(cp.uint8), got[name].reshape(-1).view(cp.uint8)
        if bool(cp.array_equal(x, y)):
            continue
        where = cp.nonzero(x != y)[0]
        first = int(where[0])
        item = first // a.dtype.itemsize
        return (
            f"{name}: {int(where.size)} byte(s) differ, first at element {item} "
            f"({a.reshape(-1)[item].item()!r} vs {got[name].reshape(-1)[item].item()!r})"
        )
    return ""


def check_builds(
    original: Build, candidates: Sequence[Build], sets: int = 2, first_set: int = 0, poison_shared: bool = True
) -> dict[str, dict[str, str]]:
    """label -> {'check': 'identical' | 'MISMATCH' | 'not deterministic', 'detail': ...} for
    every candidate, over input sets first_set .. first_set + sets - 1."""
    from timing import gpu
    from timing.inputs import draw_inputs

    same_buffers([original.spec, *(c.spec for c in candidates)])
    out = {
        c.label: {"check": "identical", "detail": f"{sets} fresh input set(s), shared memory poisoned"}
        for c in candidates
    }
    for index in range(first_set, first_set + sets):
        pristine = gpu.to_device(draw_inputs(original.spec, index))
        ref = run_build(original, pristine, poison_shared)
        if index == first_set:
            again = first_difference(ref, run_build(original, pristine, poison_shared))
            if again:
                return {
                    c.label: {"check": "not deterministic", "detail": f"the original itself: {again}"}
                    for c in candidates
                }
        for c in candidates:
            if out[c.label]["check"] != "identical":
                continue
            diff = first_difference(ref, run_build(c, pristine, poison_shared))
            if diff:
                out[c.label] = {"check": "MISMATCH", "detail": f"input set {index}: {diff}"}
    return out
