"""Struct kernels beside flat ones: each candidate checked and timed beside its flat twin.

    python -m benchmarks.studies structs --prepare [--out gpu_build/structs] [--budget 12]   (the CPU side)
    python -m benchmarks.studies structs --build gpu_build/structs --out OUT [--deadline 170]
        [--budget 5.0] [--sets 2] [--dry-run]       (or python -m benchmarks.structs_gpu ...)

The candidates come from benchmarks/studies/structs_build.py (CPU). For every pair (FAISS k-select at
k = 32 and k = 100, cuPHY CFO/TA) and every candidate kind (stalls, batch, search), the flat
and the struct kernel's candidate are each checked against their own original (byte for byte,
`--sets` input sets drawn fresh, past the ones any search used, at the spec's launch and at a
launch of a few blocks, shared memory poisoned before every launch) and, when identical,
timed against it (paired CUDA-graph timing, warm L2, ratio = candidate / original with a 95%
bootstrap CI). The last-block kernel with its `zeros` ticket is checked against a copy of
itself and timed A/A first: its counter is cleared before every launch, in neither side's
time. Rows go to OUT/structs_gpu.csv as they come; OUT/summary.md pairs the ratios. Every job
runs in an isolated worker: a fault costs its row, not the run. Rows not begun by the deadline
are 'skipped: deadline'. `--dry-run` walks every step with made-up numbers (specs resolved and
checked against the cubins); the CPU tier walks it.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import shutil
from pathlib import Path
from typing import ClassVar

from benchmarks.studies import structs_build
from benchmarks.studies.runner import BuildRecord, DryDevice, LiveDevice, Study, lanes, record_of

ROOT = structs_build.ROOT
FRESH_SETS_FROM = 1000  # input sets no search or earlier check drew
JOB_TIMEOUT_S = 150.0
JOB_RESERVE_S = 5.0  # a job's check and setup beyond its timing budget
EVALUATE = "benchmarks.studies.structs:evaluate"  # by path: a worker job must name an importable function


def evaluate(original: str, candidate: str, spec, sets: int, budget_s: float) -> dict:
    """Worker job: check B against A on fresh sets at two launches; time it when identical."""
    from benchmarks.studies.runner import few_blocks
    from timing.evaluate import check_job, time_job

    row = check_job(original, candidate, spec, sets=sets, more=(few_blocks(spec),), first_set=FRESH_SETS_FROM)
    if row["check"] != "identical":
        return row
    return {**row, **time_job(original, candidate, spec, budget_s=budget_s)}


class Live(LiveDevice):
    """Jobs in one isolated worker process on the GPU (a fault costs one job)."""

    def evaluate(self, a: Path, b: Path, spec, sets: int, budget_s: float) -> dict:
        return self.job(EVALUATE, str(a), str(b), spec, sets, budget_s, timeout_s=JOB_TIMEOUT_S)


class Dry(DryDevice, Live):
    """No GPU: made-up ratios from the files' names (not measurements), so every step is walked."""

    def evaluate(self, a, b, spec, sets, budget_s) -> dict:
        assert Path(a).is_file() and Path(b).is_file() and spec.name, (a, b)
        return {"status": "ok", "check": "identical", "check_detail": "dry run", **self.made_up(Path(b).name)}


def plan(build: Path, manifest: dict) -> list[tuple[dict, tuple | None]]:
    """(row fields, (original, candidate, spec)) in run order: the zeros kernel, then per pair
    and move flat beside struct; None for a candidate whose bytes an earlier one of the same
    kernel already has."""
    from timing.cli_support import validated_spec

    zeros = manifest["zeros"]
    original = ROOT / zeros["original"]
    copy = build / "last_block_copy.cubin"  # another file with the same bytes: checked, not skipped
    if not copy.exists() or copy.read_bytes() != original.read_bytes():
        shutil.copyfile(original, copy)
    spec = validated_spec(build / zeros["spec"], [original])
    out: list[tuple[dict, tuple | None]] = [
        ({"pair": "last_block_sum", "form": "zeros", "move": "A/A", "kernel": spec.name}, (original, copy, spec))
    ]
    rows = sorted(
        (r for r in manifest["candidates"] if r["built"]),
        key=lambda r: (r["pair"], ("stalls", "batch", "search").index(r["move"]), r["form"]),
    )
    seen: dict[tuple[str, str, bytes], str] = {}  # a search that found the stall cut again is not run twice
    for r in rows:
        original, candidate = ROOT / r["original"], build / r["candidate"]
        spec = validated_spec(build / r["spec"], [original, candidate])
        fields = {k: r.get(k) for k in ("pair", "form", "move", "kernel", "applied", "moved", "registers")}
        key = (r["pair"], r["form"], hashlib.sha256(candidate.read_bytes()).digest())
        if key in seen:
            out.append(({**fields, "same_as": seen[key]}, None))
            continue
        seen[key] = r["move"]
        out.append((fields, (original, candidate, spec)))
    return out


@dataclasses.dataclass
class Rows(BuildRecord):
    prefix: ClassVar[str] = "structs"
    gpu: list = dataclasses.field(default_factory=list)


def check_and_time(run, rec: Rows) -> None:
    a = run.args

    def one(item: tuple[dict, tuple | None]) -> None:
        fields, job = item
        if job is None:
            rec.add("gpu", {**fields, "status": f"same binary as {fields['same_as']}"})
            return
        rec.add("gpu", {**fields, "l2": "warm", **rec.device.evaluate(*job, a.sets, a.budget)})
        run.log(f"{fields['pair']} {fields['form']} {fields['move']}: {rec.gpu[-1].get('status')}")

    lanes(
        rec,
        "gpu",
        plan(rec.build, run.manifest),
        one,
        key=lambda item: item[0],
        reserve_s=lambda item: a.budget + JOB_RESERVE_S if item[1] else 0.0,
    )


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


def summary(rec: Rows, out: Path) -> str:
    s = rec.stamps
    return f"# Struct kernels beside flat ones ({s['gpu']}, {s['date']}, build {s['commit']})\n\n" + table(rec.gpu)


def options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--budget", type=float, default=5.0, help="seconds of paired timing per candidate")
    p.add_argument("--sets", type=int, default=2, help="fresh input sets per launch in each check")


STUDY = Study(
    name="structs",
    build=structs_build.main,
    record=record_of(Rows),
    check_and_time=check_and_time,
    plot=summary,
    doc=__doc__ or "",
    build_dir=ROOT / "gpu_build" / "structs",
    deadline_s=170.0,
    options=options,
    live=Live,
    dry=Dry,
)
