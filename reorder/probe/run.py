"""Run probe variants on the GPU and turn their records into a timeline.

Building is CPU work (reorder.probe.variants); this module adds the launch side: the spec of a
probe variant is the kernel's spec plus one trailing `out` buffer for the records (the
original kernel ignores an extra argument, so both run from one spec), each variant runs
in an isolated worker (a fault costs that variant only), and the probe's own cost is the
paired timing of the original against a variant probed mid-kernel (timing.paired).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from reorder.binary.cubin import read_cubin
from reorder.probe.timeline import Jump, Point, jumps, point
from reorder.probe.variants import ProbeBuild, ProbeLayout, build_slide, check_build, probe_positions
from reorder.sass.model import KernelCode, decode_kernel
from timing.spec import BufferParam, LaunchSpec

RECORDS_PARAM = "probe_records"
DEFAULT_LAUNCHES = 5


def layout_of(spec: LaunchSpec) -> ProbeLayout:
    return ProbeLayout(spec.block, spec.grid)


def probe_spec(spec: LaunchSpec, record_bytes: int) -> LaunchSpec:
    """The spec with the record buffer appended (poisoned: unwritten slots stay all ones)."""
    words = layout_of(spec).warps * record_bytes // 4
    extra = BufferParam(RECORDS_PARAM, "uint32", (words,), "out")
    return dataclasses.replace(spec, params=spec.params + (extra,))


def run_records(cubin: str, spec: LaunchSpec, launches: int = DEFAULT_LAUNCHES) -> np.ndarray:
    """Records of `launches` launches, shape (launches, warps, words per warp); run in a worker."""
    from timing import gpu
    from timing.inputs import draw_inputs

    kernel = gpu.load_kernel(cubin, spec)
    host = draw_inputs(spec, 0)
    out = []
    for _ in range(launches):
        dev = gpu.to_device(host, spec)  # fresh inputs and poisoned records each launch
        gpu.launch(kernel, spec, gpu.launch_args(spec, dev))
        gpu.synchronize()
        out.append(dev[RECORDS_PARAM].get())
    warps = layout_of(spec).warps
    return np.stack(out).reshape(launches, warps, -1)


@dataclass(frozen=True)
class ProbeRun:
    """A whole sliding-probe run: the timeline, its jumps, the probe's cost, what failed."""

    points: tuple[Point, ...]
    found: tuple[Jump, ...]
    cost: dict[str, Any]  # time_job's row for original vs a probed variant ({} when skipped)
    failed: tuple[tuple[int, str], ...]  # (position, reason) of variants that did not run
    occupancy: str


def build_variants(
    code: KernelCode, positions: Sequence[int], layout: ProbeLayout, folder: Path, check: bool = True, jobs: int = 1
) -> list[tuple[int, Path, ProbeBuild]]:
    """Write one cubin per position into `folder` (built in `jobs` processes, written here in
    order); every one checked unless `check` is False. A variant that fails its check ends the
    build and the variants it wrote are removed (156 stayed in the folder when one failed)."""
    from reorder.base.errors import ReorderError
    from reorder.base.files import undone_on_failure, write_atomic

    with undone_on_failure(folder, failures=(ReorderError,)):
        if jobs <= 1 or len(positions) < 2:
            built = (_build_variant(code, k, layout, check) for k in positions)
        else:
            from joblib import Parallel, delayed

            built = Parallel(n_jobs=jobs, backend="loky", return_as="generator")(
                delayed(_build_variant)(code, k, layout, check) for k in positions
            )
        return [
            (k, write_atomic(folder / f"{code.kernel.name}.probe_{k:04d}.cubin", build.data), build)
            for k, build in built
        ]


def _build_variant(code: KernelCode, k: int, layout: ProbeLayout, check: bool) -> tuple[int, ProbeBuild]:
    from reorder.base.errors import LegalityError

    build = build_slide(code, k, layout)
    if check:
        result = check_build(code, build)
        if result.changed or result.violations:
            raise LegalityError(
                f"{code.kernel.name}: the probe after instruction {k} ({code.instructions[k].offset:#06x} "
                f"{code.instructions[k].opcode}) fails its check: originals changed at "
                f"{list(map(hex, result.changed))}, {len(result.violations)} verifier violations"
                + (f" (first: {result.violations[0]})" if result.violations else "")
                + "; no variant was kept",
                result.violations,
            )
    return k, build


