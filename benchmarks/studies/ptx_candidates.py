"""The PTX GlobalHoist candidates on the GPU (built by benchmarks/ptx_candidates.py): byte checks and timings.

    python -m benchmarks.studies ptx_candidates [--out OUT] [--rows 1,16,1024] [--budget S] [--dry-run]
        (or python -m benchmarks.ptx_candidates_gpu ...)
    python -m benchmarks.studies ptx_candidates --prepare [OUT_DIR]   (the CPU side: nvcc, ptxas)

Every candidate in benchmarks/kernels/ptx_candidates/manifest.json (the default build, checked
in) is checked byte for byte against the suite's checked-in cubin of its source
(benchmarks/kernels/cubin/, the SASS its source PTX compiles to), at the spec's launch and at
a launch of a few blocks, shared memory poisoned; the RMSNorm candidates are then timed
(paired CUDA-graph timing, warm L2) at each of --rows. Rows go to
OUT/ptx_candidates_gpu.csv as they come; OUT/summary.md has the table.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import ClassVar

from benchmarks import ptx_candidates
from benchmarks.kernels.build import CUBIN_DIR, cubin_name, source_for_kernel
from benchmarks.studies import stallcut
from benchmarks.studies.runner import (
    BuildRecord,
    DryDevice,
    LiveDevice,
    Study,
    commit,
    few_blocks,
    lanes,
    load_suite_spec,
    ratio_ci,
    record_of,
    summary_head,
)

TIMED = ("rmsnorm_triton_style", "rms_norm_f32")
ROOT = Path(__file__).resolve().parent.parent.parent
JOB_RESERVE_S = 5.0  # a check's seconds, or a timing's beyond its budget


class Live(LiveDevice):
    """Jobs in one isolated worker process on the GPU (a fault costs one job)."""

    def check(self, a: Path, b: Path, spec) -> dict:
        return self.job("timing.evaluate:check_job", str(a), str(b), spec, more=(few_blocks(spec),), timeout_s=120)

    def check_and_time(self, a: Path, b: Path, spec, more, budget_s: float) -> dict:
        return self.job(
            "timing.evaluate:check_and_time_job", str(a), str(b), spec, budget_s=budget_s, more=more, timeout_s=180
        )


class Dry(DryDevice, Live):
    """No GPU: made-up ratios from the files' names (not measurements), so every step is walked."""

    def check(self, a, b, spec) -> dict:
        assert Path(a).is_file() and Path(b).is_file() and few_blocks(spec).grid[0] >= 1, (a, b)
        return {"status": "ok", "check": "identical", "check_detail": "dry run"}

    def check_and_time(self, a, b, spec, more, budget_s) -> dict:
        return {**self.check(a, b, spec), **self.made_up(f"{Path(b).name}/{spec.grid}")}


@dataclasses.dataclass
class Rows(BuildRecord):
    prefix: ClassVar[str] = "ptx_candidates"
    gpu: list = dataclasses.field(default_factory=list)


def one_candidate(run, rec: Rows, row: dict) -> None:
    """Checked at the spec's launch and a few blocks; an RMSNorm candidate timed at each of --rows."""
    kernel = row["kernel"]
    original = CUBIN_DIR / cubin_name(source_for_kernel(kernel))
    candidate = ROOT / row["cubin"]
    fields = {"kernel": kernel, "candidate": row["cubin"], "mode": row["mode"], "moves": len(row["moves"])}
    spec = load_suite_spec(kernel)
    if kernel not in TIMED:
        rec.add("gpu", {**fields, **rec.device.check(original, candidate, spec)})
    for n in run.args.rows if kernel in TIMED else ():
        shaped = load_suite_spec(kernel, {"rows": n})
        got = rec.device.check_and_time(original, candidate, shaped, (few_blocks(spec),), run.args.budget)
        rec.add("gpu", {**fields, "rows": n, "l2": "warm", **got})
    run.log(f"{kernel} {row['mode']}: {rec.gpu[-1].get('status')} {rec.gpu[-1].get('check')}")


def check_and_time(run, rec: Rows) -> None:
    lanes(
        rec,
        "gpu",
        run.manifest["candidates"],
        lambda row: one_candidate(run, rec, row),
        key=lambda row: {"kernel": row["kernel"], "candidate": row["cubin"], "mode": row["mode"]},
        reserve_s=lambda row: (
            (run.args.budget + JOB_RESERVE_S) * len(run.args.rows) if row["kernel"] in TIMED else JOB_RESERVE_S
        ),
    )


def summary(rec: Rows, out: Path) -> str:
    title = "PTX GlobalHoist candidates against their source's SASS"
    columns = ("kernel", "mode", "moves", "rows", "status", "check", "ratio [95% CI]")
    lines = summary_head(title, rec.stamps, columns, stallcut.RATIO.replace("(cut)", "(candidate)"))
    for r in rec.gpu:
        cells = (r["kernel"], r.get("mode"), r.get("moves"), r.get("rows", "-"), r.get("status"), r.get("check", "-"))
        lines.append("| " + " | ".join(map(str, (*cells, ratio_ci(r)))) + " |")
    return "\n".join(lines) + "\n"


def options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--rows", default=(1, 16, 1024), type=lambda s: tuple(int(r) for r in s.split(",")), help="default 1,16,1024"
    )
    p.add_argument("--budget", type=float, default=6.0, help="seconds of timing per point (default 6)")


STUDY = Study(
    name="ptx_candidates",
    build=lambda argv: ptx_candidates.main(list(argv or [])),
    record=record_of(Rows),
    check_and_time=check_and_time,
    plot=summary,
    doc=__doc__ or "",
    build_dir=ptx_candidates.OUT_DIR,
    deadline_s=400.0,
    options=options,
    stamps=lambda manifest: {"commit": commit()},
    live=Live,
    dry=Dry,
)
