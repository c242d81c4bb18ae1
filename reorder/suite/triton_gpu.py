"""reorder against Triton's own tuning on the GPU: launch, check and time what the CPU built.

    python -m reorder.suite.triton_gpu --build gpu_build/triton --out OUT [--deadline 360]
        [--families a,b] [--l2 warm,cold] [--cell-budget 0.7] [--sets 2] [--no-jit-check] [--no-readme] [--dry-run]

Everything a compiler does was done on the CPU by reorder.suite.triton_build (each config's
cubin as Triton's JIT makes it for sm_90, reorder's SASS and PTX candidates for it, each
shape's launch spec from the metadata); this script only runs them, each step a
timing.worker job so a fault costs one job:

1. roofs: copy bandwidth and cuBLAS' fp16 GEMM rate (reorder.suite.triton_jobs.roof_job);
2. per family, one config launched by Triton's own JIT against the same cubin launched from
   reorder's spec: same cubin, byte-equal outputs, outputs within tolerance of torch
   (`--no-jit-check` skips it; the Triton cache the build filled is used, so the JIT
   compiles nothing when this machine's Triton is the build's);
3. per family x shape: every candidate byte-checked against its config's original on
   `--sets` fresh input sets with shared memory poisoned (a mismatch or a fault excludes
   the candidate, recorded); then for each L2 state every original and every identical
   candidate timed in the same rounds (timing.multi, `--cell-budget` seconds of rounds);
   reorder.suite.triton_cells turns the matrix into the cell's row and one row per config;
4. last, in this process: the README example run as written and timed against the same
   autotuner without reorder (reorder.suite.triton_readme; `--no-readme` skips it; 60 s of the
   deadline are kept for it).

Rows are written as each cell is done: OUT/triton_cells.csv (per cell), OUT/triton_configs.csv
(per cell x config: the original and reorder's best from it, paired ratio with 95% CI),
OUT/triton_checks.csv (every candidate's check), OUT/triton_steps.csv (the JIT cross-checks and
the README example, column `step`): seven files, so a log beside them still comes back;
OUT/summary.md and the
heatmaps (reorder.suite.triton_report) at the end (summary.md after every family too; a run cut
short draws them later with `python -m reorder.suite.triton_report OUT`). Cells not begun by the deadline are
rows marked skipped; the run stops cleanly. `--dry-run` walks every step without a GPU
(made-up times; tests/test_triton_gpu_script.py).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reorder.suite.rows import write_rows
from reorder.suite.triton_jobs import check_job, jit_job, roof_job, time_job
from timing.multi import Build

CELL_RESERVE_S = 8.0  # a shape (check + both L2 states) is not begun with less left
# job time limits are a few times what a job takes (a check ~0.1 s per candidate and set, a cell's
# timing its budget plus ~50 ms per build): a candidate that hangs costs seconds, not the run
JIT_RESERVE_S = 60.0  # the JIT cross-check is skipped with less left
README_RESERVE_S = 60.0  # kept back from the families for the README example (the last step)
# the order families run in (a deadline cuts the last ones): the feed-forward first
ORDER = (
    "ffn_swiglu_fp16",
    "matmul_leaky_fp16",
    "softmax_fp16",
    "rmsnorm_row_fp16",
    "rmsnorm_looped_fp16",
    "layernorm_fp16",
    "softmax_fp32",
    "rmsnorm_row_fp32",
    "rmsnorm_looped_fp32",
    "layernorm_fp32",
)


def _first_line(text: str) -> str:
    text = str(text).strip()
    return text.splitlines()[0] if text else ""


# ---------------------------------------------------------------- the manifest


@dataclass(frozen=True)
class Config:
    """One built config: its original and candidates (paths absolute), specs by shape."""

    label: str
    kwargs: dict
    kernel: str
    original: str
    candidates: tuple[tuple[str, str], ...]  # (name, cubin path)
    specs: dict  # shape -> spec dict

    def builds(self, shape: str) -> tuple[Build, list[Build]]:
        from timing.spec import parse_spec

        spec = parse_spec(self.specs[shape], source=f"<{self.kernel} {self.label} {shape}>")
        return (
            Build(self.label, self.original, spec),
            [Build(f"{self.label}/{name}", path, spec) for name, path in self.candidates],
        )


def load_manifest(build: Path) -> dict:
    path = build / "manifest.json"
    if not path.is_file():
        raise SystemExit(
            f"triton_gpu: {path} not found: run `python -m reorder.suite.triton_build --out {build}` on the CPU first"
        )
    return json.loads(path.read_text())


def configs_of(family: dict, build: Path) -> list[Config]:
    out = []
    for c in family["configs"]:
        if c.get("status") != "ok":
            continue
        folder = build / c["folder"]
        cands = tuple((k["name"], str(folder / k["cubin"])) for k in c.get("candidates", []) if k["status"] == "ok")
        out.append(Config(c["label"], c["config"], c["kernel"], str(folder / c["original"]), cands, c["specs"]))
    return out


# ---------------------------------------------------------------- where jobs run


class Live:
    """A timing.worker pool on the GPU."""

    def __init__(self) -> None:
        from timing.cli_support import worker_device
        from timing.worker import WorkerPool

        self.pool = WorkerPool(devices=[worker_device()])

    def run(self, func: Callable, *args: Any, timeout_s: float = 120.0, **kwargs: Any) -> tuple[str, Any]:
        """(status, value or reason) of one job."""
        from timing.worker import Job

        result = self.pool.run(Job.of(func, *args, timeout_s=timeout_s, **kwargs))
        return (result.status, result.value if result.status == "ok" else _first_line(result.reason))

    def gpu_name(self) -> str:
        status, value = self.run(_gpu_name_job)
        return value if status == "ok" else f"unknown ({value})"

    def close(self) -> None:
        self.pool.close()


def _gpu_name_job() -> str:
    from reorder.base import provenance

    return provenance.gpu_name()


class Dry(Live):
    """The same steps without a GPU: every check passes, times are made up (and say so)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def run(self, func: Callable, *args: Any, timeout_s: float = 120.0, **kwargs: Any) -> tuple[str, Any]:
        import numpy as np

        self.calls.append(func.__name__)
        if func.__name__ == "roof_job":
            return "ok", {"bytes_per_s": 4.0e12, "flops": 6.0e14}
        if func.__name__ == "check_job":
            return "ok", {
                c.label: {"check": "identical", "detail": "dry run: not run"} for _, cands in args[0] for c in cands
            }
        if func.__name__ == "time_job":
            builds = args[0]
            rng = np.random.default_rng(len(builds))
            base = np.array([10.0 + (sum(map(ord, b.label)) % 13) / 10 for b in builds])
            times = base * (1 + 0.01 * rng.standard_normal((24, len(builds))))
            return "ok", {
                "labels": [b.label for b in builds],
                "times": times.tolist(),
                "rounds": 24,
                "dropped_rounds": 0,
                "clock_mhz": float("nan"),
                "seconds": 0.0,
            }
        if func.__name__ == "jit_job":
            return "ok", {"jit_same_cubin": "not run (dry)", "launch_outputs": "not run (dry)"}
        return "error", f"dry run has no {func.__name__}"

    def gpu_name(self) -> str:
        return "none (dry run)"

    def close(self) -> None:
        pass


