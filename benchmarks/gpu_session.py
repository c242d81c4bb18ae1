"""One GPU run: RMSNorm load batching (with a bisection of its steps), StallCut over the
suite, A/A timing of both methods, and fault isolation.

CPU side (needs nvdisasm): `python -m benchmarks.gpu_session --prepare DIR` writes every
original and candidate cubin into DIR with a manifest. GPU side:
`python -m benchmarks.gpu_session --run DIR --out OUT` evaluates every entry in a
`timing.worker` process (a faulting candidate is a 'crashed' row, and the run goes
on), writing OUT/gpu_session.csv with GPU, date, commit, L2 state and each ratio's CI.

Every ratio is time(candidate)/time(original) from timing.paired (CUDA-graph replay,
interleaved randomized rounds, bootstrap 95% CI), measured only after timing.check proved
the outputs byte-identical on 3 fresh input sets.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from benchmarks.studies.runner import SUITE, load_suite_spec, two_sided_parser  # other scripts import them from here
from benchmarks.studies.runner import commit as _commit
from benchmarks.studies.runner import suite_cubin as _suite_cubin
from reorder.suite.rows import write_rows

ROWS = (1, 16, 128, 1024, 8192)
RMS = "rmsnorm_triton_style"
AA_REPEATS = 5


def _bisect_variants(out: Path) -> list[dict]:
    """The batch-loads result and its parts, to locate a step that breaks on hardware."""
    from reorder.analysis.cfg import basic_blocks
    from reorder.base.files import write_atomic
    from reorder.binary.cubin import read_cubin
    from reorder.build.pipeline import apply_each, batch_loads
    from reorder.moves import core as moves
    from reorder.moves.blocks import apply_renames
    from reorder.sass.model import decode_kernel
    from reorder.sass.writer import patch_kernel

    cubin = read_cubin(_suite_cubin(RMS))
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


def prepare(out: Path) -> None:
    """CPU side: write original and candidate cubins for every experiment into `out`."""
    from legality.mutate import scoreboard_mutants
    from reorder.base.files import write_atomic
    from reorder.binary.cubin import read_cubin
    from reorder.build.pipeline import cut_stalls
    from reorder.sass.model import decode_kernel
    from reorder.sass.writer import patch_kernel

    out.mkdir(parents=True, exist_ok=True)
    manifest: dict = {"bisect": _bisect_variants(out), "stallcut": []}
    for spec_path in sorted((SUITE / "specs").glob("*.toml")):
        kernel = spec_path.stem
        path = _suite_cubin(kernel)
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
    cubin = read_cubin(_suite_cubin(RMS))
    code = decode_kernel(cubin, RMS)
    mutant = next(m for m in scoreboard_mutants(code.instructions) if m.kind == "drop_wait")
    write_atomic(out / "rmsnorm_dropwait.cubin", patch_kernel(cubin, code.kernel, mutant.instructions))
    manifest["commit"] = _commit()
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))


EXPERIMENTS = ("bisect", "isolation", "batch_loads", "stall_cut", "aa")


def run(folder: Path, out: Path, only: tuple[str, ...] = EXPERIMENTS) -> None:
    """GPU side: every evaluation in a worker; rows go to OUT/gpu_session.csv as they come."""
    import cupy

    from timing.evaluate import check_and_time_job, check_job, describe_status
    from timing.worker import Job, WorkerPool

    out.mkdir(parents=True, exist_ok=True)
    manifest = json.loads((folder / "manifest.json").read_text())
    props = cupy.cuda.runtime.getDeviceProperties(0)
    meta = {
        "gpu": props["name"].decode(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "driver": cupy.cuda.runtime.driverGetVersion(),
        "commit": manifest.get("commit", "unknown"),
    }
    rows: list[dict] = []
    orig = str(folder / f"{RMS}_orig.cubin")

    with WorkerPool(devices=[0]) as pool:

        def evaluate(job_fn, a, b, spec, **fields):
            res = pool.run(Job.of(job_fn, str(a), str(b), spec, timeout_s=120, **fields.pop("kw", {})))
            row = {**meta, **fields, **describe_status(res)}
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k not in meta}, default=str), flush=True)
            _write(out, rows)

        small = load_suite_spec(RMS, {"rows": 16})
        for v in manifest["bisect"] if "bisect" in only else []:
            evaluate(check_job, orig, folder / f"{v['variant']}.cubin", small, experiment="bisect", **v)
        if "isolation" in only:
            evaluate(
                check_job,
                orig,
                folder / "rmsnorm_dropwait.cubin",
                small,
                experiment="isolation",
                variant="drop_wait (verifier rejects it)",
            )
            evaluate(check_job, orig, orig, small, experiment="isolation", variant="next job after the fault")
        for n in ROWS if "batch_loads" in only else ():
            evaluate(
                check_and_time_job,
                orig,
                folder / "batch_all.cubin",
                load_suite_spec(RMS, {"rows": n}),
                experiment="batch_loads",
                kernel=RMS,
                rows=n,
            )
        for item in manifest["stallcut"] if "stall_cut" in only else []:
            k = item["kernel"]
            evaluate(
                check_and_time_job,
                folder / f"{k}_orig.cubin",
                folder / f"{k}_stallcut.cubin",
                load_suite_spec(k),
                experiment="stall_cut",
                **item,
            )
        aa = (("short", RMS, {"rows": 16}), ("long", "warp_select_k32", None)) if "aa" in only else ()
        for size, kernel, point in aa:
            a = folder / f"{kernel}_orig.cubin"
            for method in ("graph", "backtoback"):
                for rep in range(AA_REPEATS):
                    evaluate(
                        check_and_time_job,
                        a,
                        a,
                        load_suite_spec(kernel, point),
                        experiment="aa",
                        size=size,
                        kernel=kernel,
                        rep=rep,
                        kw={"method": method, "budget_s": 4.0},
                    )


def _write(out: Path, rows: list[dict]) -> None:
    write_rows(out / "gpu_session.csv", rows)


if __name__ == "__main__":
    parser = two_sided_parser(__doc__ or "")
    parser.add_argument("--only", default=",".join(EXPERIMENTS), help="comma list of " + ", ".join(EXPERIMENTS))
    parser.add_argument("--bisect-only", action="store_true", help="with --prepare: rebuild only the batch variants")
    args = parser.parse_args()
    if args.prepare and args.bisect_only:
        manifest_path = args.prepare / "manifest.json"
        manifest = json.loads(manifest_path.read_text())
        manifest["bisect"], manifest["commit"] = _bisect_variants(args.prepare), _commit()
        manifest_path.write_text(json.dumps(manifest, indent=1))
    elif args.prepare:
        prepare(args.prepare)
    if args.run:
        run(args.run, args.out, tuple(args.only.split(",")))
