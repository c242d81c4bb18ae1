"""How much of a schedule the scheduler's own model makes: over corpus, Triton corpus and suite
cubins, every block a move schedules (stall cuts, load batches, two swaps per kernel) is planned
(reorder.moves.distances) and judged (legality.verify.block_violations); a block whose first
verdict faults something is planned again with what was learnt. Counts blocks, verdicts, faulted
verdicts and, for each fault, its kind and whether its producer was inside the block or before it.

    python -m benchmarks.plan_verdicts [--every N] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import collections
import subprocess
from pathlib import Path

import reorder.moves.schedule as schedule
from reorder.binary.cubin import read_cubin
from reorder.build.pipeline import apply_each, batch_loads, cut_stalls
from reorder.moves.core import Swap
from reorder.sass.model import decode_kernel

ROOT = Path(__file__).resolve().parent.parent


def cubins(every: int) -> list[Path]:
    found = (
        sorted((ROOT / "tests/corpus/cubin").glob("sm_*/*.cubin"))
        + sorted((ROOT / "tests/corpus/triton").glob("sm_*/*.cubin"))
        + sorted((ROOT / "benchmarks/kernels/cubin").glob("*.cubin"))
    )
    return found[::every]


def count(paths: list[Path]) -> tuple[collections.Counter, collections.Counter]:
    calls, faults = collections.Counter(), collections.Counter()
    verdict, settle = schedule.block_violations, schedule._settled

    def judged(block, start, kernel, arch):
        found = verdict(block, start, kernel, arch)
        calls["verdicts"] += 1
        if found:
            calls["faulted"] += 1
            position = {ins.offset: k for k, ins in enumerate(block)}
            j = min(position[v.consumer_offset] for v in found)
            for v in found:
                if position[v.consumer_offset] == j:
                    p = position.get(v.producer_offset)
                    faults[(v.kind, "before the block" if p is None or p >= j else "inside")] += 1
        return found

    def settled(base, *args):
        calls["blocks"] += 1
        return settle(base, *args)

    schedule.block_violations, schedule._settled = judged, settled
    try:
        for path in paths:
            cubin = read_cubin(path)
            for kernel in cubin.kernels:
                if kernel.is_entry:
                    code = decode_kernel(cubin, kernel.name)
                    cut_stalls(code)
                    batch_loads(code, False)
                    for move in Swap.instances(code)[:2]:
                        apply_each(code, [move])
    finally:
        schedule.block_violations, schedule._settled = verdict, settle
    return calls, faults


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=int, default=3, help="take every N-th cubin")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    paths = cubins(args.every)
    calls, faults = count(paths)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT, check=False
    )
    lines = [
        f"# The scheduler's plan against the verdict ({commit.stdout.strip()}, every {args.every}. cubin: "
        f"{len(paths)} cubins)",
        "",
        f"- blocks scheduled: {calls['blocks']}",
        f"- verdicts asked: {calls['verdicts']}, of which faulted: {calls['faulted']}",
        f"- blocks whose plan alone passed: at least {calls['blocks'] - calls['faulted']} "
        "(a block faulted once is planned again)",
        "",
        "| fault at the first faulted position | producer | count |",
        "| --- | --- | --- |",
        *[f"| {kind} | {where} | {n} |" for (kind, where), n in faults.most_common()],
    ]
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