# ---------------------------------------------------------------- the run


@dataclass
class Run:
    out: Path
    build: Path
    deadline: float
    l2: tuple[str, ...]
    cell_budget: float
    sets: int
    device: Any
    started: float = field(default_factory=time.monotonic)
    stamps: dict = field(default_factory=dict)
    roof: dict = field(default_factory=dict)
    tables: dict = field(default_factory=lambda: {"cells": [], "configs": [], "checks": [], "steps": []})

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def add(self, table: str, row: dict) -> None:
        self.tables[table].append({**self.stamps, **row})
        write_rows(self.out / f"triton_{table}.csv", self.tables[table])

    def say(self, line: str) -> None:
        print(f"[{time.monotonic() - self.started:5.0f} s] {line}", file=sys.stderr, flush=True)


def jit_check(run: Run, family: dict, configs: list[Config]) -> None:
    """Triton's JIT against reorder's launch for the family's first config at its first shape."""
    config, shape = configs[0], family["shapes"][0]
    original, _ = config.builds(shape["shape"])
    status, value = run.device.run(jit_job, family["name"], shape["dims"], config.kwargs, original, timeout_s=90)
    row = {"step": "jit", "family": family["name"], "shape": shape["shape"], "config": config.label, "status": status}
    run.add("steps", {**row, **value} if status == "ok" else {**row, "reason": value})


