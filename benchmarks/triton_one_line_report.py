"""summary.md of a one-line run (benchmarks.triton_one_line): every cell, the totals the target
is judged on, the autotune's cost with and without twins, and, when given, the prebuilt-candidate
harness's speed-up of the same cell beside it. Pure Python over the CSVs (tests feed it rows)."""

from __future__ import annotations

import statistics
from pathlib import Path

from reorder.suite.rows import read_rows

TARGET = 1.10


def _f(row: dict, key: str) -> float:
    try:
        return float(row.get(key) or "nan")
    except ValueError:
        return float("nan")


def timed(cells: list[dict]) -> list[dict]:
    return [c for c in cells if c.get("speedup") not in (None, "")]


def totals(cells: list[dict]) -> list[str]:
    """The lines the target is judged on."""
    done = timed(cells)
    if not done:
        return ["- no cell was timed"]
    lines = []
    for name, group in (("all", done), *((l2, [c for c in done if c["l2"] == l2]) for l2 in ("warm", "cold"))):
        if not group:
            continue
        ups = [_f(c, "speedup") for c in group]
        slower = [c for c in group if _f(c, "speedup_ci_high") < 1.0]
        lines.append(
            f"- {name}: {len(group)} cells, median speed-up {statistics.median(ups):.3f}x "
            f"(min {min(ups):.3f}, max {max(ups):.3f}); slower beyond the CI in {len(slower)}; "
            f"the one-line autotuner picked a twin in {sum(c['reorder_pick_is_twin'] == 'True' for c in group)}"
        )
    median = statistics.median(_f(c, "speedup") for c in done)
    slower = [c for c in done if _f(c, "speedup_ci_high") < 1.0]
    lines.append(
        f"- target (median >= {TARGET:.2f}x, no cell slower beyond its CI): "
        f"{'met' if median >= TARGET and not slower else 'NOT met'} ({median:.3f}x, {len(slower)} slower)"
    )
    lines += [
        f"  - slower: {c['family']} {c['shape']} {c['l2']}: {_f(c, 'speedup'):.3f}x "
        f"[{_f(c, 'speedup_ci_low'):.3f}, {_f(c, 'speedup_ci_high'):.3f}]"
        for c in slower
    ]
    return lines


def cost(cells: list[dict]) -> list[str]:
    """Autotune time with twins against without, over the shapes (one row per shape)."""
    shapes = {(c["family"], c["shape"]): c for c in timed(cells)}.values()
    if not shapes:
        return []
    bench = sum(_f(c, "reorder_bench_s") for c in shapes) / sum(_f(c, "plain_bench_s") for c in shapes)
    wall = sum(_f(c, "reorder_autotune_s") for c in shapes) / sum(_f(c, "plain_autotune_s") for c in shapes)
    builds = sum(_f(c, "builds") for c in shapes) / sum(_f(c, "configs") for c in shapes)
    return [
        f"- do_bench time of the autotune, with twins / without: {bench:.2f}x over {len(shapes)} shapes "
        f"({builds:.1f}x as many builds timed); first-call wall time (compiles served from the caches): {wall:.2f}x"
    ]


def checks_line(checks: list[dict]) -> str:
    by: dict[str, int] = {}
    for c in checks:
        key = c["check"] if not c["check"].startswith("not checked") else "not checked"
        by[key] = by.get(key, 0) + 1
    return "- rt.verify over every twin at every shape: " + (
        ", ".join(f"{n} {k}" for k, n in sorted(by.items())) or "nothing"
    )


def cell_table(cells: list[dict], prebuilt: dict) -> list[str]:
    head = "| family | shape | L2 | plain pick | one-line pick | pick's check | speed-up [95% CI] | math |"
    if prebuilt:
        head += " prebuilt harness |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for c in cells:
        if c.get("speedup") in (None, ""):
            lines.append(f"| {c['family']} | {c['shape']} | {c.get('l2', '')} | | | | {c.get('timing', '')} | |")
            continue
        line = (
            f"| {c['family']} | {c['shape']} | {c['l2']} | {c['plain_pick']} | {c['reorder_pick']} | "
            f"{c['pick_check']} | {_f(c, 'speedup'):.3f} [{_f(c, 'speedup_ci_low'):.3f}, "
            f"{_f(c, 'speedup_ci_high'):.3f}] | {c['math']} |"
        )
        if prebuilt:
            other = prebuilt.get((c["family"], c["shape"], c["l2"]))
            line += f" {other:.3f} |" if other else " |"
        lines.append(line)
    return lines


def write_summary(out: Path, prebuilt_csv: Path | None) -> str:
    cells = read_rows(out / "one_line_cells.csv")
    checks = read_rows(out / "one_line_checks.csv")
    prebuilt = {
        (r["family"], r["shape"], r["l2"]): _f(r, "speedup") for r in (read_rows(prebuilt_csv) if prebuilt_csv else [])
    }
    stamp = cells[0] if cells else {}
    lines = [
        f"# The one line against the plain autotuner ({stamp.get('gpu', '?')}, commit {stamp.get('commit', '?')})",
        "",
        "Speed-up = time of the plain autotuner's pick / time of the one-line autotuner's pick, paired "
        "(timing.paired: same rounds, random order, 95% bootstrap CI).",
        "",
        "## Totals",
        "",
        *totals(cells),
        *cost(cells),
        checks_line(checks),
        "",
        "## Cells",
        "",
        *cell_table(cells, prebuilt),
    ]
    tune = read_rows(out / "one_line_tune.csv")
    if tune:
        lines += ["", "## rt.tune", "", "| family | shape | config | reorder / plain [95% CI] | moves | check | PTX |"]
        lines.append("|---|---|---|---|---|---|---|")
        lines += [
            f"| {t['family']} | {t['shape']} | {t.get('config', '')} | {t.get('score', t.get('error', ''))} | "
            f"{t.get('moves', '')} | {t.get('check', '')} | {t.get('ptx', '')} |"
            for t in tune
        ]
    text = "\n".join(lines) + "\n"
    (out / "summary.md").write_text(text)
    return text
