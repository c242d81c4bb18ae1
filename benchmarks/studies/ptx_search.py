"""GPU side of the two-level search benchmark: the best PTX+SASS candidate against the best
SASS-only candidate, per kernel and launch shape, on cubins built on the CPU by
benchmarks/ptx_search_build.py (nothing compiles here).

    python -m benchmarks.studies ptx_search --build gpu_build/ptx_search --out OUT [--deadline 225]
        [--screen 0.3] [--final 1.0] [--dry-run]     (or python -m benchmarks.ptx_search_gpu ...)
    python -m benchmarks.studies ptx_search --prepare [--out gpu_build/ptx_search] ...   (the CPU side)

Per kernel (rmsnorm_triton_style first):

1. Check: each candidate against the original (the suite's cubin) byte for byte on fresh
   inputs, shared memory poisoned (timing.check), at every launch shape it is picked at and
   at the spec's sweep point with the most blocks (a launch filling every SM where the spec
   has one); then timed (paired, CUDA graphs, warm L2) at each shape for --screen seconds.
   A candidate that is not byte-identical is not timed. Candidates go most promising first,
   PTX+SASS and SASS-only alternately, while the kernel's slice of the deadline lasts
   (rmsnorm_triton_style 35 %, the others an even share of what is left).
2. Per shape: the best PTX+SASS candidate and the best SASS-only candidate (lowest screened
   ratio) are timed again, fresh, against the original and against each other (--final
   seconds each): picking the best of several noisy screens flatters the pick.
3. Each winner is re-checked at every sweep point of the spec on fresh input sets.

Rows go to OUT/ptx_search_screen.csv and OUT/ptx_search_final.csv as they come; OUT/summary.md
has the table (ratios = time(candidate)/time(original) with 95% CI) and, for
rmsnorm_triton_style, the targets (speed-up >= 1.25x at 1 and 16 rows, >= 1.12x at
1024). A failing job is a row with its reason; kernels not begun before the deadline are rows
marked skipped. --dry-run walks every step without a GPU with made-up numbers
(tests/test_ptx_search_gpu_script.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time
from pathlib import Path
from typing import ClassVar

from benchmarks import ptx_search_build
from benchmarks.studies.runner import DryDevice, LiveDevice, ScreenedRecord, Study, lanes, load_suite_spec
from reorder.suite.rows import error_line

KERNEL_RESERVE_S = 10.0  # a kernel is not begun with less left
RMS_SHARE = 0.35  # of the deadline, for rmsnorm_triton_style (the must-show); the rest split evenly
FINAL_OVERHEAD_S = 0.7  # a timing job's setup beyond its budget (graph capture, calibration)
RECHECK_S = 2.0
CHECK_SETS = 2  # fresh input sets per launch (the draws dominate a check)
RECHECK_SETS = 3
TARGETS = {"rmsnorm_triton_style": {1: 1.25, 16: 1.25, 1024: 1.12}}


def screen_job(a_cubin: str, b_cubin: str, shapes: tuple, more: tuple, budget_s: float) -> dict:
    """In the worker: byte check at every shape and each of `more`, then paired timing at each shape."""
    from timing.evaluate import check_job, time_job

    row = check_job(a_cubin, b_cubin, shapes[0], sets=CHECK_SETS, more=(*shapes[1:], *more))
    if row["check"] != "identical":
        return row
    return {**row, "times": [time_job(a_cubin, b_cubin, s, budget_s=budget_s, target_ci_pct=0.5) for s in shapes]}


# By path: a module run as `python -m` is __main__, and a worker
# job must name a function it can import (timing.worker.Job.of refuses __main__'s).
SCREEN_JOB = "benchmarks.studies.ptx_search:screen_job"


class Live(LiveDevice):
    """Jobs in one isolated worker process on the GPU (a fault costs one job)."""

    def screen(self, a: Path, b: Path, shapes: list, more: list, budget_s: float) -> dict:
        return self.job(
            SCREEN_JOB, str(a), str(b), tuple(shapes), tuple(more), budget_s, timeout_s=120 + 3 * budget_s * len(shapes)
        )

    def time(self, a: Path, b: Path, spec, budget_s: float) -> dict:
        return self.job(
            "timing.evaluate:time_job", str(a), str(b), spec, budget_s=budget_s, target_ci_pct=0.3, timeout_s=90
        )

    def check(self, a: Path, b: Path, specs: list, first_set: int) -> dict:
        return self.job(
            "timing.evaluate:check_job",
            str(a),
            str(b),
            specs[0],
            sets=RECHECK_SETS,
            more=tuple(specs[1:]),
            first_set=first_set,
            timeout_s=180,
        )


class Dry(DryDevice, Live):
    """No GPU: made-up ratios from the files' names (not measurements), so every step is walked."""

    def _timed(self, a, b, spec) -> dict:
        return self.made_up(f"{Path(a).name}/{Path(b).name}/{spec.grid}", base=0.7, spread=400)

    def screen(self, a, b, shapes, more, budget_s) -> dict:
        assert Path(a).is_file() and Path(b).is_file() and shapes, (a, b)
        return {
            "status": "ok",
            "check": "identical",
            "check_detail": "dry run",
            "times": [self._timed(a, b, s) for s in shapes],
        }

    def time(self, a, b, spec, budget_s) -> dict:
        return {"status": "ok", **self._timed(a, b, spec)}

    def check(self, a, b, specs, first_set) -> dict:
        return {"status": "ok", "check": "identical", "check_detail": f"dry run, {len(specs)} launches"}


