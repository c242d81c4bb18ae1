"""Single moves over the whole corpus, checked byte for byte on the GPU at two launches.

Every kernel with a launch spec (the 11 suite kernels and the 48 sm_90 corpus kernels):
stall cuts of every block, `batch_loads(noalias=True)` (each spec gives every buffer its
own allocation, so the assumption holds in the check) and up to MAX_SWAPS swaps of
adjacent independent instructions spread over the kernel, applied one after another.
Each output passed the verifier when it was built; this checks that silicon agrees
(outputs byte-identical to the original's on fresh inputs, no fault, no hang) at the
spec's launch and at a launch of a few blocks (`few_blocks`: each block then has its SM
to itself, the other extreme of scheduling), with shared memory poisoned before every
launch (timing.check). No timing: these are safety checks.

CPU: `python -m benchmarks.moves_gpu --prepare DIR [--jobs N]`; GPU: `--run DIR --out OUT`
(OUT/moves.csv with GPU, date, commit and one row per kernel and move).
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from benchmarks.studies.runner import few_blocks, two_sided_parser  # few_blocks: other scripts import it from here

ROOT = Path(__file__).resolve().parent.parent

MAX_SWAPS = 24
BUILD_LIMIT_S = 90


class _Slow(Exception):
    pass


def _alarm(signum, frame):
    raise _Slow()


MOVES = ("stalls", "batch", "swaps")


def _build(code, which: str):
    from reorder.build.pipeline import apply_each, batch_loads, cut_stalls
    from reorder.moves import core as moves

    if which == "batch":
        return batch_loads(code, noalias=True)
    if which == "stalls":
        return cut_stalls(code)
    swaps = moves.Swap.instances(code)
    step = max(1, len(swaps) // MAX_SWAPS)
    return apply_each(code, swaps[::step][:MAX_SWAPS])


def _build_one(task: tuple[dict, str, str]) -> dict:
    """One (kernel, move) build in a worker process: the manifest record, the cubin written."""
    from reorder.base.files import write_atomic
    from reorder.binary.cubin import read_cubin
    from reorder.sass.model import decode_kernel

    e, which, folder = task
    name = f"{e['family']}_{e['kernel']}"
    original = Path(e["cubin"]).read_bytes()
    t0 = time.time()
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(BUILD_LIMIT_S)
    try:
        out = _build(decode_kernel(read_cubin(e["cubin"]), e["kernel"]), which)
    except _Slow:
        return {**e, "name": name, "move": which, "built": False, "note": f"not built within {BUILD_LIMIT_S} s"}
    finally:
        signal.alarm(0)
    changed = out.data != original
    if changed:
        write_atomic(Path(folder) / f"{name}_{which}.cubin", out.data)
    print(
        f"{name:40s} {which:6s} applied {len(out.applied):3d} moved {out.moved:4d} {time.time() - t0:5.1f}s", flush=True
    )
    return {
        **e,
        "name": name,
        "move": which,
        "built": changed,
        "applied": len(out.applied),
        "moved": out.moved,
        "registers": out.after.kernel.regcount,
        "note": "" if changed else "nothing applied",
    }


def prepare(folder: Path, jobs: int = 1) -> None:
    """Build every (kernel, move) into `folder`, `jobs` at a time (on the GPU host's cores
    when the builds must match the commit being checked there)."""
    from concurrent.futures import ProcessPoolExecutor

    from benchmarks.gpu_session import _commit
    from benchmarks.stallcut_gpu import _entries
    from reorder.base.files import write_atomic

    folder.mkdir(parents=True, exist_ok=True)
    entries = _entries()
    for e in entries:
        write_atomic(folder / f"{e['family']}_{e['kernel']}_orig.cubin", Path(e["cubin"]).read_bytes())
    # the slowest kernels first, so no long build starts last
    tasks = [(e, which, str(folder)) for e in entries for which in MOVES]
    slowest_first = sorted(range(len(tasks)), key=lambda k: -Path(tasks[k][0]["cubin"]).stat().st_size)
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
        built = dict(zip(slowest_first, pool.map(_build_one, [tasks[k] for k in slowest_first])))
    records = [_relative_spec(built[k]) for k in range(len(tasks))]
    commit = os.environ.get("REORDER_COMMIT") or _commit()
    (folder / "manifest.json").write_text(json.dumps({"commit": commit, "kernels": records}, indent=1))


def _relative_spec(record: dict) -> dict:
    """The record with its spec path relative to the repository (the GPU host's checkout differs)."""
    spec = Path(record["spec"])
    return {**record, "spec": str(spec.relative_to(ROOT)) if spec.is_relative_to(ROOT) else str(spec)}


def run(folder: Path, out: Path) -> None:
    import cupy

    from reorder.suite.rows import write_rows
    from timing.cli_support import validated_spec
    from timing.evaluate import check_job, describe_status
    from timing.worker import Job, WorkerPool

    out.mkdir(parents=True, exist_ok=True)
    manifest = json.loads((folder / "manifest.json").read_text())
    props = cupy.cuda.runtime.getDeviceProperties(0)
    meta = {"gpu": props["name"].decode(), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "commit": manifest["commit"]}
    rows: list[dict] = []
    with WorkerPool(devices=[0]) as pool:
        for e in manifest["kernels"]:
            fields = {k: e.get(k) for k in ("family", "kernel", "move", "applied", "moved", "registers", "note")}
            if not e["built"]:
                rows.append({**meta, **fields, "status": "not run"})
                continue
            orig = folder / f"{e['name']}_orig.cubin"
            spec = validated_spec(ROOT / e["spec"], [orig])  # relative: built on another machine
            res = pool.run(
                Job.of(
                    check_job,
                    str(orig),
                    str(folder / f"{e['name']}_{e['move']}.cubin"),
                    spec,
                    more=(few_blocks(spec),),
                    timeout_s=120,
                )
            )
            row = {**meta, **fields, **describe_status(res)}
            rows.append(row)
            print(json.dumps({k: row.get(k) for k in ("kernel", "move", "status", "check", "reason")}), flush=True)
            write_rows(out / "moves.csv", rows)
    write_rows(out / "moves.csv", rows)


if __name__ == "__main__":
    parser = two_sided_parser(__doc__ or "")
    parser.add_argument("--jobs", type=int, default=1, help="builds in parallel (--prepare)")
    args = parser.parse_args()
    if args.prepare:
        prepare(args.prepare, args.jobs)
    if args.run:
        run(args.run, args.out)
