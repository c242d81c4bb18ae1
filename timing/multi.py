"""Several builds of one kernel timed in the same rounds, on one buffer set (a worker job).

Triton's configs differ in block size and shared memory, so one launch spec cannot serve
them all (`reorder time w4.cubin w8.cubin --launch spec` failed). Here every
build carries its own spec (block, shared, grid) over the same parameters, and all of them
run on the same device buffers:

- warm L2: each build is captured in a CUDA graph of R launches (R per build, so a replay
  lasts >= `min_replay_us`), timed between its own event pair, per launch = time / R;
- cold L2: R = 1 and a write of 2x the L2 size precedes every timed launch (outside the
  events), as timing.paired does;
- a round runs every build once in a fresh random order, so drift hits all alike; rounds
  whose SM clock sample is below 90% of the highest are dropped (timing.paired's rule);
- rounds continue until `budget_s` is spent (at least `min_rounds`).

The answer is the raw matrix (rounds x builds, microseconds per launch): the caller picks
winners on some rounds and reports on the others (see `split_rounds`), with
timing.stats.paired_ratio_ci for any two builds (same rounds, so paired) and `time_ci` for
one build alone.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from reorder.base.errors import SpecError
from timing.spec import BufferParam, LaunchSpec, ScalarParam
from timing.stats import trimmed_mean


@dataclass(frozen=True, slots=True)
class Build:
    """One build to time: its cubin and its launch (block and shared are its own)."""

    label: str
    cubin: str
    spec: LaunchSpec


def same_buffers(specs: Sequence[LaunchSpec]) -> None:
    """Every spec names the same parameters (buffers of one shape and type): one buffer set
    serves them all. SpecError naming the first difference."""

    def signature(spec: LaunchSpec) -> tuple:
        return tuple(
            (p.name, p.dtype, p.shape)
            if isinstance(p, BufferParam)
            else (p.name, p.dtype, p.value)
            if isinstance(p, ScalarParam)
            else (p.name, p.type, p.value)  # a struct by value: its type and field values
            for p in spec.params
        )

    first = signature(specs[0])
    for spec in specs[1:]:
        if signature(spec) != first:
            raise SpecError(f"{spec.name}: parameters differ between builds ({signature(spec)} vs {first})")


def time_ci(
    times: Sequence[float], confidence: float = 0.95, n_boot: int = 1000, rng: np.random.Generator | int | None = 0
) -> tuple[float, float, float]:
    """(trimmed mean, low, high): one build's per-launch time with a round-resampling bootstrap CI."""
    x = np.asarray(times, dtype=np.float64)
    if x.size < 2:
        raise ValueError("need at least 2 rounds")
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    boots = trimmed_mean(x[gen.integers(0, x.size, size=(n_boot, x.size))], axis=1)
    alpha = 1.0 - confidence
    lo, hi = np.quantile(boots, [alpha / 2, 1 - alpha / 2])
    return float(trimmed_mean(x)), float(lo), float(hi)


def split_rounds(times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(selection rounds, report rounds): the even and odd rounds. Picking the best of many
    builds on the same rounds that report its time would report the luckiest noise; picking
    on one half and reporting on the other does not."""
    return times[0::2], times[1::2]


def time_builds(
    builds: Sequence[Build],
    host: Mapping[str, Any],
    l2: str = "warm",
    budget_s: float = 1.0,
    min_rounds: int = 20,
    max_rounds: int = 5000,
    min_replay_us: float = 100.0,
    seed: int = 0,
) -> dict[str, Any]:
    """Time every build on the buffers made from `host` (see the module docstring); a dict
    with the labels, `times` (kept rounds x builds, us per launch), repeats, clock and rounds."""
    from timing import gpu
    from timing.devicestructs import launch_copies
    from timing.paired import (
        CALIBRATION_LAUNCHES,
        _capture,
        _graph_launch_us,
        _l2_flusher,
        choose_repeats,
        clock_keep_mask,
        open_sm_clock,
    )

    if l2 not in ("warm", "cold"):
        raise ValueError(f"l2 must be 'warm' or 'cold', got {l2!r}")
    same_buffers([b.spec for b in builds])
    cp = gpu.cupy_module()
    kernels = [gpu.load_kernel(b.cubin, b.spec) for b in builds]
    dev = gpu.to_device(dict(host), builds[0].spec)  # one buffer set for all: same addresses
    stream = cp.cuda.Stream(non_blocking=True)
    clock, rng = open_sm_clock(cp), np.random.default_rng(seed)
    n = len(builds)
    if l2 == "warm":
        repeats = [
            choose_repeats(
                _graph_launch_us(cp, stream, k, b.spec, launch_copies(cp, b.spec, dev, CALIBRATION_LAUNCHES)),
                min_replay_us,
            )
            for k, b in zip(kernels, builds)
        ]
    else:
        repeats = [1] * n
    # each build's own argument copies (zeros counters cleared before every replay, outside the events)
    copies = [launch_copies(cp, b.spec, dev, r) for b, r in zip(builds, repeats)]
    graphs = [_capture(cp, stream, k, b.spec, c.args, c.clear) for k, b, c in zip(kernels, builds, copies)]
    flush = _l2_flusher(cp, stream) if l2 == "cold" else None
    events = [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(n)]
    times, clocks = np.empty((max_rounds, n)), np.empty(max_rounds)
    rounds, started = 0, time.perf_counter()
    while rounds < max_rounds and (rounds < min_rounds or time.perf_counter() - started < budget_s):
        for k in rng.permutation(n):
            if flush is not None:
                flush()
            copies[k].clear(stream)
            events[k][0].record(stream)
            graphs[k].launch(stream)
            events[k][1].record(stream)
        clocks[rounds] = clock()
        stream.synchronize()
        for k in range(n):
            times[rounds, k] = cp.cuda.get_elapsed_time(events[k][0], events[k][1]) * 1000.0 / repeats[k]
        rounds += 1
    keep = clock_keep_mask(clocks[:rounds])
    kept_clock = clocks[:rounds][keep]
    return {
        "labels": [b.label for b in builds],
        "times": times[:rounds][keep],
        "repeats": repeats,
        "l2": l2,
        "rounds": int(keep.sum()),
        "dropped_rounds": int(rounds - keep.sum()),
        "clock_mhz": float(np.nanmedian(kept_clock)) if not np.all(np.isnan(kept_clock)) else float("nan"),
        "seconds": time.perf_counter() - started,
    }
