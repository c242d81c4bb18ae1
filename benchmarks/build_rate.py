"""How fast the CPU builds candidates: by worker count, and by kernel size and move family.

    python -m benchmarks.build_rate [--kernel rmsnorm_triton_style] [--jobs 1,2,4,8,16] [--count 32]
    python -m benchmarks.build_rate sizes --out after.jsonl [--tree CHECKOUT] [--steps 250,1000,4000] [--limit 120]
    python -m benchmarks.build_rate table before.jsonl after.jsonl [--out table.md]

By worker count: each level builds the same `count` random choices of the kernel's move
space (seeded) with that many joblib workers and a fresh disk cache (REORDER_CACHE), in its
own process; prints one JSON line per level: builds per second, wall seconds, how many built.

By size (`sizes`): where a build's CPU time goes as a kernel grows. The kernels are
benchmarks.kernels.fma_chain at each number of steps (nvcc; 250, 1,000 and 4,000 steps give
about 1k, 5k and 20k SASS instructions in one long block, where a pass quadratic in a
block's length shows at once). Each cell, one move family or build step on one kernel, runs
in its own child process with the code of the checkout --tree (so one command measures a
commit before a change and one after), timed in CPU seconds (the machine's load does not
count), bounded by --limit CPU-s. The families: the stall cuts (listing and applying the
merged cut), the load batches and the slice batches (listing every instance and applying
each to the kernel), writing a candidate's cubin, reading it back (parse, decode, check:
nvdisasm's CPU included), the verifier's verdict on it, the PTX analyses (control flow,
def-use, memory and dependency graphs, the twin search of every load) and the PTX move space
(the first stage's decisions). `table` puts two runs side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _choices(kernel: str, count: int, seed: int = 3):
    import random

    from benchmarks.studies.runner import suite_cubin as _suite_cubin
    from reorder.binary.cubin import read_cubin
    from reorder.build.space import Choice, search_space
    from reorder.sass.model import decode_kernel

    code = decode_kernel(read_cubin(_suite_cubin(kernel)), kernel)
    space = search_space(code, True)
    rng = random.Random(seed)

    def some(n: int) -> tuple[int, ...]:
        return tuple(sorted(i for i in range(n) if rng.random() < 0.5))

    return [
        Choice(
            some(len(space.load_batches)),
            some(len(space.stall_cuts)),
            tuple(sorted(rng.sample(range(len(space.swaps)), min(2, len(space.swaps))))),
            some(len(space.slice_batches)),
        )
        for _ in range(count)
    ]


def one_level(kernel: str, jobs: int, count: int) -> dict:
    from joblib import Parallel, delayed

    from benchmarks.studies.runner import suite_cubin as _suite_cubin
    from reorder.build.space import build_candidate

    choices = _choices(kernel, count)
    cubin = str(_suite_cubin(kernel))
    started = time.monotonic()
    built = Parallel(n_jobs=jobs, backend="loky")(delayed(build_candidate)(cubin, kernel, True, c) for c in choices)
    wall = time.monotonic() - started
    return {
        "kernel": kernel,
        "jobs": jobs,
        "count": count,
        "built": sum(b.data is not None for b in built),
        "wall_s": round(wall, 2),
        "builds_per_s": round(count / wall, 2),
        "cpus": os.cpu_count(),
    }


# ---------------------------------------------------------------------------------------
# By kernel size and move family (`sizes` and `table`).

FAMILIES = (
    "stall cuts",
    "load batch",
    "slice batch",
    "write",
    "read-back",
    "verify",
    "PTX analyses",
    "PTX move space",
)

# The child: one (kernel, family) cell under the code on its PYTHONPATH. What the cell needs
# first (the decoded kernel, a candidate to write, bytes to read back) is made before the
# clock starts; the CPU limit (RLIMIT_CPU, so the machine's load does not count) is set then.
# CPU time is the process's user + system time plus that of the children it waited for
# (nvdisasm in the read-back).
_CELL = r"""
import json, resource, sys
from pathlib import Path

