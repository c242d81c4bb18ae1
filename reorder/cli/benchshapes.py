"""`reorder bench --shapes`: three ways to serve a kernel's sweep, in one table.

A kernel's sweep points are the launches it serves. For each kernel with two or more points
and each L2 state this runs (1) one search per point, each binary timed at its own point (what
`reorder bench` does: the best a shape can get from a search of its own, and the most
searches); (2) one search over every point (`optimize --launch P1 --launch P2 ...`), its one
binary applied to all points; and (3) that search's per-shape groups (`--per-shape`), each
point served by its group's binary. (2) and (3) come from the multi-shape run's shapes.json:
every finalist was timed again at every point, so each point's figure is a paired ratio with
its CI. The table (bench_shapes.csv, bench_shapes.md) has one row per point and one per
kernel for the geometric mean of each column.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

Cell = tuple[float, float, float] | None  # ratio, CI low, CI high
Kernel = Any  # reorder.cli.bench.BenchKernel (bench imports this module: its helpers come as arguments)
Label = Callable[[dict], str]  # a point's label (bench._label)
PointSpec = Callable[[Kernel, dict, Path], Path]  # the launch spec written for a point (bench._point_spec)


def optimize_args(kernel: Kernel, output: Path, launch: Path, l2: str, device: str, jobs: int, **more):
    """The optimize call of one suite kernel (its budgets, noalias, seed 0): every bench mode
    searches with the same settings, so their figures compare."""
    from reorder.optimize import OptimizeArgs

    return OptimizeArgs(
        cubin=kernel.cubin,
        output=output,
        kernel=kernel.kernel_name,
        launch=launch,
        budget=kernel.budget,
        seconds=kernel.seconds,
        jobs=jobs,
        storage=None,
        l2=l2,
        device=device,
        noalias=kernel.noalias,
        seed=0,
        candidate_budget_s=kernel.candidate_budget_s,
        final_budget_s=kernel.final_budget_s,
        contributions=kernel.contributions,
        **more,
    )


def _cell(score) -> Cell:
    return None if score is None else (score.value, score.low, score.high)


def per_point(
    kernel: Kernel, l2: str, out: Path, device: str, jobs: int, label: Label, spec: PointSpec
) -> dict[str, Cell]:
    """One search per point: label -> its own winner's ratio there."""
    from reorder.optimize import optimize

    cells: dict[str, Cell] = {}
    for point in kernel.points:
        folder = out / kernel.name / "per_point" / f"{label(point)}_{l2}"
        folder.mkdir(parents=True, exist_ok=True)
        report = optimize(optimize_args(kernel, folder / "fast.cubin", spec(kernel, point, folder), l2, device, jobs))
        cells[label(point)] = _cell(report.result if report is not None else None)
    return cells


def multi_shape(
    kernel: Kernel, l2: str, out: Path, device: str, jobs: int, label: Label, spec: PointSpec
) -> dict | None:
    """One search over every point with --per-shape: its shapes.json, or None without one (no
    GPU: the static model times nothing at any shape)."""
    from reorder.optimize import optimize

    folder = out / kernel.name / f"shapes_{l2}"
    specs = []
    for point in kernel.points:
        (folder / label(point)).mkdir(parents=True, exist_ok=True)
        written = spec(kernel, point, folder / label(point))
        specs.append(written.rename(folder / f"{label(point)}.toml"))  # the file's stem is the shape's label
    optimize(
        optimize_args(
            kernel, folder / "fast.cubin", specs[0], l2, device, jobs, more_launches=tuple(specs[1:]), per_shape=True
        )
    )
    found = folder / "fast.reorder" / "shapes.json"
    return json.loads(found.read_text()) if found.is_file() else None


