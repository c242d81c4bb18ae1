"""Paired A/B timing of two cubins of one kernel, with a stated confidence.

Method 'graph' (the default, and the one to trust):
- both kernels run on the same device buffers holding input set 0 (separate
  copies put them at different addresses, which alone shifted cold-L2 times
  of two identical kernels by ~1.6% on an H200), each in a CUDA graph of R launches,
  R chosen per kernel so one replay takes >= ~200 us (launch gaps and event
  resolution then cost well under 1%); times are divided by R, so the ratio is
  per launch; with l2='cold', R = 1 and a write of 2x the L2
  size precedes every timed replay (outside the event pair), so each timed
  launch starts from an L2 holding none of its data;
- a round times one replay of A and one of B, in a random order per round,
  each between its own cudaEvent pair, so drift hits both halves alike;
- a spec with `zeros` counters gives each of the R launches its own cleared copy,
  all cleared by one memset before each replay, outside the event pair, for A and B
  alike (timing.devicestructs), so the clearing is in neither side's time;
- the SM clock is sampled by NVML each round while the GPU is busy; rounds
  whose clock is below 90% of the highest sample are dropped (throttled);
- rounds continue until the bootstrap CI half-width of time(B)/time(A) is below
  `target_ci_pct` or `budget_s` seconds of rounds are spent.

Method 'backtoback' is the common naive way, kept for comparison: per kernel,
one event pair around 100 back-to-back launches, 5 runs, A's runs then B's.

Everything GPU-side is imported lazily; run time_pair inside timing.worker.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from reorder.base.errors import GpuError
from timing.devicestructs import launch_copies
from timing.inputmemo import drawn
from timing.spec import LaunchSpec
from timing.stats import RatioEstimate, ci_half_width_pct, paired_ratio_ci

L2Mode = Literal["warm", "cold"]
Method = Literal["graph", "backtoback"]
CLOCK_KEEP_FRACTION = 0.90
MAX_REPEATS = 10_000
BACKTOBACK_LAUNCHES = 100
BACKTOBACK_RUNS = 5
CALIBRATION_LAUNCHES = 20


@dataclass(frozen=True, slots=True)
class TimingResult:
    """What time_pair measured. Times are per launch, in microseconds."""

    ratio: RatioEstimate  # time(B) / time(A); < 1 means B is faster
    a_us: float  # median per-launch time of A over kept rounds
    b_us: float
    rounds: int  # rounds kept (after clock filtering)
    dropped_rounds: int  # rounds dropped for a low SM clock
    clock_mhz: float  # median SM clock over kept rounds; nan when NVML is unavailable
    method: str
    l2: str
    launches_per_replay: tuple[int, int]  # (A, B): each chosen so a replay lasts >= ~200 us
    stopped: str  # 'target' | 'budget' | 'max_rounds' | 'fixed'
    elapsed_s: float

    @property
    def ci_half_width_pct(self) -> float:
        return ci_half_width_pct(self.ratio)


# ---------------------------------------------------------------- pure helpers


def choose_repeats(single_launch_us: float, min_replay_us: float = 200.0, max_repeats: int = MAX_REPEATS) -> int:
    """Launches per graph so that one replay lasts at least `min_replay_us`."""
    if not single_launch_us > 0:
        return max_repeats
    return int(min(max_repeats, max(1, math.ceil(min_replay_us / single_launch_us))))


def clock_keep_mask(clocks_mhz: Sequence[float] | np.ndarray, fraction: float = CLOCK_KEEP_FRACTION) -> np.ndarray:
    """True for rounds whose SM clock is >= fraction * the highest sample.

    Rounds with no sample (nan) are kept: without NVML we cannot tell.
    """
    c = np.asarray(clocks_mhz, dtype=np.float64)
    if c.size == 0 or np.all(np.isnan(c)):
        return np.ones(c.shape, dtype=bool)
    return np.isnan(c) | (c >= fraction * np.nanmax(c))


def next_checkpoint(n: int, min_rounds: int) -> int:
    """Round count at which to test the stopping rule next (geometric, so bootstraps stay cheap)."""
    return max(min_rounds, n + max(10, n // 4))


# ---------------------------------------------------------------- GPU pieces


def open_sm_clock(cp: Any) -> Callable[[], float]:
    """A sampler of the current SM clock (MHz) of cupy's current device, or one returning nan.

    NVML numbers devices ignoring CUDA_VISIBLE_DEVICES, so the device is found by PCI bus id.
    """
    try:
        import pynvml

        pynvml.nvmlInit()
        bus_id = cp.cuda.Device().pci_bus_id
        handle = pynvml.nvmlDeviceGetHandleByPciBusId(bus_id)
        pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)
    except Exception:  # noqa: BLE001 - no pynvml, NVML or clock reading: the clock is reported as unknown (nan)
        return lambda: float("nan")

    def sample() -> float:
        try:
            return float(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM))
        except Exception:  # noqa: BLE001 - a failed clock reading is an unknown clock (nan), never a failed timing
            return float("nan")

    return sample


def _l2_flusher(cp: Any, stream: Any) -> Callable[[], None]:
    """A function that overwrites 2x the L2 size on `stream` (a memset, untimed)."""
    try:
        l2 = int(cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["l2CacheSize"])
    except Exception:  # noqa: BLE001 - a device that does not report its L2 size: flush 64 MiB
        l2 = 64 << 20
    size = max(2 * l2, 64 << 20)
    buf = cp.empty(size, dtype=cp.uint8)
    state = {"value": 0}

    def flush() -> None:
        state["value"] = (state["value"] + 1) & 0xFF  # a new value each time: no write-elision
        cp.cuda.runtime.memsetAsync(buf.data.ptr, state["value"], size, stream.ptr)

    flush.buffer = buf  # type: ignore[attr-defined]  # keep it alive with the closure
    return flush


def _capture(
    cp: Any, stream: Any, kernel: Any, spec: LaunchSpec, args: Sequence[tuple], clear: Callable[[Any], None]
) -> Any:
    """A CUDA graph of len(args) launches, launch i with args[i], instantiated and replayed once
    (uploaded, warmed). `clear` resets the launches' zeros counters (timing.devicestructs) and
    runs before every replay, outside any timed region."""
    from timing import gpu

    with stream:
        stream.begin_capture()
        try:
            for launch_args in args:
                gpu.launch(kernel, spec, launch_args)
        finally:
            graph = stream.end_capture()
    clear(stream)
    graph.launch(stream)
    stream.synchronize()
    return graph


def _graph_launch_us(cp: Any, stream: Any, kernel: Any, spec: LaunchSpec, copies: Any) -> float:
    """Per-launch time inside a graph of len(copies.args) launches (for choosing R).

    Measured in a graph, not by plain back-to-back launches: for short kernels
    those are bound by the CPU launch rate and overstate the time ~2x.
    """
    graph = _capture(cp, stream, kernel, spec, copies.args, copies.clear)
    n = len(copies.args)
    start, end = cp.cuda.Event(), cp.cuda.Event()
    best = math.inf
    for _ in range(3):
        copies.clear(stream)
        start.record(stream)
        graph.launch(stream)
        end.record(stream)
        end.synchronize()
        best = min(best, cp.cuda.get_elapsed_time(start, end) * 1000.0 / n)
    return best


def _backtoback(cp: Any, stream: Any, kernels: Sequence[Any], specs: Sequence[LaunchSpec], copies: Any) -> np.ndarray:
    """Per-launch us, shape (2, runs): event pair around 100 launches, A's runs then B's
    (copies holds 3 + 100 argument tuples; their counters are cleared before each run)."""
    from timing import gpu

    out = np.empty((2, BACKTOBACK_RUNS))
    start, end = cp.cuda.Event(), cp.cuda.Event()
    warm, timed = copies.args[:3], copies.args[3:]
    for k in (0, 1):
        with stream:
            copies.clear(stream)
            for launch_args in warm:
                gpu.launch(kernels[k], specs[k], launch_args)
            for r in range(BACKTOBACK_RUNS):
                copies.clear(stream)
                start.record(stream)
                for launch_args in timed:
                    gpu.launch(kernels[k], specs[k], launch_args)
                end.record(stream)
                end.synchronize()
                out[k, r] = cp.cuda.get_elapsed_time(start, end) * 1000.0 / BACKTOBACK_LAUNCHES
    return out


# ---------------------------------------------------------------- entry point


def time_pair(
    a_cubin: str | Path,
    b_cubin: str | Path,
    spec: LaunchSpec,
    l2: L2Mode = "warm",
    method: Method = "graph",
    target_ci_pct: float = 0.5,
    budget_s: float = 10.0,
    *,
    min_rounds: int = 30,
    max_rounds: int = 20_000,
    min_replay_us: float = 200.0,
    confidence: float = 0.95,
    seed: int = 0,
    b_shared: int | None = None,
    b_block: tuple[int, int, int] | None = None,
) -> TimingResult:
    """Time B against A on input set 0 of `spec`; see the module docstring for the method.

    `budget_s` bounds the measurement rounds only (setup and graph capture come
    on top); give the worker job a timeout comfortably above it. `b_shared`: B's
    dynamic shared memory when it differs from A's (a Triton build that stages its
    loads in shared memory against one that does not): each kernel launches with
    its own, so neither's occupancy is set by the other's needs. `b_block`: B's block when
    it differs (two Triton configs of one kernel with different num_warps, over the same
    parameters and grid).
    """
    from timing import gpu

    if l2 not in ("warm", "cold"):
        raise ValueError(f"l2 must be 'warm' or 'cold', got {l2!r}")
    if method not in ("graph", "backtoback"):
        raise ValueError(f"method must be 'graph' or 'backtoback', got {method!r}")
    t_begin = time.perf_counter()
    cp = gpu.cupy_module()
    b_spec = spec if b_shared is None else dataclasses.replace(spec, shared=b_shared)
    specs = (
        spec,
        b_spec if b_block is None else dataclasses.replace(b_spec, block=(b_block[0], b_block[1], b_block[2])),
    )
    kernels = (gpu.load_kernel(a_cubin, specs[0]), gpu.load_kernel(b_cubin, specs[1]))
    host = drawn(spec, 0)  # drawn once per worker process (timing.inputmemo)
    dev = gpu.to_device(host, spec)  # one buffer set for both: same addresses, same DRAM/L2 mapping
    stream = cp.cuda.Stream(non_blocking=True)
    clock = open_sm_clock(cp)
    rng = np.random.default_rng(seed)

    if method == "backtoback":
        us = _backtoback(cp, stream, kernels, specs, launch_copies(cp, spec, dev, 3 + BACKTOBACK_LAUNCHES))
        mhz = clock()
        est = paired_ratio_ci(us[0], us[1], confidence, rng=rng)
        repeats = (BACKTOBACK_LAUNCHES, BACKTOBACK_LAUNCHES)
        return TimingResult(
            est,
            float(np.median(us[0])),
            float(np.median(us[1])),
            BACKTOBACK_RUNS,
            0,
            mhz,
            method,
            l2,
            repeats,
            "fixed",
            time.perf_counter() - t_begin,
        )

    if l2 == "warm":
        calibration = launch_copies(cp, spec, dev, CALIBRATION_LAUNCHES)
        repeats = (
            choose_repeats(_graph_launch_us(cp, stream, kernels[0], specs[0], calibration), min_replay_us),
            choose_repeats(_graph_launch_us(cp, stream, kernels[1], specs[1], calibration), min_replay_us),
        )
    else:
        repeats = (1, 1)
    copies = launch_copies(cp, spec, dev, max(repeats))  # both kernels launch on the same copies
    graphs = tuple(_capture(cp, stream, kernels[k], specs[k], copies.args[: repeats[k]], copies.clear) for k in (0, 1))
    flush = _l2_flusher(cp, stream) if l2 == "cold" else None
    events = [(cp.cuda.Event(), cp.cuda.Event()) for _ in (0, 1)]

    def one_round(order: tuple[int, int]) -> tuple[float, float, float]:
        """Replay A and B in `order`; (A's, B's per-launch us, the SM clock during the round)."""
        for k in order:
            if flush is not None:
                flush()
            copies.clear(stream)  # zeros counters: cleared outside the event pair, for both sides alike
            events[k][0].record(stream)
            graphs[k].launch(stream)
            events[k][1].record(stream)
        mhz = clock()  # sampled while the GPU is busy with this round
        stream.synchronize()
        a, b = (cp.cuda.get_elapsed_time(events[k][0], events[k][1]) * 1000.0 / repeats[k] for k in (0, 1))
        return a, b, mhz

    rounds = run_rounds(one_round, rng, target_ci_pct, budget_s, min_rounds, max_rounds, confidence)
    return summarize(rounds, method, l2, (int(repeats[0]), int(repeats[1])), confidence, rng, t_begin)


@dataclass(frozen=True)
class Rounds:
    """What the round loop measured: per-launch us of A and B per round, the clock per round."""

    times: np.ndarray  # (n, 2)
    clocks: np.ndarray  # (n,)
    stopped: str  # 'target', 'budget' or 'max_rounds'


def run_rounds(
    one_round: Callable[[tuple[int, int]], tuple[float, float, float]],
    rng: np.random.Generator,
    target_ci_pct: float,
    budget_s: float,
    min_rounds: int,
    max_rounds: int,
    confidence: float,
) -> Rounds:
    """Rounds of A and B in a random order each, until the CI of B/A over the rounds whose
    clock was not throttled is narrower than `target_ci_pct` (checked at growing
    checkpoints), `budget_s` of rounds are spent, or `max_rounds` are done. Pure but for
    `one_round`, so the stopping rule is tested on the CPU."""
    times = np.empty((max_rounds, 2))
    clocks = np.empty(max_rounds)
    n, checkpoint, stopped = 0, min_rounds, "budget"
    started = time.perf_counter()
    while True:
        order = (0, 1) if rng.random() < 0.5 else (1, 0)
        times[n, 0], times[n, 1], clocks[n] = one_round(order)
        n += 1
        if n >= max_rounds:
            stopped = "max_rounds"
            break
        if n >= checkpoint:
            checkpoint = next_checkpoint(n, min_rounds)
            keep = clock_keep_mask(clocks[:n])
            if keep.sum() >= min_rounds:
                est = paired_ratio_ci(times[:n][keep, 0], times[:n][keep, 1], confidence, n_boot=400, rng=rng)
                if ci_half_width_pct(est) < target_ci_pct:
                    stopped = "target"
                    break
        if time.perf_counter() - started > budget_s:
            break
    return Rounds(times[:n], clocks[:n], stopped)


def summarize(
    rounds: Rounds,
    method: Method,
    l2: L2Mode,
    repeats: tuple[int, int],
    confidence: float,
    rng: np.random.Generator,
    t_begin: float,
) -> TimingResult:
    """The result over the rounds kept (clock not throttled), with the final bootstrap CI."""
    keep = clock_keep_mask(rounds.clocks)
    kept = rounds.times[keep]
    n = len(rounds.times)
    if len(kept) < 2:
        raise GpuError(f"only {len(kept)} of {n} timing rounds kept after clock filtering")
    est = paired_ratio_ci(kept[:, 0], kept[:, 1], confidence, n_boot=2000, rng=rng)
    clock_kept = rounds.clocks[keep]
    mhz = float(np.nanmedian(clock_kept)) if not np.all(np.isnan(clock_kept)) else float("nan")
    return TimingResult(
        est,
        float(np.median(kept[:, 0])),
        float(np.median(kept[:, 1])),
        len(kept),
        int(n - len(kept)),
        mhz,
        method,
        l2,
        repeats,
        rounds.stopped,
        time.perf_counter() - t_begin,
    )
