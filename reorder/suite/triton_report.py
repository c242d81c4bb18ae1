"""The Triton benchmark's report: summary.md and the warm/cold heatmaps, from the CSVs.

    python -m reorder.suite.triton_report OUT       # (re)draw from OUT/triton_cells.csv

reorder.suite.triton_gpu calls `write_report` after every family, so a run cut short still
leaves a report of what it measured. Heatmaps need matplotlib; without it the summary is
written and the line says which command draws them later (on any machine).

Speed-up in a cell = Triton's best config's time / the time of what the autotuner picks
when reorder's binaries are among its configs (1.000 when a Triton original stays best).
A cell Triton wins (the paired 95% CI of that ratio lies wholly above 1) is drawn with a
cross and listed: never hidden.
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

TARGET_SHARE, TARGET_MEDIAN = 0.90, 1.10  # the target: faster or equal in >= 90% of cells, median >= 1.10x


def _rows(out: Path, name: str) -> list[dict]:
    from reorder.suite.rows import read_rows

    return read_rows(out / name)


def _f(row: dict, key: str) -> float:
    try:
        return float(row.get(key, "nan"))
    except ValueError:
        return math.nan


def totals(cells: list[dict]) -> list[str]:
    """The medians, the share of cells not slower, the cells Triton wins, what was cut."""
    done = [r for r in cells if r.get("status") == "ok"]
    lines = []
    for l2 in ("warm", "cold", None):
        part = [r for r in done if l2 is None or r.get("l2") == l2]
        if not part:
            continue
        speed = [_f(r, "speedup") for r in part]
        not_slower = sum(_f(r, "ratio_ci_low") <= 1.0 for r in part)
        from_candidate = sum(r.get("reorder_best_is_candidate") == "True" for r in part)
        lines.append(
            f"- {l2 or 'all'}: {len(part)} cells; median speed-up {statistics.median(speed):.3f}x "
            f"(min {min(speed):.3f}, max {max(speed):.3f}); faster or equal (CI low <= 1) in {not_slower} "
            f"({100 * not_slower / len(part):.0f}%); reorder's binary chosen in {from_candidate}"
        )
    if done:
        median = statistics.median(_f(r, "speedup") for r in done)
        share = sum(_f(r, "ratio_ci_low") <= 1.0 for r in done) / len(done)
        met = share >= TARGET_SHARE and median >= TARGET_MEDIAN
        lines.append(
            f"- target (>= {TARGET_SHARE:.0%} of cells faster or equal, median >= {TARGET_MEDIAN:.2f}x): "
            f"{'met' if met else 'NOT met'} ({share:.0%}, {median:.3f}x)"
        )
    wins = [r for r in done if r.get("triton_wins") == "True"]
    lines.append(
        f"- cells Triton wins (CI wholly above 1): {len(wins)}"
        + "".join(
            f"\n  - {r['family']} {r['shape']} {r['l2']}: {_f(r, 'speedup'):.3f}x "
            f"[{1 / _f(r, 'ratio_ci_high'):.3f}, {1 / _f(r, 'ratio_ci_low'):.3f}]"
            for r in wins
        )
    )
    cut = [r for r in cells if r.get("status") != "ok"]
    lines.append(
        f"- cells not measured: {len(cut)}"
        + "".join(
            f"\n  - {r.get('family')} {r.get('shape', '')} {r.get('l2', '')}: {r.get('status')} {r.get('reason', '')}"
            for r in cut
        )
    )
    return lines


def from_configs(out: Path) -> list[str]:
    """Per family and config, over its cells: the median speed-up of its best candidate over
    its original, and in how many cells that candidate was faster / slower (95% CI)."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in _rows(out, "triton_configs.csv"):
        if r.get("best_candidate"):
            groups.setdefault((r["family"], r["config"]), []).append(r)
    lines = [
        "| family | config | cells | median speed-up | faster | slower | candidates it chose |",
        "|---|---|---|---|---|---|---|",
    ]
    for (family, config), rows in groups.items():
        speed = statistics.median(_f(r, "speedup") for r in rows)
        faster = sum(_f(r, "ratio_ci_high") < 1.0 for r in rows)
        slower = sum(_f(r, "ratio_ci_low") > 1.0 for r in rows)
        chosen = ", ".join(sorted({r["best_candidate"] for r in rows}))
        lines.append(f"| {family} | {config} | {len(rows)} | {speed:.3f}x | {faster} | {slower} | {chosen} |")
    return lines