def check_shape(run: Run, configs: list[Config], shape: str) -> dict[str, dict]:
    """label -> check of every candidate at this shape (a crashed job is retried per candidate,
    so one faulting candidate is named and excluded, not the cell)."""
    groups = [c.builds(shape) for c in configs if shape in c.specs]
    count = sum(len(candidates) for _, candidates in groups)
    status, value = run.device.run(check_job, groups, sets=run.sets, timeout_s=20 + 1.0 * run.sets * count)
    if status == "ok":
        return value
    run.say(f"check job {status} ({value}); checking one candidate at a time")
    out = {}
    for original, candidates in groups:
        for cand in candidates:
            if run.left() < CELL_RESERVE_S:
                out[cand.label] = {"check": "not checked", "detail": "deadline"}
                continue
            status, one = run.device.run(check_job, [(original, [cand])], sets=run.sets, timeout_s=20)
            out[cand.label] = one[cand.label] if status == "ok" else {"check": status, "detail": one}
    return out


def time_cell(run: Run, family: dict, shape: dict, configs: list[Config], checks: dict, l2: str) -> None:
    from reorder.suite.triton_cells import Member, cell_summary, config_rows

    members, builds = [], []
    for c in configs:
        if shape["shape"] not in c.specs:
            continue
        original, candidates = c.builds(shape["shape"])
        members.append(Member(c.label))
        builds.append(original)
        for cand in candidates:
            if checks.get(cand.label, {}).get("check") == "identical":
                members.append(Member(c.label, cand.label.split("/", 1)[1]))
                builds.append(cand)
    base = {
        "family": family["name"],
        "dtype": family["dtype"],
        "shape": shape["shape"],
        "l2": l2,
        "configs": sum(not m.candidate for m in members),
        "candidates_timed": sum(bool(m.candidate) for m in members),
        "candidates_rejected": sum(v.get("check") != "identical" for v in checks.values()),
    }
    status, value = run.device.run(
        time_job, builds, l2, run.cell_budget, timeout_s=30 + 10 * run.cell_budget + 0.5 * len(builds)
    )
    if status != "ok":
        run.add("cells", {**base, "status": status, "reason": value})
        return
    import numpy as np

    times = np.asarray(value["times"])
    timing = {"rounds": value["rounds"], "dropped_rounds": value["dropped_rounds"], "clock_mhz": value["clock_mhz"]}
    run.add(
        "cells",
        {**base, **cell_summary(members, times, shape["bytes"], shape["flops"], run.roof), **timing, "status": "ok"},
    )
    for row in config_rows(members, times):
        run.add("configs", {"family": family["name"], "shape": shape["shape"], "l2": l2, **row})


def family_rows(run: Run, family: dict, jit: bool) -> None:
    configs = configs_of(family, run.build)
    if not configs:
        run.add("cells", {"family": family["name"], "status": "error", "reason": "no config was built"})
        return
    if jit and run.left() > JIT_RESERVE_S:
        jit_check(run, family, configs)
    for shape in family["shapes"]:
        if run.left() < CELL_RESERVE_S:
            for l2 in run.l2:
                run.add(
                    "cells",
                    {
                        "family": family["name"],
                        "shape": shape["shape"],
                        "l2": l2,
                        "status": "skipped",
                        "reason": "deadline",
                    },
                )
            continue
        checks = check_shape(run, configs, shape["shape"])
        for label, verdict in checks.items():
            run.add("checks", {"family": family["name"], "shape": shape["shape"], "candidate": label, **verdict})
        for l2 in run.l2:
            time_cell(run, family, shape, configs, checks, l2)


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m reorder.suite.triton_gpu", description=__doc__.split("\n\n")[0])
    p.add_argument("--build", type=Path, default=Path("gpu_build/triton"), help="what reorder.suite.triton_build wrote")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--families", help="comma list (default: every family built)")
    p.add_argument("--deadline", type=float, default=360.0, help="seconds; shapes not begun by then are skipped")
    p.add_argument("--l2", default="warm,cold")
    p.add_argument("--cell-budget", type=float, default=0.7, help="seconds of timing rounds per cell and L2 state")
    p.add_argument("--sets", type=int, default=2, help="fresh input sets per byte check")
    p.add_argument("--no-jit-check", action="store_true", help="skip launching each family once through Triton")
    p.add_argument("--no-readme", action="store_true", help="skip the README example (reorder.suite.triton_readme)")
    p.add_argument("--dry-run", action="store_true", help="walk every step without a GPU (nothing is measured)")
    return p.parse_args(argv)