def columns(labels: Sequence[str], doc: dict | None) -> tuple[dict[str, Cell], dict[str, Cell], dict[str, str]]:
    """From a multi-shape run's shapes.json: label -> (the one binary's ratio, the per-shape
    group's ratio, the group's cubin)."""
    if doc is None:
        return dict.fromkeys(labels), dict.fromkeys(labels), {}
    written = doc["finals"].get(doc["winner"], {}).get("ratios", {})
    one = {s: tuple(written[s]) if s in written else None for s in labels}
    grouped: dict[str, Cell] = dict.fromkeys(labels)
    cubins: dict[str, str] = {}
    for group in (doc.get("dispatch") or {}).get("groups", []):
        for shape in group["shapes"]:
            grouped[shape["launch"]] = tuple(shape["ratio"])
            cubins[shape["launch"]] = group["cubin"]
    return one, grouped, cubins


def geomean(cells: Sequence[Cell]) -> Cell:
    """The geometric mean of a column with its CI (the cells independent, log-normal), or None
    when a cell is missing."""
    if not cells or any(c is None for c in cells):
        return None
    n = len(cells)
    logs = [(math.log(c[0]), math.log(c[0] / c[1]), math.log(c[2] / c[0])) for c in cells if c is not None]
    centre = sum(x for x, _, _ in logs) / n
    down = math.sqrt(sum((d / n) ** 2 for _, d, _ in logs))
    up = math.sqrt(sum((u / n) ** 2 for _, _, u in logs))
    return math.exp(centre), math.exp(centre - down), math.exp(centre + up)


def _fmt(cell: Cell) -> str:
    return "not measured" if cell is None else f"{cell[0]:.4f} [{cell[1]:.4f}, {cell[2]:.4f}]"


def _pick(column: dict[str, Cell], label: str, labels: Sequence[str]) -> Cell:
    """A column's cell at a point, or its geometric mean over the points for 'geomean'."""
    return geomean([column[s] for s in labels]) if label == "geomean" else column[label]


def rows_for(kernel: str, l2: str, labels: Sequence[str], own, one, grouped, cubins) -> list[dict]:
    """One row per point and a geometric-mean row, each column a ratio with its CI."""
    rows = []
    for label in (*labels, "geomean"):
        cells = {
            name: _pick(col, label, labels)
            for name, col in (("per_point", own), ("one_binary", one), ("per_shape", grouped))
        }
        row = {"kernel": kernel, "point": label, "l2": l2, "per_shape_cubin": cubins.get(label, "")}
        for name, cell in cells.items():
            row |= {name: cell and cell[0], f"{name}_low": cell and cell[1], f"{name}_high": cell and cell[2]}
        rows.append(row)
    return rows


def markdown(rows: Sequence[dict]) -> str:
    """The table a reader compares the three columns in."""
    lines = [
        "| kernel | point | L2 | one search per point | one binary for all points | per-shape groups | group's cubin |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        cells = [
            _fmt(None if r[c] is None else (r[c], r[f"{c}_low"], r[f"{c}_high"]))
            for c in ("per_point", "one_binary", "per_shape")
        ]
        lines.append(f"| {r['kernel']} | {r['point']} | {r['l2']} | {' | '.join(cells)} | {r['per_shape_cubin']} |")
    return "\n".join(lines) + "\n"


def run_bench_shapes(
    kernels: list[Kernel], l2_states: tuple[str, ...], out: Path, device: str, jobs: int, label: Label, spec: PointSpec
) -> Path:
    """Every kernel with two or more points, each L2 state: the three columns; the CSV and the
    markdown table are rewritten after each kernel, so a cut run keeps what it did."""
    import pandas as pd

    rows: list[dict] = []
    for kernel in (k for k in kernels if len(k.points) >= 2):
        labels = [label(p) for p in kernel.points]
        for l2 in l2_states:
            started = time.monotonic()
            own = per_point(kernel, l2, out, device, jobs, label, spec)
            one, grouped, cubins = columns(labels, multi_shape(kernel, l2, out, device, jobs, label, spec))
            new = rows_for(kernel.name, l2, labels, own, one, grouped, cubins)
            rows += [{**r, "seconds": round(time.monotonic() - started, 1)} for r in new]
            pd.DataFrame(rows).to_csv(out / "bench_shapes.csv", index=False)
            (out / "bench_shapes.md").write_text(markdown(rows))
    return out / "bench_shapes.csv"


__all__ = ["columns", "geomean", "markdown", "rows_for", "run_bench_shapes"]
