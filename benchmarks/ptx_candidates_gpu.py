"""GPU side of the PTX candidates (benchmarks/ptx_candidates.py): byte checks and timings.

    python -m benchmarks.ptx_candidates_gpu [--out OUT] [--rows 1,16,1024] [--budget S]

Every candidate in benchmarks/kernels/ptx_candidates/manifest.json is checked byte for byte
against the suite's checked-in cubin of its source (benchmarks/kernels/cubin/, the SASS its
source PTX compiles to), at the spec's launch and at a launch of a few blocks, shared memory
poisoned; the RMSNorm candidates are then timed (paired CUDA-graph timing, warm L2) at
each of --rows. Rows go to OUT/ptx_candidates_gpu.csv as they come.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from benchmarks.gpu_session import _commit, load_suite_spec
from benchmarks.kernels.build import CUBIN_DIR, cubin_name, source_for_kernel
from benchmarks.moves_gpu import few_blocks
from benchmarks.ptx_candidates import OUT_DIR

TIMED = ("rmsnorm_triton_style", "rms_norm_f32")
ROOT = Path(__file__).resolve().parent.parent


def run(out: Path, rows: tuple[int, ...], budget_s: float) -> None:
    import cupy

    from reorder.suite.rows import write_rows
    from timing.evaluate import check_and_time_job, check_job, describe_status
    from timing.worker import Job, WorkerPool

    out.mkdir(parents=True, exist_ok=True)
    manifest = json.loads((OUT_DIR / "manifest.json").read_text())
    props = cupy.cuda.runtime.getDeviceProperties(0)
    meta = {"gpu": props["name"].decode(), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "commit": _commit()}
    table: list[dict] = []
    with WorkerPool(devices=[0]) as pool:
        for row in manifest["candidates"]:
            kernel = row["kernel"]
            original = CUBIN_DIR / cubin_name(source_for_kernel(kernel))
            candidate = ROOT / row["cubin"]
            fields = {"kernel": kernel, "candidate": row["cubin"], "mode": row["mode"], "moves": len(row["moves"])}
            spec = load_suite_spec(kernel)
            jobs = [
                ({}, Job.of(check_job, str(original), str(candidate), spec, more=(few_blocks(spec),), timeout_s=120))
            ]
            if kernel in TIMED:
                jobs = [
                    (
                        {"rows": n},
                        Job.of(
                            check_and_time_job,
                            str(original),
                            str(candidate),
                            load_suite_spec(kernel, {"rows": n}),
                            budget_s=budget_s,
                            more=(few_blocks(spec),),
                            timeout_s=180,
                        ),
                    )
                    for n in rows
                ]
            for extra, job in jobs:
                record = {**meta, **fields, **extra, **describe_status(pool.run(job))}
                table.append(record)
                print(json.dumps({k: v for k, v in record.items() if k not in meta}, default=str), flush=True)
                write_rows(out / "ptx_candidates_gpu.csv", table)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("out"))
    parser.add_argument("--rows", default="1,16,1024")
    parser.add_argument("--budget", type=float, default=6.0, help="seconds of timing per point (default 6)")
    args = parser.parse_args()
    run(args.out, tuple(int(r) for r in args.rows.split(",")), args.budget)