def _caches(build: Path) -> None:
    """Point Triton and reorder at writable copies of the caches the build filled."""
    for folder, variable in (("triton_cache", "TRITON_CACHE_DIR"), ("reorder_cache", "REORDER_CACHE")):
        source = build / folder
        if source.is_dir() and variable not in os.environ:
            target = Path(tempfile.mkdtemp(prefix=f"{folder}-")) / "cache"
            shutil.copytree(source, target)
            os.environ[variable] = str(target)


def readme_step(run: Run, dry: bool) -> None:
    """The README example, run and timed (reorder.suite.triton_readme), in this process."""
    from reorder.triton.digest import code_digest

    row = {"step": "readme", "digest_matches_build": code_digest() == run.stamps.get("built_digest")}
    if dry:
        run.add("steps", {**row, "status": "dry", "reason": "not run (dry run)"})
        return
    try:
        from reorder.suite.triton_readme import measure

        run.add("steps", {**row, **measure(), "status": "ok"})
    except Exception as exc:  # noqa: BLE001 - the last step; every other row is written already
        run.add("steps", {**row, "status": "error", "reason": f"{type(exc).__name__}: {_first_line(str(exc))}"})


def main(argv: list[str] | None = None) -> int:
    from reorder.base import provenance
    from reorder.suite.triton_report import write_report

    args = parse(argv)
    manifest = load_manifest(args.build)
    wanted = args.families.split(",") if args.families else [f["name"] for f in manifest["families"]]
    families = sorted(
        (f for f in manifest["families"] if f["name"] in wanted),
        key=lambda f: ORDER.index(f["name"]) if f["name"] in ORDER else len(ORDER),
    )
    missing = sorted(set(wanted) - {f["name"] for f in families})
    args.out.mkdir(parents=True, exist_ok=True)
    _caches(args.build)
    device = Dry() if args.dry_run else Live()
    reserve = 0.0 if args.no_readme else README_RESERVE_S
    run = Run(
        args.out,
        args.build,
        time.monotonic() + args.deadline - reserve,
        tuple(args.l2.split(",")),
        args.cell_budget,
        args.sets,
        device,
    )
    try:
        run.stamps = {
            "gpu": device.gpu_name(),
            "date": time.strftime("%Y-%m-%d %H:%M:%S"),
            "commit": provenance.commit(),
            "built_by_triton": manifest["triton"],
            "built_commit": manifest["commit"],
            "built_digest": manifest["code_digest"],
        }
        status, roof = device.run(roof_job)
        run.roof = roof if status == "ok" else {}
        run.stamps.update({f"roof_{k}": v for k, v in run.roof.items()})
        run.say(f"{run.stamps['gpu']}: roofs {roof}")
        for name in missing:
            run.add("cells", {"family": name, "status": "error", "reason": "not in the build's manifest"})
        for family in families:
            run.say(f"{family['name']}: {len(family['shapes'])} shapes")
            try:
                family_rows(run, family, jit=not args.no_jit_check)
            except Exception as exc:  # noqa: BLE001 - a family's failure is a row; the next family runs
                run.add(
                    "cells",
                    {
                        "family": family["name"],
                        "status": "error",
                        "reason": f"{type(exc).__name__}: {_first_line(str(exc))}",
                    },
                )
            write_report(args.out, run.roof, heatmaps=False)  # a cut run keeps its summary
    finally:
        device.close()
    if not args.no_readme:
        run.say("README example")
        readme_step(run, args.dry_run)
    write_report(args.out, run.roof)
    run.say(f"wrote {', '.join(sorted(p.name for p in args.out.iterdir()))} in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