def run_probe(
    cubin: str | Path,
    spec: LaunchSpec,
    folder: Path,
    first: int = 0,
    last: int | None = None,
    launches: int = DEFAULT_LAUNCHES,
    time_cost: bool = True,
    timeout_s: float = 120.0,
    jobs: int = 1,
) -> ProbeRun:
    """Build, run and analyse every probe position in [first, last] (GPU; workers isolate faults)."""
    from timing.cli_support import worker_device
    from timing.evaluate import time_job
    from timing.worker import Job, WorkerPool

    code = decode_kernel(read_cubin(cubin), spec.name)
    positions = probe_positions(code, first, last)
    variants = build_variants(code, positions, layout_of(spec), folder, jobs=jobs)
    pspec = probe_spec(spec, variants[0][2].record_bytes) if variants else spec
    with WorkerPool(devices=[worker_device()]) as pool:
        points, failed = measure_variants(
            pool, code, [(k, path) for k, path, _ in variants], pspec, launches, timeout_s
        )
        cost: dict[str, Any] = {}
        if time_cost and variants:
            middle = variants[len(variants) // 2][1]
            done = pool.run(
                Job.of(time_job, str(Path(cubin).resolve()), str(middle.resolve()), pspec, timeout_s=timeout_s + 30)
            )
            cost = done.value if done.ok else {"status": done.status, "reason": done.reason}
    occ = variants[0][2].occupancy.line() if variants else ""
    return ProbeRun(tuple(points), jumps(code.instructions, points), cost, tuple(failed), occ)


def measure_variants(
    pool,
    code: KernelCode,
    variants: Sequence[tuple[int, Path]],
    pspec: LaunchSpec,
    launches: int = DEFAULT_LAUNCHES,
    timeout_s: float = 120.0,
) -> tuple[list[Point], list[tuple[int, str]]]:
    """Run each built variant (position, cubin) in the worker pool: the measured points,
    and (position, reason) for each variant that faulted or timed out."""
    from timing.worker import Job

    results = pool.map(
        [Job.of(run_records, str(path.resolve()), pspec, launches, timeout_s=timeout_s) for _, path in variants]
    )
    points, failed = [], []
    for (k, _), result in zip(variants, results):
        if result.ok:
            points.append(point(code.instructions[k], k, result.value))
        else:
            failed.append((k, f"{result.status}: {result.reason}"))
    return points, failed


def probed_outputs_job(a_cubin: str, b_cubin: str, spec, sets: int = 3) -> str:
    """Outputs of a probed kernel vs the original on fresh inputs, the records buffer aside:
    a probe must observe, never change, what the kernel computes. Runs in a worker."""
    from timing import gpu
    from timing.check import compare_outputs, run_once
    from timing.inputs import draw_inputs

    a, b = gpu.load_kernel(a_cubin, spec), gpu.load_kernel(b_cubin, spec)
    for s in range(sets):
        host = draw_inputs(spec, 1000 + s)
        ref, cand = run_once(a, spec, host), run_once(b, spec, host)
        ref.pop(RECORDS_PARAM, None)
        cand.pop(RECORDS_PARAM, None)
        bad = compare_outputs(ref, cand)
        if bad is not None:
            return f"MISMATCH on input set {s}: {bad.describe()}"
    return f"identical on {sets} input sets"


STAMP_FIELDS = (
    "warp",
    "block",
    "stamp",
    "offset",
    "instruction",
    "globaltimer_ns",
    "clock",
    "sm",
    "globaltimer_after_ns",
    "launch",
)


def stamp_rows(build: ProbeBuild, code: KernelCode, records: np.ndarray) -> list[dict[str, Any]]:
    """Region-stamp records (launches, warps, u32 words) as rows: one per warp, stamp and
    launch, with the block and SM the warp ran on and the global timer read before and
    after the clock. A slot still all ones was never written (that warp did not reach the
    stamp) and gives no row."""
    per_stamp = build.record_bytes // len(build.positions) // 4
    rows = []
    for launch, warps in enumerate(records):
        for warp, words in enumerate(warps):
            for n, k in enumerate(build.positions):
                w = words[n * per_stamp : (n + 1) * per_stamp].astype(np.uint64)
                if (w == 0xFFFFFFFF).all():
                    continue
                rows.append(
                    {
                        "warp": warp,
                        "block": warp // build.layout.warps_per_block,
                        "stamp": n,
                        "offset": f"{code.instructions[k].offset:#06x}",
                        "instruction": code.instructions[k].text,
                        "globaltimer_ns": int(w[0] | w[1] << np.uint64(32)),
                        "clock": int(w[2]),
                        "sm": int(w[3]),
                        "globaltimer_after_ns": int(w[4] | w[5] << np.uint64(32)),
                        "launch": launch,
                    }
                )
    return rows


def run_stamps(
    cubin: str | Path,
    spec: LaunchSpec,
    offsets: Sequence[int],
    launches: int = DEFAULT_LAUNCHES,
    timeout_s: float = 120.0,
) -> tuple[ProbeBuild, list[dict[str, Any]]]:
    """Build the region-stamp variant, run it in a worker, and return its rows (GPU)."""
    import tempfile

    from reorder.base.errors import GpuError
    from reorder.base.files import write_atomic
    from reorder.probe.variants import build_stamps, stamp_positions
    from timing.cli_support import worker_device
    from timing.worker import Job, WorkerPool

    code = decode_kernel(read_cubin(cubin), spec.name)
    build = build_stamps(code, stamp_positions(code, offsets), layout_of(spec))
    with tempfile.TemporaryDirectory(prefix="reorder-stamps-") as tmp:
        path = write_atomic(Path(tmp) / "stamps.cubin", build.data)
        with WorkerPool(devices=[worker_device()]) as pool:
            done = pool.run(
                Job.of(run_records, str(path), probe_spec(spec, build.record_bytes), launches, timeout_s=timeout_s)
            )
    if not done.ok:
        raise GpuError(f"region-stamp variant {done.status}: {done.reason}")
    return build, stamp_rows(build, code, done.value)