@dataclasses.dataclass
class Run(ScreenedRecord):
    prefix: ClassVar[str] = "ptx_search"
    final: list = dataclasses.field(default_factory=list)
    rechecked: dict = dataclasses.field(default_factory=dict)


def launches(kernel: str, record: dict) -> tuple[list, list, list]:
    """(the shapes picked at, the extra check launch: the sweep point with the most blocks, every sweep point)."""
    shapes = [load_suite_spec(kernel, point or None) for point in record["shapes"]]
    sweep = [load_suite_spec(kernel, point) for point in record["sweep"]] or shapes[:1]
    fill = max([*sweep, *shapes], key=lambda s: math.prod(s.grid))
    return shapes, [fill] if fill not in shapes else [], sweep


def shape_name(point: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in point.items()) or "spec"


COMBO_RANK = {"none": 0, "sc": 1, "sb+sc": 2, "lb+sc": 3, "sb": 2, "lb": 3}
SASS_RANK = {"sass-sb+sc": 0, "sass-lb+sc": 1, "sass-sc": 2, "sass-sb": 3, "sass-lb": 4}


def priority(candidates: list[dict]) -> list[dict]:
    """PTX+SASS and SASS-only candidates alternately, each list most promising first (PTX
    variants in build order, the plain build of a variant before its SASS families, the
    first variants' families before the last variants; the SASS seeds that combine a
    grouping with stall cuts first), so a kernel cut short by its time slice still has both."""
    ptx = sorted(
        (c for c in candidates if c["level"] == "ptx+sass"),
        key=lambda c: int(c["name"][3:].split("-")[0]) + 2 * COMBO_RANK.get(c["name"].split("-", 1)[1], 4),
    )
    sass = sorted((c for c in candidates if c["level"] == "sass"), key=lambda c: SASS_RANK.get(c["name"], 5))
    out = []
    for k in range(max(len(ptx), len(sass))):
        out += ptx[k : k + 1] + sass[k : k + 1]
    return out


def screen_kernel(run: Run, record: dict, shapes: list, more: list, until: float) -> dict:
    """Check and screen the candidates, most promising first, until `until` (monotonic);
    {candidate name: [ratio per shape or None]}."""
    kernel = record["kernel"]
    screened = {}
    for cand in priority(record["candidates"]):
        if time.monotonic() >= until:
            run.add(
                "screen",
                {
                    "kernel": kernel,
                    "candidate": cand["name"],
                    "status": "skipped",
                    "reason": "the kernel's time slice is spent",
                },
            )
            continue
        try:
            row = run.device.screen(
                run.build / record["original"], run.build / cand["cubin"], shapes, more, run.screen_s
            )
        except Exception as exc:  # noqa: BLE001 - one candidate's failure is a row
            row = {"status": "error", "reason": error_line(exc)}
        times = row.pop("times", None) or [{}] * len(shapes)
        for point, t in zip(record["shapes"], times):
            run.add(
                "screen",
                {
                    "kernel": kernel,
                    "candidate": cand["name"],
                    "level": cand["level"],
                    "shape": shape_name(point),
                    "moves": cand["moves"],
                    **row,
                    **t,
                },
            )
        if row.get("status") == "ok" and row.get("check") == "identical":
            screened[cand["name"]] = [t.get("ratio") for t in times]
    return screened


def screened_ratio(screened: dict, name: str, k: int) -> float | None:
    """The candidate's screened ratio at shape k, None when it was not screened there (cut by
    the time slice, or a screen that returned fewer shapes)."""
    ratios = screened.get(name) or []
    return ratios[k] if k < len(ratios) and isinstance(ratios[k], float) else None


