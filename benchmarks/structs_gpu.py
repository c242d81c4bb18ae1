"""GPU half of the struct-kernel benchmark: each candidate checked and timed beside its flat twin.

    python -m benchmarks.structs_gpu --build gpu_build/structs --out benchmarks/results/structs \
        [--deadline 170] [--budget 5.0] [--sets 2]     (no job starts after --deadline seconds)

The candidates come from benchmarks/structs_build.py (CPU). For every pair (FAISS k-select at
k = 32 and k = 100, cuPHY CFO/TA) and every candidate kind (stalls, batch, search), the flat
and the struct kernel's candidate are each checked against their own original (byte for byte,
`--sets` input sets drawn fresh, past the ones any search used, at the spec's launch and at a
launch of a few blocks, shared memory poisoned before every launch) and, when identical,
timed against it (paired CUDA-graph timing, warm L2, ratio = candidate / original with a 95%
bootstrap CI). The last-block kernel with its `zeros` ticket is checked against a copy of
itself and timed A/A first: its counter is cleared before every launch, in neither side's
time. Rows go to OUT/structs_gpu.csv as they come; OUT/structs_gpu.md pairs the ratios.
Every job runs in an isolated worker: a fault costs its row, not the run. Rows left when the
deadline comes are written as 'skipped (deadline)'.

`--dry-run` does everything but the GPU jobs (specs resolved and checked against the cubins,
jobs built, tables written with status 'dry run'); the CPU tier walks it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FRESH_SETS_FROM = 1000  # input sets no search or earlier check drew
JOB_TIMEOUT_S = 150.0
EVALUATE = "benchmarks.structs_gpu:evaluate"  # by path: run as __main__, the function's module has no name


def _meta(dry_run: bool, commit: str) -> dict:
    if dry_run:
        return {"gpu": "none (dry run)", "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "commit": commit}
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(0)
    return {"gpu": props["name"].decode(), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "commit": commit}


def evaluate(original: str, candidate: str, spec, sets: int, budget_s: float) -> dict:
    """Worker job: check B against A on fresh sets at two launches; time it when identical."""
    from benchmarks.moves_gpu import few_blocks
    from timing.evaluate import check_job, time_job

    row = check_job(original, candidate, spec, sets=sets, more=(few_blocks(spec),), first_set=FRESH_SETS_FROM)
    if row["check"] != "identical":
        return row
    return {**row, **time_job(original, candidate, spec, budget_s=budget_s)}


def jobs(build: Path, sets: int, budget_s: float) -> list[tuple[dict, object]]:
    """(row fields, Job) in run order: the zeros kernel, then per pair and move flat beside struct;
    Job None for a candidate whose bytes an earlier one of the same kernel already has."""
    from timing.cli_support import validated_spec
    from timing.worker import Job

    manifest = json.loads((build / "manifest.json").read_text())
    out: list[tuple[dict, object]] = []
    zeros = manifest["zeros"]
    original = ROOT / zeros["original"]
    copy = build / "last_block_copy.cubin"  # another file with the same bytes: checked, not skipped
    if not copy.exists() or copy.read_bytes() != original.read_bytes():
        shutil.copyfile(original, copy)
    spec = validated_spec(build / zeros["spec"], [original])
    out.append(
        (
            {"pair": "last_block_sum", "form": "zeros", "move": "A/A", "kernel": spec.name},
            Job.of(EVALUATE, str(original), str(copy), spec, sets, budget_s, timeout_s=JOB_TIMEOUT_S),
        )
    )
    rows = sorted(
        (r for r in manifest["candidates"] if r["built"]),
        key=lambda r: (r["pair"], ("stalls", "batch", "search").index(r["move"]), r["form"]),
    )
    seen: dict[tuple[str, str, bytes], str] = {}  # a search that found the stall cut again is not run twice
    for r in rows:
        original = ROOT / r["original"]
        spec = validated_spec(build / r["spec"], [original, build / r["candidate"]])
        fields = {k: r.get(k) for k in ("pair", "form", "move", "kernel", "applied", "moved", "registers")}
        key = (r["pair"], r["form"], hashlib.sha256((build / r["candidate"]).read_bytes()).digest())
        if key in seen:
            out.append(({**fields, "same_as": seen[key]}, None))
            continue
        seen[key] = r["move"]
        out.append(
            (
                fields,
                Job.of(
                    EVALUATE, str(original), str(build / r["candidate"]), spec, sets, budget_s, timeout_s=JOB_TIMEOUT_S
                ),
            )
        )
    return out


def table(rows: list[dict]) -> str:
    """Markdown: per pair and move, the flat and the struct candidate's ratio with its CI."""

    def cell(r: dict | None) -> str:
        if r is None:
            return "not built"
        if "ratio" in r:
            return f"{r['ratio']:.4f} [{r['ci_low']:.4f}, {r['ci_high']:.4f}] ({r['a_us']:.1f} us)"
        return str(r.get("check") or r.get("status"))

    lines = [
        "| pair | move | flat: ratio [95% CI] (original us) | struct: ratio [95% CI] (original us) |",
        "|---|---|---|---|",
    ]
    order = ("A/A", "stalls", "batch", "search")
    keys = sorted(
        {(r["pair"], r["move"]) for r in rows}, key=lambda k: (k[0] != "last_block_sum", k[0], order.index(k[1]))
    )
    for pair, move in keys:
        by_form = {r["form"]: r for r in rows if (r["pair"], r["move"]) == (pair, move)}
        if "zeros" in by_form:
            lines.append(f"| {pair} | {move} | | zeros ticket: {cell(by_form['zeros'])} |")
        else:
            lines.append(f"| {pair} | {move} | {cell(by_form.get('flat'))} | {cell(by_form.get('struct'))} |")
    return "\n".join(lines) + "\n"


def run(build: Path, out: Path, deadline_s: float, budget_s: float, sets: int, dry_run: bool) -> list[dict]:
    from reorder.suite.rows import write_rows
    from timing.evaluate import describe_status
    from timing.worker import WorkerPool

    started = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    commit = json.loads((build / "manifest.json").read_text())["commit"]
    meta = _meta(dry_run, commit)
    planned = jobs(build, sets, budget_s)
    rows: list[dict] = []
    pool = None if dry_run else WorkerPool(devices=[0])
    try:
        for fields, job in planned:
            if job is None:
                result = {"status": f"same binary as {fields['same_as']}"}
            elif dry_run:
                result = {"status": "dry run"}
            elif time.monotonic() - started > deadline_s:
                result = {"status": "skipped (deadline)"}
            else:
                result = describe_status(pool.run(job))
            rows.append({**meta, **fields, **result})
            print(json.dumps({k: v for k, v in rows[-1].items() if k not in meta}, default=str), flush=True)
            write_rows(out / "structs_gpu.csv", rows)
    finally:
        if pool is not None:
            pool.close()
    header = f"# Struct kernels beside flat ones ({meta['gpu']}, {meta['date']}, build {commit})\n\n"
    (out / "structs_gpu.md").write_text(header + table(rows))
    print(f"{len(rows)} rows in {time.monotonic() - started:.0f} s -> {out}", flush=True)
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, default=ROOT / "gpu_build" / "structs")
    parser.add_argument("--out", type=Path, default=Path("out"))
    parser.add_argument("--deadline", type=float, default=170.0, help="seconds after which rows are skipped")
    parser.add_argument("--budget", type=float, default=5.0, help="seconds of paired timing per candidate")
    parser.add_argument("--sets", type=int, default=2, help="fresh input sets per launch in each check")
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    run(args.build, args.out, args.deadline, args.budget, args.sets, args.dry_run)