def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

job = json.loads(sys.argv[1])
family = job["family"]
from legality.verify import clear_caches, verify_kernel
from reorder.binary.cubin import parse_cubin, read_cubin
from reorder.moves.core import LoadBatch, StallCut
from reorder.moves.protocol import MoveOptions
from reorder.moves.slicebatch import SliceBatch
from reorder.sass.model import decode_kernel
from reorder.sass.readback import read_back

code = decode_kernel(read_cubin(job["cubin"]), job["kernel"])
count = len(code.instructions)
if family in ("write", "read-back", "verify"):
    cand = StallCut.merged(StallCut.instances(code, MoveOptions())).apply(code, code.instructions)
    data = cand.cubin_bytes()
    written = read_back(parse_cubin(data, code.cubin.path), code)
clear_caches()
start = cpu()
resource.setrlimit(resource.RLIMIT_CPU, (int(start) + job["limit"], resource.RLIM_INFINITY))
start = cpu()
instances = 1
if family == "stall cuts":
    StallCut.merged(StallCut.instances(code, MoveOptions())).apply(code, code.instructions)
elif family in ("load batch", "slice batch"):
    kind = LoadBatch if family == "load batch" else SliceBatch
    moves = kind.instances(code, MoveOptions(noalias=False))
    instances = len(moves)
    for move in moves:
        move.apply(code, code.instructions)
elif family == "write":
    cand.cubin_bytes()
elif family == "read-back":
    read_back(parse_cubin(data, code.cubin.path), code)
elif family == "verify":
    assert verify_kernel(written, original=code.instructions).ok
else:
    try:  # reorder.ptx in rooms, else flat
        from reorder.ptx.analyses.analysis import Analysis
        from reorder.ptx.model.model import parse_module
        from reorder.ptx.moves.reuse import Twins
        from reorder.ptx.space.registry import MoveOptions as PtxOptions
        from reorder.ptx.space.searchspace import first_stage
    except ImportError:
        from reorder.ptx.analysis import Analysis
        from reorder.ptx.model import parse_module
        from reorder.ptx.reuse import Twins
        from reorder.ptx.registry import MoveOptions as PtxOptions
        from reorder.ptx.searchspace import first_stage
    module = parse_module(Path(job["ptx"]).read_text())
    if family == "PTX analyses":
        a = Analysis(module.function(job["kernel"]))
        a.graph
        twins = Twins(a)
        for load in twins.loads:
            twins.earlier(load)
    else:
        instances = len(first_stage(module, PtxOptions(job["kernel"])))
print(json.dumps({"instructions": count, "cpu_s": round(cpu() - start, 3), "instances": instances}))
"""


def kernels_by_size(steps: list[int], folder: Path) -> list[tuple[int, Path, Path]]:
    """(steps, cubin, PTX) of benchmarks.kernels.fma_chain at each length, built here once."""
    from benchmarks.kernels.fma_chain import build

    return [(s, *build(s, folder)) for s in steps]


def one_cell(tree: Path, cubin: Path, ptx: Path, family: str, limit: int) -> dict:
    """Run one cell in a child under `tree`'s code; over `limit` CPU-s it counts as over."""
    job = {"cubin": str(cubin), "ptx": str(ptx), "kernel": "fma_chain", "family": family, "limit": limit}
    with tempfile.TemporaryDirectory() as cache:
        done = subprocess.run(
            [sys.executable, "-c", _CELL, json.dumps(job)],
            env={**os.environ, "PYTHONPATH": str(tree.resolve()), "REORDER_CACHE": cache, "REORDER_QUIET": "1"},
            capture_output=True,
            text=True,
            check=False,
            cwd=tree,  # `python -c` puts its folder first on sys.path: the tree's, not this one's
        )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode == 0 and lines:
        return json.loads(lines[-1])
    if done.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        return {"over_cpu_s": limit}
    return {"error": (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]}


