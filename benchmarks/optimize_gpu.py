"""`reorder optimize` on the H200 for several suite kernels, against the best single move.

For each kernel: write its launch spec (at a sweep point), run `reorder optimize` on the
GPU with a 100-trial budget, then time, under the same conditions, the optimized cubin and
each hand-chosen single move (batch-loads alone, stall cuts alone) against the original.
Writes OUT/optimize_summary.csv and each kernel's report.md and trials.csv.

    python -m benchmarks.optimize_gpu --out OUT [--budget 100] [--seconds 150] [--jobs 14]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import tomllib

from benchmarks.studies.runner import SUITE, optimize_command
from benchmarks.studies.runner import suite_cubin as _suite_cubin
from reorder.base import provenance
from reorder.suite.rows import write_rows
from reorder.suite.sweep import apply_sweep, spec_toml

# kernel, sweep point, assume no alias (the RMSNorm loads sit behind stores of another buffer)
KERNELS = (
    ("rmsnorm_triton_style", {"rows": 16}, True),
    ("normalize_weights", None, False),
    ("find_index", None, False),
)


def _spec_file(kernel: str, point: dict | None, folder: Path) -> Path:
    raw = tomllib.loads((SUITE / "specs" / f"{kernel}.toml").read_text())
    raw = dict(apply_sweep(raw, point) if point else raw)
    raw.pop("grid_sweep", None)
    path = folder / f"{kernel}.toml"
    path.write_text(spec_toml(raw))
    return path


def _single_moves(cubin: Path, kernel: str, noalias: bool, folder: Path) -> dict[str, Path]:
    from reorder.binary.cubin import read_cubin
    from reorder.build.pipeline import batch_loads, cut_stalls
    from reorder.sass.model import decode_kernel

    code = decode_kernel(read_cubin(cubin), kernel)
    out = {}
    for name, outcome in (("batch_loads", batch_loads(code, noalias)), ("stall_cut", cut_stalls(code))):
        if outcome.applied:
            path = folder / f"{kernel}_{name}.cubin"
            path.write_bytes(outcome.data)
            out[name] = path
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--budget", type=int, default=100)
    parser.add_argument("--seconds", type=int, default=150)
    parser.add_argument("--jobs", type=int, default=14)
    parser.add_argument("--kernels", default=",".join(k for k, _, _ in KERNELS))
    args = parser.parse_args()
    work = Path("/tmp/optimize_gpu")
    work.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    wanted = args.kernels.split(",")
    for kernel, point, noalias in (k for k in KERNELS if k[0] in wanted):
        rows += _one_kernel(kernel, point, noalias, args, work)
        _write(args.out, rows)
    return 0


def _one_kernel(kernel, point, noalias, args, work: Path) -> list[dict]:
    from timing.cli_support import validated_spec
    from timing.evaluate import check_and_time_job, describe_status
    from timing.worker import Job, WorkerPool

    cubin = _suite_cubin(kernel)
    spec_path = _spec_file(kernel, point, work)
    fast = work / kernel / "fast.cubin"
    cmd = optimize_command(
        cubin,
        kernel,
        fast,
        *(["--assume-noalias"] if noalias else []),
        launch=spec_path,
        budget=args.budget,
        time=f"{args.seconds}s",
        jobs=args.jobs,
        device="gpu",
        candidate_budget=1,
    )
    started = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    elapsed = time.monotonic() - started
    print(done.stderr[-1500:], flush=True)
    (args.out / kernel).mkdir(parents=True, exist_ok=True)
    report_dir = fast.with_name("fast.reorder")
    for name in ("report.md", "trials.csv"):
        if (report_dir / name).exists():
            shutil.copy(report_dir / name, args.out / kernel / name)
    candidates = {"optimize": fast, **_single_moves(cubin, kernel, noalias, work)}
    spec = validated_spec(spec_path, [cubin], kernel)
    rows = []
    with WorkerPool(devices=[0]) as pool:
        for name, path in candidates.items():
            res = describe_status(
                pool.run(
                    Job.of(
                        check_and_time_job, str(cubin), str(path), spec, timeout_s=200, budget_s=4.0, target_ci_pct=0.5
                    )
                )
            )
            row = {
                "kernel": kernel,
                "point": json.dumps(point),
                "candidate": name,
                "optimize_rc": done.returncode,
                "optimize_seconds": round(elapsed, 1),
                **res,
            }
            rows.append(row)
            print(
                json.dumps(
                    {
                        k: row.get(k)
                        for k in (
                            "kernel",
                            "candidate",
                            "status",
                            "check",
                            "ratio",
                            "ci_low",
                            "ci_high",
                            "a_us",
                            "b_us",
                        )
                    }
                ),
                flush=True,
            )
    return rows


def _write(out: Path, rows: list[dict]) -> None:
    meta = {
        "gpu": provenance.gpu_name(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "commit": provenance.commit(),
        "l2": "warm",
    }
    write_rows(out / "optimize_summary.csv", [{**meta, **r} for r in rows])


if __name__ == "__main__":
    sys.exit(main())
