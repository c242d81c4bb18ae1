"""How fast the CPU builds candidates, by worker count: where the CPU, not the GPU, bounds a search.

    python -m benchmarks.build_rate [--kernel rmsnorm_triton_style] [--jobs 1,2,4,8,16] [--count 32]

Each level builds the same `count` random choices of the kernel's move space (seeded) with
that many joblib workers and a fresh disk cache (REORDER_CACHE), in its own process; prints
one JSON line per level: builds per second, wall seconds, how many built.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def _choices(kernel: str, count: int, seed: int = 3):
    import random

    from benchmarks.gpu_session import _suite_cubin
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

    from benchmarks.gpu_session import _suite_cubin
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", default="rmsnorm_triton_style")
    parser.add_argument("--jobs", default="1,2,4,8,16")
    parser.add_argument("--count", type=int, default=32)
    parser.add_argument("--level", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
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
