"""RMSNorm load batching (with a bisection of its steps), StallCut over the suite, A/A timing of
both timing methods, and fault isolation, in one GPU run.

    python -m benchmarks.studies batch_aa --prepare [--out gpu_build/batch_aa] [--bisect-only]   (CPU, nvdisasm)
    python -m benchmarks.studies batch_aa --build gpu_build/batch_aa --out OUT [--only a,b] [--dry-run]
        (or python -m benchmarks.gpu_session ...)

The CPU side writes every original and candidate cubin with a manifest: the batch-loads result
of rmsnorm_triton_style and its parts (its REGCOUNT alone, each block's batch, each block's
register renames alone), each suite kernel's stall cut, and a scoreboard mutant the verifier
rejects (a dropped wait). The GPU side evaluates every entry in an isolated worker (a faulting
candidate is a 'crashed' row and the run goes on): `bisect` checks each part at 16 rows,
`isolation` runs the mutant and then a healthy job after it, `batch_loads` times the whole batch
at 1 to 8192 rows, `stall_cut` every suite kernel's cut, `aa` the original against itself with
CUDA-graph replay and back-to-back launches, AA_REPEATS times each. Every ratio is
time(candidate)/time(original) from timing.paired (interleaved randomized rounds, bootstrap 95%
CI), measured only after timing.check proved the outputs byte-identical on fresh input sets.
Rows go to OUT/batch_aa_rows.csv as they come.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import ClassVar

from benchmarks.studies.runner import (
    SUITE,
    BuildRecord,
    DryDevice,
    LiveDevice,
    Study,
    commit,
    lanes,
    load_suite_spec,
    ratio_ci,
    record_of,
    suite_cubin,
    summary_head,
)

ROWS = (1, 16, 128, 1024, 8192)
RMS = "rmsnorm_triton_style"
AA_REPEATS = 5
EXPERIMENTS = ("bisect", "isolation", "batch_loads", "stall_cut", "aa")
JOB_RESERVE_S = 8.0  # what one job needs; a job is not begun with less left


def bisect_variants(out: Path) -> list[dict]:
    """The batch-loads result and its parts, to locate a step that breaks on hardware."""
    from reorder.analysis.cfg import basic_blocks
    from reorder.base.files import write_atomic
    from reorder.binary.cubin import read_cubin
    from reorder.build.pipeline import apply_each, batch_loads
    from reorder.moves import core as moves
    from reorder.moves.blocks import apply_renames
    from reorder.sass.model import decode_kernel
    from reorder.sass.writer import patch_kernel

    cubin = read_cubin(suite_cubin(RMS))
    code = decode_kernel(cubin, RMS)
    entries = []

    def add(name: str, data: bytes, note: str) -> None:
        write_atomic(out / f"{name}.cubin", data)
        entries.append({"variant": name, "note": note})

    full = batch_loads(code, noalias=True)
    add("batch_all", full.data, "; ".join(full.summary()[:5]))
    add(
        "regcount_only",
        patch_kernel(cubin, code.kernel, code.instructions, full.after.kernel.regcount),
        f"original code, REGCOUNT {code.kernel.regcount} -> {full.after.kernel.regcount}",
    )
    for move in moves.LoadBatch.instances(code, moves.MoveOptions(noalias=True)):
        one = apply_each(code, [move])
        if one.applied:
            add(f"batch_block{move.block_start}", one.data, "; ".join(one.summary()[:5]))
            block = next(b for b in basic_blocks(code.instructions) if b.start == move.block_start)
            plan = moves._plan_hoists(code, block, move.max_loads, True)
            if plan and plan[1]:
                renamed = apply_renames(code, plan[1], plan[2])
                add(f"rename_block{move.block_start}", renamed.cubin.data, "renamed registers only, original order")
    return entries


def prepare(out: Path, args: argparse.Namespace) -> None:
    """Original and candidate cubins for every experiment (or, --bisect-only, the batch parts again)."""
    from legality.mutate import scoreboard_mutants
    from reorder.base.files import write_atomic
    from reorder.binary.cubin import read_cubin
    from reorder.build.pipeline import cut_stalls
    from reorder.sass.model import decode_kernel
    from reorder.sass.writer import patch_kernel

    manifest_path = out / "manifest.json"
    if args.bisect_only:
        manifest = json.loads(manifest_path.read_text())
        manifest["bisect"], manifest["commit"] = bisect_variants(out), commit()
        manifest_path.write_text(json.dumps(manifest, indent=1))
        return
    manifest: dict = {"bisect": bisect_variants(out), "stallcut": []}
    for spec_path in sorted((SUITE / "specs").glob("*.toml")):
        kernel = spec_path.stem
        path = suite_cubin(kernel)
        code = decode_kernel(read_cubin(path), kernel)
        cut = cut_stalls(code)
        write_atomic(out / f"{kernel}_orig.cubin", path.read_bytes())
        write_atomic(out / f"{kernel}_stallcut.cubin", cut.data)
        manifest["stallcut"].append(
            {
                "kernel": kernel,
                "stall_before": sum(i.ctrl.stall for i in code.instructions),
                "stall_after": sum(i.ctrl.stall for i in cut.after.instructions),
            }
        )
    cubin = read_cubin(suite_cubin(RMS))
    code = decode_kernel(cubin, RMS)
    mutant = next(m for m in scoreboard_mutants(code.instructions) if m.kind == "drop_wait")
    write_atomic(out / "rmsnorm_dropwait.cubin", patch_kernel(cubin, code.kernel, mutant.instructions))
    manifest["commit"] = commit()
    manifest_path.write_text(json.dumps(manifest, indent=1))


def plan(build: Path, manifest: dict, only: tuple[str, ...]) -> list[tuple[dict, tuple]]:
    """(row fields, (job, original, candidate, spec, options)) for every experiment asked for, in order."""
    orig = build / f"{RMS}_orig.cubin"
    small = load_suite_spec(RMS, {"rows": 16})
    out: list[tuple[dict, tuple]] = []
    for v in manifest["bisect"] if "bisect" in only else []:
        out.append(({"experiment": "bisect", **v}, ("check", orig, build / f"{v['variant']}.cubin", small, {})))
    if "isolation" in only:
        dropped = build / "rmsnorm_dropwait.cubin"
        out.append(
            (
                {"experiment": "isolation", "variant": "drop_wait (verifier rejects it)"},
                ("check", orig, dropped, small, {}),
            )
        )
        out.append(
            ({"experiment": "isolation", "variant": "next job after the fault"}, ("check", orig, orig, small, {}))
        )
    for n in ROWS if "batch_loads" in only else ():
        spec = load_suite_spec(RMS, {"rows": n})
        out.append(
            (
                {"experiment": "batch_loads", "kernel": RMS, "rows": n},
                ("time", orig, build / "batch_all.cubin", spec, {}),
            )
        )
    for item in manifest["stallcut"] if "stall_cut" in only else []:
        k = item["kernel"]
        cubins = (build / f"{k}_orig.cubin", build / f"{k}_stallcut.cubin")
        out.append(({"experiment": "stall_cut", **item}, ("time", *cubins, load_suite_spec(k), {})))
    aa = (("short", RMS, {"rows": 16}), ("long", "warp_select_k32", None)) if "aa" in only else ()
    for size, kernel, point in aa:
        a = build / f"{kernel}_orig.cubin"
        for method in ("graph", "backtoback"):
            for rep in range(AA_REPEATS):
                fields = {"experiment": "aa", "size": size, "kernel": kernel, "rep": rep, "method": method}
                out.append(
                    (fields, ("time", a, a, load_suite_spec(kernel, point), {"method": method, "budget_s": 4.0}))
                )
    return out


class Live(LiveDevice):
    """Jobs in one isolated worker process on the GPU (a fault costs one job)."""

    def evaluate(self, kind: str, a: Path, b: Path, spec, options: dict) -> dict:
        job = "timing.evaluate:check_job" if kind == "check" else "timing.evaluate:check_and_time_job"
        return self.job(job, str(a), str(b), spec, timeout_s=120, **options)


class Dry(DryDevice, Live):
    """No GPU: every check 'identical' and made-up ratios (not measurements), so every step is walked."""

    def evaluate(self, kind, a, b, spec, options) -> dict:
        assert Path(a).is_file() and Path(b).is_file() and spec.name, (a, b)
        row = {"status": "ok", "check": "identical", "check_detail": "dry run"}
        return row if kind == "check" else {**row, **self.made_up(f"{Path(b).name}/{spec.grid}/{options}")}


@dataclasses.dataclass
class Rows(BuildRecord):
    prefix: ClassVar[str] = "batch_aa"
    rows: list = dataclasses.field(default_factory=list)


def select(manifest: dict, args: argparse.Namespace) -> dict:
    """The manifest, once --only names experiments there are (else ValueError: one line, exit 2)."""
    unknown = sorted({x for x in args.only.split(",") if x} - set(EXPERIMENTS))
    if unknown:
        raise ValueError(f"--only: no experiment {', '.join(unknown)}; one of {', '.join(EXPERIMENTS)}")
    return manifest


def check_and_time(run, rec: Rows) -> None:
    only = tuple(x for x in run.args.only.split(",") if x)

    def one(item: tuple[dict, tuple]) -> None:
        fields, (kind, a, b, spec, options) = item
        rec.add("rows", {**fields, "l2": "warm", **rec.device.evaluate(kind, a, b, spec, options)})
        run.log(f"{fields['experiment']} {fields.get('variant') or fields.get('kernel')}: {rec.rows[-1].get('status')}")

    lanes(rec, "rows", plan(rec.build, run.manifest, only), one, key=lambda item: item[0], reserve_s=JOB_RESERVE_S)


def summary(rec: Rows, out: Path) -> str:
    columns = ("experiment", "what", "status", "check", "ratio [95% CI]")
    lines = summary_head("Load batching, stall cuts, A/A and fault isolation", rec.stamps, columns)
    for r in rec.rows:
        what = r.get("variant") or " ".join(str(r[k]) for k in ("kernel", "rows", "method", "rep") if k in r)
        lines.append(f"| {r.get('experiment')} | {what} | {r.get('status')} | {r.get('check', '-')} | {ratio_ci(r)} |")
    return "\n".join(lines) + "\n"


def build_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bisect-only", action="store_true", help="rebuild only the batch variants of a build")


STUDY = Study(
    name="batch_aa",
    prepare=prepare,
    build_options=build_options,
    record=record_of(Rows),
    check_and_time=check_and_time,
    plot=summary,
    doc=__doc__ or "",
    build_dir=Path("gpu_build/batch_aa"),
    deadline_s=500.0,
    select=select,
    options=lambda p: p.add_argument(
        "--only", default=",".join(EXPERIMENTS), help="comma list of " + ", ".join(EXPERIMENTS)
    ),
    live=Live,
    dry=Dry,
)