HEADER = (
    "| family | shape | L2 | Triton best (config) | us [95% CI] | reorder's pick | us [95% CI] | speed-up [95% CI] "
    "| best reorder binary vs Triton best | roofline Triton / reorder |"
)


def _line(r: dict) -> str:
    if r.get("status") != "ok":
        return (
            f"| {r.get('family')} | {r.get('shape', '')} | {r.get('l2', '')} | {r.get('status')}: "
            f"{r.get('reason', '')} | | | | | | |"
        )
    sp = f"{_f(r, 'speedup'):.3f} [{1 / _f(r, 'ratio_ci_high'):.3f}, {1 / _f(r, 'ratio_ci_low'):.3f}]"
    cand = (
        f"{r.get('best_candidate')}: {1 / _f(r, 'best_candidate_vs_triton'):.3f}x"
        if r.get("best_candidate")
        else "none timed"
    )
    return (
        f"| {r['family']} | {r['shape']} | {r['l2']} | {r['triton_best_config']} | "
        f"{_f(r, 'triton_best_us'):.2f} [{_f(r, 'triton_ci_low'):.2f}, {_f(r, 'triton_ci_high'):.2f}] | "
        f"{r['reorder_best']} | {_f(r, 'reorder_best_us'):.2f} [{_f(r, 'reorder_ci_low'):.2f}, "
        f"{_f(r, 'reorder_ci_high'):.2f}] | {sp}{' **Triton wins**' if r.get('triton_wins') == 'True' else ''} | "
        f"{cand} | {_f(r, 'roofline_triton'):.2f} / {_f(r, 'roofline_reorder'):.2f} |"
    )


def summary(out: Path, roof: dict | None = None) -> str:
    cells = _rows(out, "triton_cells.csv")
    steps = _rows(out, "triton_steps.csv")
    jit = [r for r in steps if r.get("step") == "jit"]
    first = cells[0] if cells else {}
    roof = roof or {k: _f(first, f"roof_{k}") for k in ("bytes_per_s", "flops") if f"roof_{k}" in first}
    lines = [
        (
            f"# reorder vs Triton's own tuning ({first.get('gpu', '?')}, {first.get('date', '?')}, "
            f"commit {first.get('commit', '?')}, built by Triton {first.get('built_by_triton', '?')})"
        ),
        "",
    ]
    if roof:
        lines += [
            (
                f"Roofs measured here: copy {roof.get('bytes_per_s', math.nan) / 1e9:.0f} GB/s (read + write), "
                f"cuBLAS fp16 {roof.get('flops', math.nan) / 1e12:.0f} TFLOP/s."
            ),
            "",
        ]
    lines += [
        (
            "Winners picked on the even timing rounds, every figure from the odd ones; speed-up = Triton's "
            "best time / the time of the autotuner's pick with reorder's byte-identical binaries among its "
            "configs."
        ),
        "",
        "## Totals",
        "",
        *totals(cells),
        "",
        "## Cells",
        "",
        HEADER,
        "|---" * (HEADER.count("|") - 1) + "|",
        *(_line(r) for r in cells),
    ]
    lines += ["", "## reorder from each config (its best candidate against its own original)", "", *from_configs(out)]
    for r in (r for r in steps if r.get("step") == "readme"):
        lines += ["", "## The README example (reorder.suite.triton_readme)", ""]
        lines += [
            f"autotune over num_warps 2/4/8/16 at {r.get('shape')}: without reorder {r.get('plain_best')} "
            f"{_f(r, 'plain_us'):.2f} us, with `rt.with_reorder` {r.get('reorder_best')} "
            f"{_f(r, 'reorder_us'):.2f} us: {_f(r, 'speedup'):.3f}x ({r.get('timer')}); verify: "
            f"{r.get('verify')}"
            if r.get("status") == "ok"
            else f"{r.get('status')}: {r.get('reason')}"
        ]
    if jit:
        lines += [
            "",
            "## Triton's JIT against reorder's launch from metadata",
            "",
            "| family | shape | config | same cubin / same machine code | outputs | math | status |",
            "|---|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {r['family']} | {r['shape']} | {r['config']} | "
            f"{r.get('jit_same_cubin', '')} / {r.get('jit_same_code', '')} | "
            f"{r.get('launch_outputs', '')} | {r.get('math_ok', '')} ({r.get('math_max_err', '')}) | "
            f"{r['status']} {r.get('reason', '')} |"
            for r in jit
        ]
    return "\n".join(lines) + "\n"