def sizes(tree: Path, steps: list[int], out: Path, limit: int, families: tuple[str, ...]) -> int:
    """Every family at every length; a family over the limit at one length is not run at the
    longer ones (it only grows)."""
    commit = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    over: set[str] = set()
    with out.open("w") as sink:
        for n, cubin, ptx in kernels_by_size(steps, Path(tempfile.gettempdir()) / "build_rate_kernels"):
            for family in families:
                base = {"tree": commit, "steps": n, "family": family}
                if family in over:
                    record = {**base, "over_cpu_s": limit, "not_run": "over the limit at a shorter length"}
                else:
                    record = {**base, **one_cell(tree, cubin, ptx, family, limit)}
                if "over_cpu_s" in record:
                    over.add(family)
                sink.write(json.dumps(record) + "\n")
                sink.flush()
                print(json.dumps(record), flush=True)
    return 0


def _cell_text(record: dict | None) -> str:
    if record is None:
        return ""
    if "cpu_s" in record:
        return f"{record['cpu_s']:.2f}"
    if "over_cpu_s" in record:
        return f"> {record['over_cpu_s']}"
    return "failed"


def table(before: Path, after: Path) -> str:
    """CPU-s per family and length, before -> after, with the instruction counts."""

    def load(p: Path) -> dict[tuple[int, str], dict]:
        return {(r["steps"], r["family"]): r for r in map(json.loads, p.read_text().splitlines()) if r}

    b, a = load(before), load(after)
    steps = sorted({s for s, _ in a} | {s for s, _ in b})
    count = {
        s: next((r["instructions"] for (t, _), r in {**b, **a}.items() if t == s and "instructions" in r), "?")
        for s in steps
    }
    lines = [
        "| family | " + " | ".join(f"{count[s]} instr. before | after" for s in steps) + " |",
        "| --- | " + " | ".join("--- | ---" for _ in steps) + " |",
    ]
    families = [f for f in FAMILIES if any((s, f) in a or (s, f) in b for s in steps)]
    for f in families:
        cells = [f"{_cell_text(b.get((s, f)))} | {_cell_text(a.get((s, f)))}" for s in steps]
        lines.append(f"| {f} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["sizes"]:
        p = argparse.ArgumentParser(prog="python -m benchmarks.build_rate sizes")
        p.add_argument("--out", type=Path, required=True)
        p.add_argument("--tree", type=Path, default=Path(__file__).resolve().parent.parent)
        p.add_argument("--steps", default="250,1000,4000")
        p.add_argument("--limit", type=int, default=120, help="CPU-s per cell before it counts as over")
        p.add_argument("--families", help="comma-separated (default: all)")
        a = p.parse_args(argv[1:])
        families = tuple(a.families.split(",")) if a.families else FAMILIES
        return sizes(a.tree, [int(s) for s in a.steps.split(",")], a.out, a.limit, families)
    if argv[:1] == ["table"]:
        p = argparse.ArgumentParser(prog="python -m benchmarks.build_rate table")
        p.add_argument("before", type=Path)
        p.add_argument("after", type=Path)
        p.add_argument("--out", type=Path)
        a = p.parse_args(argv[1:])
        text = table(a.before, a.after)
        if a.out:
            a.out.write_text(text)
        print(text)
        return 0
    return workers(argv)


def workers(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", default="rmsnorm_triton_style")
    parser.add_argument("--jobs", default="1,2,4,8,16")
    parser.add_argument("--count", type=int, default=32)
    parser.add_argument("--level", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.level:
        print(json.dumps(one_level(args.kernel, args.level, args.count)), flush=True)
        return 0
    for jobs in (int(j) for j in args.jobs.split(",")):
        with tempfile.TemporaryDirectory() as cache:
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "benchmarks.build_rate",
                    "--kernel",
                    args.kernel,
                    "--count",
                    str(args.count),
                    "--level",
                    str(jobs),
                ],
                env={**os.environ, "REORDER_CACHE": cache},
                check=False,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
