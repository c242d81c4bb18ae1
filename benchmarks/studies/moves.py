"""Single moves over the whole corpus, checked byte for byte on the GPU at two launches.

    python -m benchmarks.studies moves --prepare [--out gpu_build/moves] [--jobs N] [--kernels a,b] [--moves a,b] (CPU)
    python -m benchmarks.studies moves --build gpu_build/moves --out OUT [--dry-run]

Every kernel with a launch spec (the suite kernels and the sm_90 corpus kernels): stall cuts
of every block, `batch_loads(noalias=True)` (each spec gives every buffer its own allocation,
so the assumption holds in the check), up to MAX_SWAPS swaps of adjacent independent
instructions spread over the kernel, applied one after another, and
`hoist_into_dominators(noalias=True)` (`blocks`: loads moved into the block before theirs), and
prefetch copies (`prefetch`: `reorder prefetch --assume-noalias --iterations 4`). Each output passed the
verifier when it was built; this checks that silicon agrees (outputs byte-identical to the
original's on fresh inputs, no fault, no hang) at the spec's launch and at a launch of a few
blocks (`few_blocks`: each block then has its SM to itself, the other extreme of scheduling),
with shared memory poisoned before every launch (timing.check). No timing: these are safety
checks. Rows go to OUT/moves_checks.csv (GPU, date, commit, one row per kernel and move).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import time
from pathlib import Path
from typing import ClassVar

from benchmarks.studies.runner import (
    BuildRecord,
    DryDevice,
    LiveDevice,
    commit,
    declared,
    few_blocks,
    lanes,
    summary_head,
)

ROOT = Path(__file__).resolve().parent.parent.parent

MAX_SWAPS = 24
BUILD_LIMIT_S = 90
CHECK_RESERVE_S = 5.0  # what one check needs; a row is not begun with less left
MOVES = ("stalls", "batch", "swaps", "blocks", "prefetch")
PREFETCH_ITERATIONS = 4


class _Slow(Exception):
    pass


def _alarm(signum, frame):
    raise _Slow()


def _build(code, which: str):
    from reorder.build.pipeline import apply_each, batch_loads, cut_stalls, hoist_into_dominators
    from reorder.moves import core as moves

    if which == "batch":
        return batch_loads(code, noalias=True)
    if which == "blocks":
        return hoist_into_dominators(code, noalias=True)
    if which == "prefetch":
        return _prefetch(code)
    if which == "stalls":
        return cut_stalls(code)
    swaps = moves.Swap.instances(code)
    step = max(1, len(swaps) // MAX_SWAPS)
    return apply_each(code, swaps[::step][:MAX_SWAPS])


@dataclasses.dataclass(frozen=True)
class _Prefetched:
    """What `_build_one` reads of a build: prefetch copies make a grown kernel, not an Outcome."""

    data: bytes
    after: object
    applied: tuple[str, ...]
    moved: int = 0


def _prefetch(code):
    """`reorder prefetch --assume-noalias --iterations 4`: the kernel itself when nothing applies."""
    from reorder.base.errors import LegalityError, NotApplicable
    from reorder.build.pipeline import prefetched

    try:
        after, note = prefetched(code, True, PREFETCH_ITERATIONS)
    except (NotApplicable, LegalityError):
        return _Prefetched(code.cubin.data, code, ())
    return _Prefetched(after.cubin.data, after, (note,))


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


def prepare(folder: Path, args: argparse.Namespace) -> None:
    """Build every (kernel, move of `--moves`) into `folder`, `--jobs` at a time (on the GPU
    host's cores when the builds must match the commit being checked there)."""
    import json
    from concurrent.futures import ProcessPoolExecutor

    from benchmarks.studies.stallcut import picked
    from reorder.base.files import write_atomic

    found = picked(args)
    chosen = _moves(args)
    for e in found:
        write_atomic(folder / f"{e['family']}_{e['kernel']}_orig.cubin", Path(e["cubin"]).read_bytes())
    # the slowest kernels first, so no long build starts last
    tasks = [(e, which, str(folder)) for e in found for which in chosen]
    slowest_first = sorted(range(len(tasks)), key=lambda k: -Path(tasks[k][0]["cubin"]).stat().st_size)
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        built = dict(zip(slowest_first, pool.map(_build_one, [tasks[k] for k in slowest_first])))
    records = [_relative_spec(built[k]) for k in range(len(tasks))]
    stamp = os.environ.get("REORDER_COMMIT") or commit()
    (folder / "manifest.json").write_text(json.dumps({"commit": stamp, "kernels": records}, indent=1))


def _relative_spec(record: dict) -> dict:
    """The record with its spec path relative to the repository (the GPU host's checkout differs)."""
    spec = Path(record["spec"])
    return {**record, "spec": str(spec.relative_to(ROOT)) if spec.is_relative_to(ROOT) else str(spec)}


class Live(LiveDevice):
    """Jobs in one isolated worker process on the GPU (a fault costs one job)."""

    def check(self, a: Path, b: Path, spec) -> dict:
        return self.job("timing.evaluate:check_job", str(a), str(b), spec, more=(few_blocks(spec),), timeout_s=120)


class Dry(DryDevice, Live):
    """No GPU: every check answered 'identical' (not a measurement), so every step is walked."""

    def check(self, a, b, spec) -> dict:
        assert Path(a).is_file() and Path(b).is_file() and few_blocks(spec).grid[0] >= 1, (a, b)
        return {"status": "ok", "check": "identical", "check_detail": "dry run"}


@dataclasses.dataclass
class Rows(BuildRecord):
    prefix: ClassVar[str] = "moves"
    checks: list = dataclasses.field(default_factory=list)


FIELDS = ("family", "kernel", "move", "applied", "moved", "registers", "note")


def one_check(run, rec: Rows, e: dict) -> None:
    from timing.cli_support import validated_spec

    fields = {k: e.get(k) for k in FIELDS}
    if not e["built"]:
        rec.add("checks", {**fields, "status": "not run"})
        return
    orig = rec.build / f"{e['name']}_orig.cubin"
    spec = validated_spec(ROOT / e["spec"], [orig])  # relative: built on another machine
    row = {**fields, **rec.device.check(orig, rec.build / f"{e['name']}_{e['move']}.cubin", spec)}
    rec.add("checks", row)
    run.log(f"{e['kernel']} {e['move']}: {row.get('status')} {row.get('check')} {row.get('reason', '')}")


def check_and_time(run, rec: Rows) -> None:
    lanes(
        rec,
        "checks",
        run.manifest["kernels"],
        lambda e: one_check(run, rec, e),
        key=lambda e: {k: e.get(k) for k in FIELDS},
        reserve_s=CHECK_RESERVE_S,
    )


def summary(rec: Rows, out: Path) -> str:
    """Per move: how many kernels were checked and how each check came out."""
    lines = summary_head("Single moves checked on silicon", rec.stamps, ("move", "rows", "identical", "other outcomes"))
    for move in MOVES:
        rows = [r for r in rec.checks if r.get("move") == move]
        same = sum(r.get("check") == "identical" for r in rows)
        others: dict[str, int] = {}
        for r in rows:
            if r.get("check") != "identical":
                outcome = str(r.get("check") or r.get("status"))
                others[outcome] = others.get(outcome, 0) + 1
        rest = ", ".join(f"{k}: {n}" for k, n in sorted(others.items())) or "-"
        lines.append(f"| {move} | {len(rows)} | {same} | {rest} |")
    wrong = [r for r in rec.checks if r.get("check") not in ("identical", None) or r.get("status") == "crashed"]
    lines += ["", *(f"- {r['kernel']} {r['move']}: {r.get('check_detail') or r.get('reason')}" for r in wrong)]
    return "\n".join(lines) + "\n"


def _moves(args: argparse.Namespace) -> tuple[str, ...]:
    """The moves `--moves` names (all of MOVES by default); ValueError naming one unknown."""
    names = tuple(getattr(args, "moves", None) or MOVES)
    unknown = sorted(set(names) - set(MOVES))
    if unknown:
        raise ValueError(f"no move {', '.join(unknown)} (have: {', '.join(MOVES)})")
    return names


def build_options(p: argparse.ArgumentParser) -> None:
    from benchmarks.studies import stallcut

    p.add_argument("--jobs", type=int, default=1, help="builds in parallel")
    p.add_argument(
        "--moves",
        type=lambda v: tuple(v.split(",")),
        default=MOVES,
        help=f"which moves to build (default all: {','.join(MOVES)})",
    )
    stallcut.build_options(p)


STUDY = declared(
    __name__,
    name="moves",
    build_dir=Path("gpu_build/moves"),
    deadline_s=400.0,
)