def best(record: dict, screened: dict, level: str, k: int) -> dict | None:
    pool = [
        c for c in record["candidates"] if c["level"] == level and screened_ratio(screened, c["name"], k) is not None
    ]
    return min(pool, key=lambda c: screened_ratio(screened, c["name"], k), default=None)


def recheck(run: Run, record: dict, cand: dict, sweep: list) -> str:
    """'identical at N sweep points (...)' or why not; once per candidate."""
    key = (record["kernel"], cand["name"])
    if key not in run.rechecked:
        try:
            row = run.device.check(run.build / record["original"], run.build / cand["cubin"], sweep, 5_000_000)
            run.rechecked[key] = (
                f"identical at {len(sweep)} sweep points ({RECHECK_SETS} fresh sets each)"
                if row.get("check") == "identical"
                else f"{row.get('check') or row.get('status')}: {row.get('check_detail') or row.get('reason')}"
            )
        except Exception as exc:  # noqa: BLE001
            run.rechecked[key] = f"error: {error_line(exc)}"
    return run.rechecked[key]


def _timed(run: Run, a: Path, b: Path, spec) -> dict:
    try:
        return run.device.time(a, b, spec, run.final_s)
    except Exception as exc:  # noqa: BLE001
        return {"status": "error", "reason": error_line(exc)}


def finals(run: Run, record: dict, screened: dict, shapes: list, sweep: list) -> None:
    """Per shape: the winners timed fresh against the original and against each other, and re-checked."""
    original = run.build / record["original"]
    for k, (point, spec) in enumerate(zip(record["shapes"], shapes)):
        row = {"kernel": record["kernel"], "shape": shape_name(point), "noalias": record["noalias"]}
        ptx, sass = best(record, screened, "ptx+sass", k), best(record, screened, "sass", k)
        for tag, cand in (("ptx", ptx), ("sass", sass)):
            if cand is None:
                row[f"{tag}_status"] = "no byte-identical candidate"
                continue
            t = _timed(run, original, run.build / cand["cubin"], spec)
            row.update(
                {
                    f"{tag}_best": cand["name"],
                    f"{tag}_moves": cand["moves"],
                    f"{tag}_screen": screened[cand["name"]][k],
                    **{f"{tag}_{f}": t.get(f) for f in ("ratio", "ci_low", "ci_high", "status", "reason")},
                    f"{tag}_recheck": recheck(run, record, cand, sweep),
                }
            )
        if ptx and sass:
            t = _timed(run, run.build / sass["cubin"], run.build / ptx["cubin"], spec)
            row.update({f"vs_sass_{f}": t.get(f) for f in ("ratio", "ci_low", "ci_high", "status", "reason")})
        run.add("final", row)


def kernel_rows(run: Run, record: dict, slice_s: float) -> None:
    """Screen for the kernel's slice of the time left, keeping what its finals need."""
    shapes, more, sweep = launches(record["kernel"], record)
    finals_s = len(shapes) * 3 * (run.final_s + FINAL_OVERHEAD_S) + 2 * RECHECK_S * len(shapes)
    screened = screen_kernel(run, record, shapes, more, time.monotonic() + max(slice_s - finals_s, 1.0))
    finals(run, record, screened, shapes, sweep)


def _ci(row: dict, tag: str) -> str:
    r = row.get(f"{tag}_ratio")
    return f"{r:.3f} [{row[f'{tag}_ci_low']:.3f}, {row[f'{tag}_ci_high']:.3f}]" if isinstance(r, float) else "-"


