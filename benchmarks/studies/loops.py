"""GPU side of the loop-move benchmark: reorder's Prefetch/UnrollBatch against Triton's own
pipelining, on cubins built on the CPU by benchmarks/loops_build.py (nothing compiles here).

    python -m benchmarks.studies loops --build gpu_build/loops --out OUT [--deadline 220]
        [--screen 0.4] [--final 1.2] [--dry-run]     (or python -m benchmarks.loops_gpu ...)
    python -m benchmarks.studies loops --prepare [--suite] ...   (the CPU side: benchmarks/loops_build.py)

For each cell (Triton's looped RMSNorm, fp32: N x rows x BLOCK x num_warps, 16 cells):

1. Screen: every distinct variant against the num_stages=1 cubin (the original): Triton's
   `tl.range(num_stages=2..4)` builds (kernel num_stages 1-4 give one cubin, recorded by the
   build) and reorder's 8 candidates from the original's PTX (Prefetch 1-4, UnrollBatch 2/4,
   Prefetch 1/2 with the second pass's prologue loads above the block reduction's barrier).
   Each is first checked byte for byte on fresh inputs at the cell's shape and at a second
   shape (3 rows, a partial last block), shared memory poisoned (timing.check), then timed
   paired (timing.paired, CUDA graphs, warm L2) for --screen seconds. A pair runs with the
   larger of the two kernels' dynamic shared memory (Triton's pipelined builds stage loads
   in shared memory; the launch must give them what they need).
2. Triton's best (lowest screened ratio among its identical builds, the original included)
   and reorder's best (among its identical candidates, the original included: reorder
   keeps the original when nothing is faster) are timed against each other in a fresh
   paired measurement (--final seconds): `ratio` = reorder's best / Triton's best, with its
   95% CI. Fresh, because picking the best of several noisy screens flatters the pick.

Then, while the deadline allows, the suite's loop kernels (built with --suite): each
candidate checked at the suite spec and at a launch of a few blocks, then timed against the
source PTX's own cubin. Last, per suite kernel, its best identical candidate (lowest screened
ratio) over every point of the suite spec's [grid_sweep]: checked byte for byte at each point,
then timed there with warm and with cold L2 (OUT/loops_sweep.csv in `reorder bench`'s columns,
drawn by reorder.cli.bench.draw into OUT/heatmaps.png and OUT/medians.png).

Rows go to OUT/loops_screen.csv, OUT/loops_cells.csv and OUT/loops_suite.csv as they come;
OUT/summary.md has the per-cell table and the count of cells where reorder is faster or
equal (CI high <= 1, or the CI holding 1). A failing job is a row with its reason; cells not
begun before the deadline are rows marked skipped. --dry-run walks every step on a machine
without a GPU with made-up results (tests/test_loops_gpu_script.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
from pathlib import Path
from typing import ClassVar

from benchmarks import loops_build
from benchmarks.studies.runner import (
    SUITE,
    DryDevice,
    LiveDevice,
    ScreenedRecord,
    Study,
    few_blocks,
    lanes,
    load_suite_spec,
)
from reorder.suite.rows import error_line

CELL_RESERVE_S = 18.0  # what one cell needs (11 variants at 1024 rows); a cell is not begun with less left
SUITE_RESERVE_S = 3.0  # what one suite candidate needs
SWEEP_RESERVE_S = 2.0  # what one sweep point of one kernel needs (check + warm + cold)
SWEEP_SHARE = 0.35  # the share of the deadline kept for the sweep phase when the suite is built
CHECK_SETS = 2  # fresh input sets per launch shape (each a draw of up to 32 MB: the check's main cost)


def screen_job(
    a_cubin: str, b_cubin: str, spec, more, budget_s: float, b_shared: int, time_mismatch: bool = False
) -> dict:
    """In the worker: byte check on CHECK_SETS fresh input sets at the spec's shape and each
    of `more` (shared memory poisoned; both kernels given the larger dynamic shared memory),
    then paired timing, each kernel with its own shared memory (the spec's for A, `b_shared`
    for B). A candidate that is not byte-identical is not timed, unless `time_mismatch` (a
    Triton build: Triton's own configs compete whatever their bytes)."""
    import dataclasses

    from timing.evaluate import check_job, time_job

    both = max(spec.shared, b_shared)
    row = check_job(
        a_cubin,
        b_cubin,
        dataclasses.replace(spec, shared=both),
        sets=CHECK_SETS,
        more=tuple(dataclasses.replace(m, shared=both) for m in more),
    )
    if row["check"] == "MISMATCH" and not time_mismatch:
        return row
    return {**row, **time_job(a_cubin, b_cubin, spec, budget_s=budget_s, target_ci_pct=0.5, b_shared=b_shared)}


def sweep_job(a_cubin: str, b_cubin: str, spec, budget_s: float) -> dict:
    """In the worker: byte check at one sweep point, then paired timing there with warm and
    with cold L2 (the candidate is not timed unless identical)."""
    from timing.evaluate import check_job, time_job

    row = check_job(a_cubin, b_cubin, spec, sets=CHECK_SETS)
    if row["check"] != "identical":
        return row
    return {
        **row,
        "timed": {
            l2: time_job(a_cubin, b_cubin, spec, l2=l2, budget_s=budget_s, target_ci_pct=0.5) for l2 in ("warm", "cold")
        },
    }


class Live(LiveDevice):
    """Jobs in one isolated worker process on the GPU (a fault costs one job)."""

    def check_and_time(
        self, a: Path, b: Path, spec, more, budget_s: float, b_shared: int, time_mismatch: bool = False
    ) -> dict:
        return self.job(
            "benchmarks.studies.loops:screen_job",
            str(a),
            str(b),
            spec,
            tuple(more),
            budget_s,
            b_shared,
            time_mismatch,
            timeout_s=90,
        )

    def time(self, a: Path, b: Path, spec, budget_s: float, b_shared: int) -> dict:
        return self.job(
            "timing.evaluate:time_job",
            str(a),
            str(b),
            spec,
            budget_s=budget_s,
            target_ci_pct=0.3,
            b_shared=b_shared,
            timeout_s=60,
        )

    def sweep_point(self, a: Path, b: Path, spec, budget_s: float) -> dict:
        return self.job("benchmarks.studies.loops:sweep_job", str(a), str(b), spec, budget_s, timeout_s=90)


class Dry(DryDevice, Live):
    """No GPU: made-up ratios from the files' names (not measurements), so every step is walked."""

    def check_and_time(self, a, b, spec, more, budget_s, b_shared, time_mismatch=False) -> dict:
        assert Path(a).is_file() and Path(b).is_file() and spec.name, (a, b)
        return {"status": "ok", "check": "dry", **self.time(a, b, spec, budget_s, b_shared)}

    def time(self, a, b, spec, budget_s, b_shared) -> dict:
        return {"status": "ok", **self.made_up(f"{Path(a).name}/{Path(b).name}")}

    def sweep_point(self, a, b, spec, budget_s) -> dict:
        return {
            "status": "ok",
            "check": "dry",
            "timed": {l2: self.time(a, b, spec, budget_s, spec.shared) for l2 in ("warm", "cold")},
        }


@dataclasses.dataclass
class Run(ScreenedRecord):
    prefix: ClassVar[str] = "loops"
    cells: list = dataclasses.field(default_factory=list)
    suite: list = dataclasses.field(default_factory=list)
    sweep: list = dataclasses.field(default_factory=list)
    points: list = dataclasses.field(default_factory=list)


def _spec(path: Path, shared: int):
    from timing.spec import load_spec

    return dataclasses.replace(load_spec(path), shared=shared)


def distinct_variants(config: dict) -> list[dict]:
    """The variants with a cubin of their own, the original excluded."""
    return [v for v in config["variants"] if v.get("cubin") and v["cubin"] != config["original"]]


def cell(run: Run, config: dict, where: dict) -> None:
    """Screen every variant at this cell, then reorder's best against Triton's best."""
    base = {k: where[k] for k in ("n", "rows", "block", "warps")}
    original = next(v for v in config["variants"] if v.get("cubin") == config["original"])
    screened = {original["name"]: (1.0, original)}
    for v in distinct_variants(config):
        row = {**base, "variant": v["name"], "kind": v["kind"], "shared": v["shared"]}
        try:
            row.update(
                run.device.check_and_time(
                    run.build / config["original"],
                    run.build / v["cubin"],
                    _spec(run.build / where["spec"], original["shared"]),
                    [_spec(run.build / where["second"], original["shared"])],
                    run.screen_s,
                    v["shared"],
                    time_mismatch=v["kind"] == "triton",
                )
            )
        except Exception as exc:  # noqa: BLE001 - one variant's failure is a row
            row.update({"status": "error", "reason": error_line(exc)})
        run.add("screen", row)
        fair = row.get("check") in ("identical", "dry") or v["kind"] == "triton"  # Triton's configs compete as built
        if row.get("status") == "ok" and fair and isinstance(row.get("ratio"), float):
            screened[v["name"]] = (row["ratio"], v)
    run.add("cells", final(run, base, where, screened, original))


def final(run: Run, base: dict, where: dict, screened: dict, original: dict) -> dict:
    """reorder's best / Triton's best, freshly paired."""

    def best(kind: str) -> dict:
        pool = {n: rv for n, rv in screened.items() if rv[1]["kind"] == kind or n == original["name"]}
        return min(pool.values(), key=lambda rv: rv[0])[1]

    triton, reorder = best("triton"), best("reorder")
    row = {
        **base,
        "triton_best": triton["name"],
        "reorder_best": reorder["name"],
        "triton_screen": screened[triton["name"]][0],
        "reorder_screen": screened[reorder["name"]][0],
        "variants_ok": len(screened) - 1,
    }
    if triton["name"] == reorder["name"]:
        return {**row, "status": "ok", "ratio": 1.0, "ci_low": 1.0, "ci_high": 1.0, "note": "the same cubin"}
    try:
        row.update(
            run.device.time(
                run.build / triton["cubin"],
                run.build / reorder["cubin"],
                _spec(run.build / where["spec"], triton["shared"]),
                run.final_s,
                reorder["shared"],
            )
        )
    except Exception as exc:  # noqa: BLE001
        row.update({"status": "error", "reason": error_line(exc)})
    return row


def suite(run: Run, rows: list[dict], reserve: float = 0.0) -> None:
    """The suite's loop kernels: each candidate against the source PTX's cubin, while time is
    left beyond `reserve` (the sweep phase's)."""
    for r in rows:
        row = {"kernel": r["kernel"], "move": r["move"], "noalias": r["noalias"], "speculate": r["speculate"]}
        if not r.get("cubin"):
            run.add("suite", {**row, "status": "not built", "reason": r.get("refused", "")})
            continue
        if run.left() < SUITE_RESERVE_S + reserve:
            run.add("suite", {**row, "status": "skipped", "reason": "deadline"})
            continue
        try:
            spec = load_suite_spec(r["kernel"])
            row.update(
                run.device.check_and_time(
                    run.build / r["original"],
                    run.build / r["cubin"],
                    spec,
                    [few_blocks(spec)],
                    run.screen_s,
                    spec.shared,
                )
            )
        except Exception as exc:  # noqa: BLE001
            row.update({"status": "error", "reason": error_line(exc)})
        run.add("suite", row)


def best_per_kernel(suite_rows: list[dict]) -> dict[str, dict]:
    """Each suite kernel's identical candidate with the lowest screened ratio."""
    best: dict[str, dict] = {}
    for r in suite_rows:
        screened = r.get("check") in ("identical", "dry") and isinstance(r.get("ratio"), float)
        if screened and (r["kernel"] not in best or r["ratio"] < best[r["kernel"]]["ratio"]):
            best[r["kernel"]] = r
    return best


def suite_points(kernel: str) -> list[tuple[int, str, dict]]:
    """(order, name, point) of every point of the suite spec's sweep ({} named 'spec' when it
    has none)."""
    import tomllib

    from reorder.suite.sweep import sweep_points

    raw = tomllib.loads((SUITE / "specs" / f"{kernel}.toml").read_text())
    return [
        (order, "_".join(f"{k}{v}" for k, v in point.items()) or "spec", point)
        for order, point in enumerate(sweep_points(raw) or [{}])
    ]


def sweep(run: Run, built: list[dict]) -> None:
    """Each kernel's best candidate at every point of its suite spec's sweep, warm and cold L2."""
    for kernel, best in best_per_kernel(run.suite).items():
        source = next(
            r
            for r in built
            if r["kernel"] == kernel
            and r["move"] == best["move"]
            and r["noalias"] == best["noalias"]
            and r["speculate"] == best["speculate"]
        )
        for order, name, point in suite_points(kernel):
            row = {"kernel": kernel, "move": best["move"], "point": name, "point_order": order}
            if run.left() < SWEEP_RESERVE_S:
                run.add("sweep", {**row, "status": "skipped", "reason": "deadline"})
                continue
            spec = load_suite_spec(kernel, point or None)
            _time_point(run, row, run.build / source["original"], run.build / source["cubin"], spec)


def _time_point(run: Run, row: dict, original: Path, cubin: Path, spec) -> None:
    """Check and time `cubin` against `original` at one sweep point, warm and cold L2: a sweep
    row per L2 state (one row, not measured, when it could not be timed)."""
    try:
        res = run.device.sweep_point(original, cubin, spec, run.screen_s)
    except Exception as exc:  # noqa: BLE001 - one point's failure is a row
        res = {"status": "error", "reason": error_line(exc)}
    timed = res.pop("timed", None)
    if not timed:
        run.add("sweep", {**row, **res, "measured": False})
        return
    for l2, t in timed.items():
        run.add("sweep", {**row, **res, **t, "l2": l2, "measured": not isinstance(run.device, Dry)})


def per_point(run: Run, built: list[dict]) -> None:
    """One winner per sweep point, not one for all: at each point of a kernel's
    suite sweep every candidate is checked byte for byte there and screened (warm L2); the
    fastest identical one whose CI lies below 1 is then checked and timed again, fresh, with
    warm and cold L2 (the figure reported, so the pick's luck is not); where none is faster the
    original is kept and the point's speed-up is 1 by construction (rows say `measured` False)."""
    for kernel in dict.fromkeys(r["kernel"] for r in built):
        candidates = [r for r in built if r["kernel"] == kernel and r.get("cubin")]
        if not candidates:
            continue
        original = run.build / candidates[0]["original"]
        for order, name, point in suite_points(kernel):
            base = {"kernel": kernel, "point": name, "point_order": order}
            if run.left() < SWEEP_RESERVE_S * (len(candidates) + 1):
                run.add("sweep", {**base, "move": "", "status": "skipped", "reason": "deadline"})
                continue
            spec = load_suite_spec(kernel, point or None)
            screened = []
            for r in candidates:
                row = {**base, "move": r["move"]}
                try:
                    row.update(
                        run.device.check_and_time(original, run.build / r["cubin"], spec, [], run.screen_s, spec.shared)
                    )
                except Exception as exc:  # noqa: BLE001 - one candidate's failure is a row
                    row.update({"status": "error", "reason": error_line(exc)})
                run.add("points", row)
                if row.get("check") in ("identical", "dry") and isinstance(row.get("ci_high"), float):
                    screened.append((row["ratio"], row["ci_high"], r))
            winners = sorted((ratio, r["move"], r) for ratio, high, r in screened if high < 1.0)
            if not winners:
                for l2 in ("warm", "cold"):
                    run.add(
                        "sweep",
                        {
                            **base,
                            "move": "original (no candidate faster)",
                            "l2": l2,
                            "ratio": 1.0,
                            "ci_low": 1.0,
                            "ci_high": 1.0,
                            "check": "identical",
                            "measured": False,
                        },
                    )
                continue
            winner = winners[0][2]
            _time_point(run, {**base, "move": winner["move"]}, original, run.build / winner["cubin"], spec)


def sweep_lines(rows: list[dict]) -> list[str]:
    """Per kernel: the speed-up (original time / candidate time) over its sweep, median and range."""
    lines = [
        "",
        "Suite loop kernels over their sweeps (best candidate per kernel; speed-up = original / candidate):",
        "",
        "| kernel | move | L2 | points identical | points timed | median speed-up | range |",
        "|---|---|---|---|---|---|---|",
    ]
    for kernel in dict.fromkeys(r["kernel"] for r in rows):
        mine = [r for r in rows if r["kernel"] == kernel]
        checked = {r["point"] for r in mine if r.get("check") in ("identical", "dry")}
        points = {r["point"] for r in mine}
        for l2 in ("warm", "cold"):
            ups = [1.0 / r["ratio"] for r in mine if r.get("l2") == l2 and isinstance(r.get("ratio"), float)]
            if ups:
                moves = sorted({r["move"] for r in mine if r.get("l2") == l2})
                label = moves[0] if len(moves) == 1 else "per point: " + ", ".join(moves)
                lines.append(
                    f"| {kernel} | {label} | {l2} | {len(checked)} of {len(points)} | {len(ups)} | "
                    f"{statistics.median(ups):.3f} | {min(ups):.3f} - {max(ups):.3f} |"
                )
    bad = [r for r in rows if r.get("check") == "MISMATCH"]
    lines.append(f"\nsweep byte checks: {len(bad)} MISMATCH" + "".join(f"\n- {r['kernel']} {r['point']}" for r in bad))
    return lines


def summary(run: Run) -> str:
    s = run.stamps
    title = (
        f"# reorder's loop moves vs Triton's pipelining: looped RMSNorm fp32 ({s['gpu']}, {s['date']}, "
        f"commit {s['commit']})"
    )
    lines = [
        title,
        "",
        "ratio = time(reorder's best) / time(Triton's best), paired, warm L2, 95% CI; below 1: reorder faster",
        "",
        "| N | rows | BLOCK | warps | Triton's best | reorder's best | ratio [95% CI] | status |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in run.cells:
        ci = f"{r['ratio']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]" if isinstance(r.get("ratio"), float) else "-"
        lines.append(
            f"| {r.get('n')} | {r.get('rows')} | {r.get('block')} | {r.get('warps')} | "
            f"{r.get('triton_best', '')} | {r.get('reorder_best', '')} | {ci} | {r.get('status')} "
            f"{r.get('reason', '')} |"
        )
    timed = [r for r in run.cells if isinstance(r.get("ratio"), float)]
    if timed:
        not_slower = sum(r["ci_low"] <= 1.0 for r in timed)
        faster = sum(r["ci_high"] < 1.0 for r in timed)
        median = statistics.median(r["ratio"] for r in timed)
        lines += [
            "",
            (
                f"cells measured: {len(timed)} of {len(run.cells)}; reorder faster (CI high < 1): {faster}; "
                f"faster or equal (CI low <= 1): {not_slower}; median ratio {median:.3f}"
            ),
        ]
    checked = run.screen + run.suite + run.points
    mismatches = [r for r in checked if r.get("check") == "MISMATCH"]
    identical = sum(r.get("check") == "identical" for r in checked)
    lines += [
        "",
        f"byte checks: {identical} identical, {len(mismatches)} MISMATCH"
        + "".join(f"\n- {m.get('variant') or m.get('move')}" for m in mismatches),
    ]
    if run.suite:
        lines += ["", "| suite kernel | move | check | ratio [95% CI] | status |", "|---|---|---|---|---|"]
        for r in run.suite:
            ci = (
                f"{r['ratio']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]"
                if isinstance(r.get("ratio"), float)
                else "-"
            )
            lines.append(
                f"| {r['kernel']} | {r['move']} | {r.get('check', '')} | {ci} | {r.get('status')} "
                f"{r.get('reason', '')} |"
            )
    if run.sweep:
        lines += sweep_lines(run.sweep)
    return "\n".join(lines) + "\n"


def _draw(csv_path: Path) -> None:
    """The sweep's heatmaps and medians (bench's drawing), or one line saying why not."""
    try:
        from reorder.cli.bench import draw

        draw(csv_path)
    except Exception as exc:  # noqa: BLE001 - the CSV stays; the picture can be drawn later
        print(f"loops_gpu: heatmaps not drawn ({error_line(exc)}); the rows are in {csv_path}", file=sys.stderr)


def picked(manifest: dict, cells: str, kernels: str) -> dict:
    """The manifest narrowed to the cells (N:rows:BLOCK:warps, or 'none') and suite kernels
    asked for, so a run cut by its deadline can be finished by another; ValueError names
    what the build does not have."""
    out = dict(manifest)
    if cells:
        wanted = set() if cells == "none" else {tuple(int(v) for v in c.split(":")) for c in cells.split(",")}
        have = {(w["n"], w["rows"], w["block"], w["warps"]) for w in manifest["cells"]}
        if wanted - have:
            raise ValueError(f"cells not in the build: {sorted(wanted - have)}")
        out["cells"] = [w for w in manifest["cells"] if (w["n"], w["rows"], w["block"], w["warps"]) in wanted]
    if kernels:
        names = set(kernels.split(","))
        missing = names - {r["kernel"] for r in manifest.get("suite", [])}
        if missing:
            raise ValueError(f"suite kernels not in the build: {sorted(missing)}")
        out["suite"] = [r for r in manifest.get("suite", []) if r["kernel"] in names]
    return out


def interleaved(cells: list[dict]) -> list[dict]:
    """Cells round-robin over (BLOCK, num_warps), so a deadline skips a few cells of each
    config rather than every cell of the last one."""
    order: dict[tuple, int] = {}
    ranked = []
    for where in cells:
        key = (where["block"], where["warps"])
        order[key] = order.get(key, -1) + 1
        ranked.append((order[key], where))
    return [where for _, where in sorted(ranked, key=lambda rw: rw[0])]


def options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--screen", type=float, default=0.3, help="seconds of paired timing per screened variant")
    p.add_argument("--final", type=float, default=1.0, help="seconds of paired timing, best against best")
    p.add_argument(
        "--cells",
        default="",
        help="comma list of N:rows:BLOCK:warps cells to run (default: all); 'none' runs the suite part alone",
    )
    p.add_argument("--kernels", default="", help="comma list of suite kernels (default: every one built)")
    p.add_argument(
        "--per-point",
        action="store_true",
        help=(
            "suite kernels: pick the winner at each sweep point among all candidates "
            "(else one winner, screened at the spec)"
        ),
    )


def record(run) -> Run:
    a = run.args
    return Run(a.build, a.out, run.deadline, a.screen, a.final, run.device, run.stamps)


def _cell_key(where: dict) -> dict:
    return {k: where[k] for k in ("n", "rows", "block", "warps")}


def check_and_time(run, rec: Run) -> None:
    """The cells round-robin while the deadline keeps the suite's share, then the suite kernels
    (one winner over the sweep, or one per sweep point)."""
    manifest = run.manifest
    configs = {(c["block"], c["warps"]): c for c in manifest["configs"]}
    keep = SWEEP_SHARE * run.args.deadline if manifest.get("suite") else 0.0

    def one(where: dict) -> None:
        run.log(f"N {where['n']} rows {where['rows']} BLOCK {where['block']} warps {where['warps']}")
        cell(rec, configs[(where["block"], where["warps"])], where)

    lanes(
        rec,
        "cells",
        interleaved(manifest["cells"]),
        one,
        key=_cell_key,
        reserve_s=CELL_RESERVE_S + keep,
        after=lambda: (rec.out / "summary.md").write_text(summary(rec)),
    )
    if run.args.per_point:
        per_point(rec, manifest.get("suite", []))
    else:
        suite(rec, manifest.get("suite", []), reserve=keep / 2)
        sweep(rec, manifest.get("suite", []))


def plot(rec: Run, out: Path) -> str:
    """The summary, and the sweep's heatmaps and medians when there is a sweep."""
    if rec.sweep:
        _draw(out / "loops_sweep.csv")
    return summary(rec)


STUDY = Study(
    name="loops",
    build=loops_build.main,
    record=record,
    check_and_time=check_and_time,
    plot=plot,
    doc=__doc__ or "",
    build_dir=Path("gpu_build/loops"),
    deadline_s=220.0,
    options=options,
    select=lambda manifest, args: picked(manifest, args.cells, args.kernels),
    stamps=lambda manifest: {"commit": manifest.get("commit"), "triton": manifest.get("triton")},
    live=Live,
    dry=Dry,
)
