"""Locate, on the GPU, the stall changes that make a verified candidate wrong.

A verified candidate that computes different bytes (or faults) on silicon means a table
entry is unsafe. This finds the instruction whose new control code does it, by
bisecting over instruction prefixes: variant j takes the candidate's control codes for
the first j instructions and the original's for the rest (instruction words and order
are the same: stall cuts only). The smallest failing j names instruction j-1, given the
changes before it; that change is then checked alone, reverted, and the search goes on
for the next one. Every variant runs through timing.check in a worker (a fault is a
'crashed' row) and is also judged by the verifier, so a row says whether the verifier
would have accepted it.

    python -m benchmarks.bisect_gpu --stallcut cfo_ta_est,warp_select_k100 --candidates DIR --out OUT
    python -m benchmarks.bisect_gpu --pair ORIGINAL.cubin:CANDIDATE.cubin:SPEC.json[:KERNEL] [--pair ...] --out OUT

DIR holds KERNEL_stallcut.cubin per kernel (from `benchmarks.studies batch_aa --prepare`, built
on the CPU: a stall cut of the larger kernels takes minutes there). A `--pair` names any
original and its stall-cut candidate (same instructions, same order) with the launch spec to
check them at (TOML, or JSON as a Triton build's manifest holds it); the kernel is the
cubin's first unless named.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from benchmarks.studies.runner import load_suite_spec
from benchmarks.studies.runner import suite_cubin as _suite_cubin
from reorder.suite.rows import write_rows


def _splice(original: tuple, candidate: tuple, upto: int, reverted: frozenset[int]) -> tuple:
    """The candidate's instructions before `upto` (except the reverted ones), the original's after."""
    return tuple(c if k < upto and k not in reverted else o for k, (o, c) in enumerate(zip(original, candidate)))


class _Checker:
    """Writes a variant, checks it on the GPU against the original, records a row."""

    def __init__(self, pool, kernel: str, work: Path, rows: list[dict], cubin: Path | None = None, spec=None) -> None:
        """`cubin` and `spec` default to the suite's kernel of that name."""
        from reorder.binary.cubin import read_cubin
        from reorder.sass.model import decode_kernel

        self.pool, self.kernel, self.work, self.rows = pool, kernel, work, rows
        work.mkdir(parents=True, exist_ok=True)
        self.path = cubin or _suite_cubin(kernel)
        self.cubin = read_cubin(self.path)
        self.code = decode_kernel(self.cubin, kernel)
        self.spec = spec or load_suite_spec(kernel)
        self.count = 0

    def bad(self, instructions: tuple, label: str) -> bool:
        """True when the variant's outputs differ from the original's, or it faults or hangs."""
        from legality.verify import verify_instructions
        from reorder.sass.writer import patch_kernel
        from timing.evaluate import check_job, describe_status
        from timing.worker import Job

        self.count += 1
        path = self.work / f"{self.kernel}_{self.count}.cubin"
        path.write_bytes(patch_kernel(self.cubin, self.code.kernel, instructions))
        res = self.pool.run(Job.of(check_job, str(self.path), str(path), self.spec, timeout_s=60))
        row = {
            "kernel": self.kernel,
            "variant": label,
            "verifier_violations": len(verify_instructions(instructions, self.code.arch)),
            **describe_status(res),
        }
        self.rows.append(row)
        print(
            json.dumps(
                {k: row.get(k) for k in ("kernel", "variant", "verifier_violations", "status", "check", "reason")}
            ),
            flush=True,
        )
        return not (row.get("status") == "ok" and row.get("check") == "identical")


def bisect_stall_cut(checker: _Checker, candidate: tuple, max_culprits: int) -> list[dict]:
    """Each culprit: the instruction whose cut control code, with the cuts before it, breaks."""
    original = checker.code.instructions
    if [i.offset for i in original] != [i.offset for i in candidate]:
        raise ValueError(f"{checker.kernel}: the candidate is not a stall cut of the original (order differs)")
    changed = [k for k, (o, c) in enumerate(zip(original, candidate)) if o.word != c.word]
    reverted: frozenset[int] = frozenset()
    culprits: list[dict] = []
    for _ in range(max_culprits):
        live = [k for k in changed if k not in reverted]
        if not checker.bad(_splice(original, candidate, len(original), reverted), f"cut, {len(reverted)} reverted"):
            break
        lo, hi = 0, len(live)  # invariant: prefix of `lo` changes is good, of `hi` changes is bad
        while hi - lo > 1:
            mid = (lo + hi) // 2
            upto = live[mid - 1] + 1
            if checker.bad(_splice(original, candidate, upto, reverted), f"prefix to {original[upto - 1].offset:#06x}"):
                hi = mid
            else:
                lo = mid
        k = live[hi - 1]
        o, c = original[k], candidate[k]
        alone = checker.bad(
            _splice(original, candidate, len(original), frozenset(set(changed) - {k})), f"{o.offset:#06x} alone"
        )
        culprits.append(
            {
                "kernel": checker.kernel,
                "offset": f"{o.offset:#06x}",
                "text": o.text,
                "ctrl": f"{o.ctrl.notation()} -> {c.ctrl.notation()}",
                "wrong_alone": alone,
                "next": [f"{n.offset:#06x} {n.ctrl.notation()} {n.text}" for n in original[k + 1 : k + 4]],
            }
        )
        print("CULPRIT", json.dumps(culprits[-1]), flush=True)
        reverted = reverted | {k}
    return culprits


def main() -> int:
    from reorder.binary.cubin import read_cubin
    from reorder.sass.model import decode_kernel
    from timing.spec import load_spec
    from timing.worker import WorkerPool

    parser = argparse.ArgumentParser()
    parser.add_argument("--stallcut", default="", help="comma list of suite kernels")
    parser.add_argument("--candidates", type=Path, help="folder of KERNEL_stallcut.cubin")
    parser.add_argument(
        "--pair", action="append", default=[], help="ORIGINAL.cubin:CANDIDATE.cubin:SPEC[:KERNEL] (spec: toml or json)"
    )
    parser.add_argument("--max-culprits", type=int, default=4)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    work = Path("/tmp/bisect")
    work.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    culprits: list[dict] = []
    with WorkerPool(devices=[0]) as pool:
        for pair in args.pair:
            t0 = time.time()
            parts = pair.split(":")
            original, cand, spec_path = (Path(x) for x in parts[:3])
            kernel = parts[3] if len(parts) > 3 else read_cubin(original).kernels[0].name
            checker = _Checker(pool, kernel, work / original.parent.name, rows, original, load_spec(spec_path))
            culprits += bisect_stall_cut(
                checker, decode_kernel(read_cubin(cand), kernel).instructions, args.max_culprits
            )
            print(f"{pair}: {checker.count} checks in {time.time() - t0:.0f}s", flush=True)
            write_rows(args.out / "bisect.csv", rows)
            (args.out / "culprits.json").write_text(json.dumps(culprits, indent=1))
        for kernel in filter(None, args.stallcut.split(",")):
            t0 = time.time()
            checker = _Checker(pool, kernel, work, rows)
            candidate = decode_kernel(read_cubin(args.candidates / f"{kernel}_stallcut.cubin"), kernel).instructions
            culprits += bisect_stall_cut(checker, candidate, args.max_culprits)
            print(f"{kernel}: {checker.count} checks in {time.time() - t0:.0f}s", flush=True)
            write_rows(args.out / "bisect.csv", rows)
            (args.out / "culprits.json").write_text(json.dumps(culprits, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