def summary(run: Run) -> str:
    s = run.stamps
    lines = [
        f"# Two-level search (PTX moves + ptxas + SASS) vs SASS-only, suite kernels ({s['gpu']}, {s['date']}, "
        f"built at {s['commit']})",
        "",
        "ratio = time(candidate) / time(original), paired, warm L2, 95% CI; each winner picked among the "
        "CPU-built candidates by a screen at its shape, then timed again fresh. PTX+SASS: PTX variants of the "
        "registered move kinds, ptxas -O3, SASS families on top; SASS-only: the SASS search's seeds (each "
        "grouping family alone and with stall cuts, stall cuts alone), not a whole SASS study",
        "",
        "| kernel | shape | PTX+SASS best | ratio [95% CI] | SASS-only best | ratio [95% CI] | "
        "PTX+SASS / SASS-only [95% CI] | re-check of the winners |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in run.final:
        if r.get("status") in ("skipped", "error"):
            lines.append(f"| {r['kernel']} | - | {r['status']}: {r.get('reason', '')} | | | | | |")
            continue
        lines.append(
            f"| {r['kernel']} | {r['shape']} | {r.get('ptx_moves', r.get('ptx_status', '-'))} | "
            f"{_ci(r, 'ptx')} | {r.get('sass_best', r.get('sass_status', '-'))} | {_ci(r, 'sass')} | "
            f"{_ci(r, 'vs_sass')} | PTX+SASS: {r.get('ptx_recheck', '-')}; SASS: {r.get('sass_recheck', '-')} |"
        )
    lines += targets(run)
    mismatches = [r for r in run.screen if r.get("check") == "MISMATCH"]
    identical = len({(r["kernel"], r["candidate"]) for r in run.screen if r.get("check") == "identical"})
    lines += [
        "",
        f"screen checks: {identical} candidates byte-identical, {len(mismatches)} rows MISMATCH (never timed)",
    ]
    lines += [f"- {m['kernel']} {m['candidate']}: {m.get('check_detail', '')}" for m in mismatches]
    return "\n".join(lines) + "\n"


def targets(run: Run) -> list[str]:
    out = []
    for r in run.final:
        want = TARGETS.get(r["kernel"], {}).get(int(r["shape"].split("=")[1]) if "rows=" in r.get("shape", "") else -1)
        if want and isinstance(r.get("ptx_ratio"), float):
            speed, sure = 1 / r["ptx_ratio"], 1 / r["ptx_ci_high"]
            out.append(
                f"- {r['kernel']} {r['shape']}: speed-up {speed:.3f}x (CI low {sure:.3f}x), target >= {want}x: "
                f"{'met' if sure >= want else 'met by the point estimate only' if speed >= want else 'NOT met'}"
            )
    return ["", "Targets:", *out] if out else []


def order(kernels: list[dict]) -> list[dict]:
    """rmsnorm_triton_style first (the must-show), warp_select_k100 last (the largest)."""
    rank = {"rmsnorm_triton_style": 0, "warp_select_k100": 2}
    return sorted(kernels, key=lambda k: rank.get(k["kernel"], 1))


def options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--screen", type=float, default=0.3, help="seconds of paired timing per candidate and shape")
    p.add_argument("--final", type=float, default=1.0, help="seconds of paired timing for each winner")
    p.add_argument("--kernels", default="", help="comma list: only these kernels of the build (a run that resumes)")


def select(manifest: dict, args: argparse.Namespace) -> dict:
    """The kernels asked for (--kernels), or ValueError naming those the build does not have."""
    wanted = [k for k in args.kernels.split(",") if k]
    unknown = sorted(set(wanted) - {r["kernel"] for r in manifest["kernels"]})
    if unknown:
        raise ValueError(f"not in the build: {', '.join(unknown)}")
    return {**manifest, "kernels": [r for r in manifest["kernels"] if r["kernel"] in wanted]} if wanted else manifest


def record(run) -> Run:
    a = run.args
    return Run(a.build, a.out, run.deadline, a.screen, a.final, run.device, run.stamps)


def check_and_time(run, rec: Run) -> None:
    """Kernels in order, rmsnorm_triton_style with its share of the deadline, the others an even
    share of what is left; a kernel not begun with KERNEL_RESERVE_S left is a skipped row."""
    kernels = order(run.manifest["kernels"])

    def one(item: tuple[int, dict]) -> None:
        k, kernel = item
        name = kernel["kernel"]
        share = run.args.deadline * RMS_SHARE if name == "rmsnorm_triton_style" else rec.left() / (len(kernels) - k)
        run.log(f"{name}: {len(kernel['candidates'])} candidates, {share:.0f} s")
        kernel_rows(rec, kernel, min(share, rec.left()))

    lanes(
        rec,
        "final",
        enumerate(kernels),
        one,
        key=lambda item: {"kernel": item[1]["kernel"]},
        reserve_s=KERNEL_RESERVE_S,
        after=lambda: (rec.out / "summary.md").write_text(summary(rec)),
    )


STUDY = Study(
    name="ptx_search",
    build=ptx_search_build.main,
    record=record,
    check_and_time=check_and_time,
    plot=lambda rec, out: summary(rec),
    doc=__doc__ or "",
    build_dir=Path("gpu_build/ptx_search"),
    deadline_s=225.0,
    options=options,
    select=select,
    live=Live,
    dry=Dry,
)
