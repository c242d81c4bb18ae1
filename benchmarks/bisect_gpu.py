"""Locate, on the GPU, the single change that makes a verified candidate wrong.

find_index: the stall cut of each block alone, then, inside every block whose cut gives
wrong bytes, each instruction's lowered stall alone. normalize_weights: each swap alone.
Every variant runs through timing.check in a worker (a fault is a 'crashed' row).

    python -m benchmarks.bisect_gpu --out OUT
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

from benchmarks.gpu_session import _suite_cubin, load_suite_spec


def _variants_find_index(folder: Path):
    from reorder.cubin import read_cubin
    from reorder.moves import StallCut
    from reorder.sass import decode_kernel
    from reorder.writer import patch_kernel

    cubin = read_cubin(_suite_cubin("find_index"))
    code = decode_kernel(cubin, "find_index")
    for move in StallCut.instances(code):
        cut = move.apply(code, code.instructions).instructions
        path = folder / f"fi_block{move.block_starts[0]}.cubin"
        path.write_bytes(patch_kernel(cubin, code.kernel, cut))
        changed = [i for i, (a, b) in enumerate(zip(code.instructions, cut)) if a.word != b.word]
        singles = []
        for i in changed:
            one = list(code.instructions)
            one[i] = cut[i]
            p = folder / f"fi_block{move.block_starts[0]}_i{code.instructions[i].offset:04x}.cubin"
            p.write_bytes(patch_kernel(cubin, code.kernel, one))
            singles.append((p, f"{code.instructions[i].offset:#06x} {code.instructions[i].ctrl.notation()} -> "
                                f"{cut[i].ctrl.notation()} {code.instructions[i].text}"))
        yield path, f"block {move.block_starts[0]}", singles


def _variants_swaps(folder: Path, kernel: str):
    from reorder.cubin import read_cubin
    from reorder.moves import Swap
    from reorder.sass import decode_kernel

    cubin = read_cubin(_suite_cubin(kernel))
    code = decode_kernel(cubin, kernel)
    for k, move in enumerate(Swap.instances(code)):
        try:
            cand = move.apply(code, code.instructions)
        except Exception as exc:  # record, keep going
            yield None, f"swap#{k} @{move.index}: not built ({exc})"
            continue
        path = folder / f"{kernel}_swap{k}.cubin"
        path.write_bytes(cand.cubin_bytes())
        a, b = code.instructions[move.index], code.instructions[move.index + 1]
        yield path, f"swap#{k} @{move.index}: {a.offset:#06x} {a.text} <-> {b.offset:#06x} {b.text}"


def main() -> int:
    from timing.evaluate import check_job, describe_status
    from timing.worker import Job, WorkerPool

    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    work = Path("/tmp/bisect")
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    with WorkerPool(devices=[0]) as pool:
        def check(kernel, path, label, spec):
            row = {"kernel": kernel, "variant": label,
                   **describe_status(pool.run(Job.of(check_job, str(_suite_cubin(kernel)), str(path), spec,
                                                     timeout_s=60)))}
            rows.append(row)
            return row

        spec = load_suite_spec("find_index")
        for path, label, singles in _variants_find_index(work):
            row = check("find_index", path, label, spec)
            print(json.dumps({k: row.get(k) for k in ("variant", "status", "check")}), flush=True)
            if row.get("check") != "identical":
                for p, text in singles:
                    r = check("find_index", p, text, spec)
                    print("   ", json.dumps({k: r.get(k) for k in ("variant", "status", "check")}), flush=True)
        spec = load_suite_spec("normalize_weights")
        for path, label in _variants_swaps(work, "normalize_weights"):
            if path is None:
                rows.append({"kernel": "normalize_weights", "variant": label, "status": "not built"})
                continue
            r = check("normalize_weights", path, label, spec)
            if r.get("check") != "identical":
                print(json.dumps({k: r.get(k) for k in ("variant", "status", "reason", "check")}), flush=True)
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    with open(args.out / "bisect.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=keys)
        writer.writeheader()
        writer.writerows(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
