"""`reorder optimize` on the GPU for several suite kernels, against the best single move.

    python -m benchmarks.studies optimize --out OUT [--budget 100] [--seconds 150] [--jobs 14] [--kernels a,b]
    python -m benchmarks.studies optimize --out OUT --kernels find_index --dry-run   (CPU: every step walked)

For each kernel: write its launch spec (at a sweep point), run `reorder optimize` on the GPU
with a 100-trial budget, then time, under the same conditions, the optimized cubin and each
hand-chosen single move (batch-loads alone, stall cuts alone) against the original. Nothing is
built ahead: the single moves are built on the CPU as each kernel's turn comes. Writes
OUT/optimize_summary.csv and each kernel's report.md and trials.csv; a dry run copies the
original as the search's output and times nothing (made-up ratios).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import ClassVar

from benchmarks.studies.runner import (
    BuildRecord,
    DryDevice,
    ProcessDevice,
    commit,
    copy_report,
    declared,
    lanes,
    optimize_command,
    ratio_ci,
    suite_cubin,
    summary_head,
    write_suite_spec,
)

# kernel, sweep point, assume no alias (the RMSNorm loads sit behind stores of another buffer)
KERNELS = (
    ("rmsnorm_triton_style", {"rows": 16}, True),
    ("normalize_weights", None, False),
    ("find_index", None, False),
)
RATIO = "ratio = time(candidate) / time(original), paired CUDA-graph replay, warm L2, 95% CI"
SHOWN = ("kernel", "candidate", "status", "check", "ratio", "ci_low", "ci_high", "a_us", "b_us")


def options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--budget", type=int, default=100, help="trials of the search")
    p.add_argument("--seconds", type=int, default=150, help="seconds of search per kernel")
    p.add_argument("--jobs", type=int, default=14, help="builds in parallel")
    p.add_argument("--kernels", default=",".join(k for k, _, _ in KERNELS), help="comma list of kernels")
    p.add_argument("--work", type=Path, default=Path("/tmp/optimize_gpu"), help="specs, single moves, search output")


def manifest(args: argparse.Namespace) -> dict:
    """The kernels --kernels names, in KERNELS' order; ValueError naming one it does not hold."""
    wanted = [k for k in args.kernels.split(",") if k]
    unknown = sorted(set(wanted) - {k for k, _, _ in KERNELS})
    if unknown:
        raise ValueError(f"no kernel {', '.join(unknown)} (have: {', '.join(k for k, _, _ in KERNELS)})")
    chosen = [{"kernel": k, "point": p, "noalias": n} for k, p, n in KERNELS if k in wanted]
    return {"commit": commit(), "kernels": chosen}


def single_moves(cubin: Path, kernel: str, noalias: bool, folder: Path) -> dict[str, Path]:
    """Each hand-chosen single move that applies, written into `folder`."""
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


class Live(ProcessDevice):
    """The search as a subprocess on this host's GPU; the timing in one isolated worker,
    started after the search and ended before the next."""

    def optimize(self, cmd: list[str], cubin: Path, fast: Path) -> tuple[int, str]:
        """`reorder optimize`'s exit code and the tail of what it said on stderr."""
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        return done.returncode, done.stderr[-1500:]

    def check_and_time(self, a: Path, b: Path, spec) -> dict:
        return self.job(
            "timing.evaluate:check_and_time_job", str(a), str(b), spec, timeout_s=200, budget_s=4.0, target_ci_pct=0.5
        )


class Dry(DryDevice, Live):
    """No GPU: the original stands in for the search's output, ratios made up from the names."""

    def optimize(self, cmd, cubin, fast) -> tuple[int, str]:
        assert "optimize" in cmd and Path(cmd[cmd.index("--launch") + 1]).is_file(), cmd
        fast.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(cubin, fast)
        return 0, "dry run: no search"

    def check_and_time(self, a, b, spec) -> dict:
        assert Path(a).is_file() and Path(b).is_file() and spec.name, (a, b)
        return {"status": "ok", "check": "identical", "check_detail": "dry run", **self.made_up(Path(b).name)}


@dataclasses.dataclass
class Rows(BuildRecord):
    prefix: ClassVar[str] = "optimize"
    summary: list = dataclasses.field(default_factory=list)


def one_kernel(run, rec: Rows, e: dict) -> None:
    """Search one kernel, then time the search's output and each single move against the original."""
    from timing.cli_support import validated_spec

    kernel, work = e["kernel"], run.args.work
    cubin = suite_cubin(kernel)
    spec_path = write_suite_spec(kernel, e["point"], work / f"{kernel}.toml")
    fast = work / kernel / "fast.cubin"
    cmd = optimize_command(
        cubin,
        kernel,
        fast,
        *(["--assume-noalias"] if e["noalias"] else []),
        launch=spec_path,
        budget=run.args.budget,
        time=f"{run.args.seconds}s",
        jobs=run.args.jobs,
        device="gpu",
        candidate_budget=1,
    )
    started = time.monotonic()
    rc, said = rec.device.optimize(cmd, cubin, fast)
    elapsed = time.monotonic() - started
    print(said, flush=True)
    copy_report(fast, run.args.out / kernel)
    candidates = {"optimize": fast, **single_moves(cubin, kernel, e["noalias"], work)}
    spec = validated_spec(spec_path, [cubin], kernel)
    for name, path in candidates.items():
        fields = {"kernel": kernel, "point": json.dumps(e["point"]), "candidate": name, "l2": "warm"}
        row = {**fields, "optimize_rc": rc, "optimize_seconds": round(elapsed, 1)}
        rec.add("summary", {**row, **rec.device.check_and_time(cubin, path, spec)})
        print(json.dumps({k: rec.summary[-1].get(k) for k in SHOWN}), flush=True)
    rec.device.release()


def check_and_time(run, rec: Rows) -> None:
    run.args.work.mkdir(parents=True, exist_ok=True)
    lanes(
        rec,
        "summary",
        run.manifest["kernels"],
        lambda e: one_kernel(run, rec, e),
        key=lambda e: {"kernel": e["kernel"], "point": json.dumps(e["point"])},
        reserve_s=lambda e: run.args.seconds + 30.0,
    )


def summary(rec: Rows, out: Path) -> str:
    columns = ("kernel", "candidate", "optimize rc", "status", "check", "ratio [95% CI]")
    lines = summary_head("reorder optimize against single moves", rec.stamps, columns, RATIO)
    for r in rec.summary:
        cells = (r["kernel"], r.get("candidate", "-"), r.get("optimize_rc", "-"), r.get("status"), r.get("check", "-"))
        lines.append("| " + " | ".join(map(str, (*cells, ratio_ci(r)))) + " |")
    return "\n".join(lines) + "\n"


STUDY = declared(
    __name__,
    name="optimize",
    record=lambda run: Rows(run.args.work, run.args.out, run.deadline, run.device, run.stamps),
    deadline_s=1800.0,
)