def _grid(rows: list[dict]) -> tuple[list[str], list[str], dict]:
    """(row labels, column labels, (row, col) -> row) of one family's cells: M x N by K for a
    family of many three-dimensional shapes (the FFN's 24), else one column."""
    cells = {}
    square = len(rows) > 3 and all(len(r["shape"].split("x")) == 3 for r in rows)
    for r in rows:
        dims = r["shape"].split("x")
        key = ("x".join(dims[:2]), f"K={dims[2]}") if square else (r["shape"], "")
        cells[key] = r
    ys = list(dict.fromkeys(k[0] for k in cells))
    xs = list(dict.fromkeys(k[1] for k in cells))
    return ys, xs, cells


def draw(out: Path) -> list[Path]:
    """One heatmap per L2 state: a panel per family, each cell its speed-up."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import TwoSlopeNorm

    done = [r for r in _rows(out, "triton_cells.csv") if r.get("status") == "ok"]
    written = []
    for l2 in ("warm", "cold"):
        part = [r for r in done if r.get("l2") == l2]
        families = list(dict.fromkeys(r["family"] for r in part))
        if not families:
            continue
        fig, axes = plt.subplots(
            1, len(families), figsize=(2.3 * len(families) + 1.5, 4.2), squeeze=False, gridspec_kw={"wspace": 0.9}
        )
        image = None
        for ax, name in zip(axes[0], families):
            ys, xs, cells = _grid([r for r in part if r["family"] == name])
            values = np.full((len(ys), len(xs)), np.nan)
            for (y, x), r in cells.items():
                values[ys.index(y), xs.index(x)] = _f(r, "speedup")
                text = f"{_f(r, 'speedup'):.2f}" + ("\nx" if r.get("triton_wins") == "True" else "")
                ax.text(xs.index(x), ys.index(y), text, ha="center", va="center", fontsize=5)
            image = ax.imshow(values, cmap="RdYlGn", norm=TwoSlopeNorm(1.0, 0.8, 1.25), aspect="auto")
            ax.set_title(name, fontsize=7)
            ax.set_xticks(range(len(xs)), xs, fontsize=5, rotation=90)
            ax.set_yticks(range(len(ys)), ys, fontsize=5)
        median = statistics.median(_f(r, "speedup") for r in part)
        assert image is not None, "every figure has a panel"  # for the type: drawn in the loop above
        fig.colorbar(image, ax=axes[0].tolist(), shrink=0.8, label="Triton best time / autotune pick with reorder")
        fig.suptitle(
            f"reorder vs Triton's best config, L2 {l2}: median {median:.3f}x over {len(part)} cells "
            f"(x: Triton wins, 95% CI)",
            fontsize=8,
        )
        path = out / f"triton_heatmap_{l2}.png"
        fig.savefig(path, dpi=140, bbox_inches="tight")
        plt.close(fig)
        written.append(path)
    return written


def write_report(out: Path, roof: dict | None = None, heatmaps: bool = True) -> list[Path]:
    """summary.md, and the heatmaps when asked and matplotlib is importable."""
    (out / "summary.md").write_text(summary(out, roof))
    if not heatmaps:
        return [out / "summary.md"]
    try:
        return [out / "summary.md", *draw(out)]
    except ImportError:
        print(
            f"triton_report: no matplotlib here; draw the heatmaps later with "
            f"`python -m reorder.suite.triton_report {out}`",
            file=sys.stderr,
        )
        return [out / "summary.md"]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or not (Path(argv[0]) / "triton_cells.csv").is_file():
        print("usage: python -m reorder.suite.triton_report OUT (a folder holding triton_cells.csv)", file=sys.stderr)
        return 2
    for path in write_report(Path(argv[0])):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
