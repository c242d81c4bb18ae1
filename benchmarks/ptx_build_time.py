"""How long one PTX candidate takes to build on one CPU core: moves, the producer's ptxas, verify.

    python -m benchmarks.ptx_build_time [--repeats 5] [--out benchmarks/results]

The target: <= 2 s for a 500-instruction kernel. Measured on cfo_ta_est (599 PTX
instructions, the suite's kernel nearest 500) and rmsnorm_triton_style (314), each with its
first search seed (reorder.build.ptxlevel.seed_params: the 'barrier' plan where it moves
something), as the search's build worker makes it (reorder.build.ptxlevel.build): the PTX
parsed, the picks rebuilt over the registered kinds, the moved PTX written and compiled by
ptxas -O3 (cold: a fresh cache every repeat, so ptxas and nvdisasm really run), the cubin
decoded and verified. The process is pinned to one core (children inherit it). Stages are
timed apart (wall clock), with the CPU seconds of the whole build (this process and its
ptxas and nvdisasm children): on a shared machine the wall clock carries other people's
load, the CPU seconds do not. The median over --repeats is reported, with the load average.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.kernels.build import KERNEL_DIR

KERNELS = (("cfo_ta_est", "cfo_ta_est.ptx", False), ("rmsnorm_triton_style", "rmsnorm.ptx", True))


def _cpu() -> float:
    """CPU seconds of this process and its finished children (ptxas, nvdisasm)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def one_build(ptx: Path, kernel: str, noalias: bool) -> dict[str, float]:
    """Seconds per stage of one cold build (wall), and the CPU seconds of the whole build."""
    from reorder.build import ptxlevel
    from reorder.build.ptxcandidate import verdict
    from reorder.ptx.model.effects import _effect_of
    from reorder.ptx.toolchain.compile import compile_ptx
    from reorder.sass.model import _disassemble_cached

    os.environ["REORDER_CACHE"] = tempfile.mkdtemp(prefix="reorder-build-time-")
    ptxlevel._module.cache_clear()
    level = ptxlevel.PtxLevel(str(ptx), kernel, noalias, "nvcc")
    seeds = ptxlevel.seed_params(level)  # not timed: the search has its picks before it builds
    picks = ptxlevel.picks_of(seeds[0], level)
    ptxlevel._module.cache_clear()
    _effect_of.cache_clear()
    _disassemble_cached.cache_clear()  # nvdisasm really runs on every repeat
    c0, t0 = _cpu(), time.perf_counter()
    module, applied = ptxlevel.moved_ptx(level, picks)
    t1 = time.perf_counter()
    out = Path(os.environ["REORDER_CACHE"]) / ptx.name
    out.write_text(module.text)
    made = compile_ptx(out)
    t2 = time.perf_counter()
    checked = verdict(made.cubin, kernel)
    t3, c3 = time.perf_counter(), _cpu()
    assert applied and checked.ok, (applied, checked.violations[:1])
    return {
        "moves_s": t1 - t0,
        "ptxas_s": t2 - t1,
        "verify_s": t3 - t2,
        "total_s": t3 - t0,
        "cpu_s": c3 - c0,
        "moves": len(applied),
    }


def measure(repeats: int) -> list[dict]:
    from reorder.build.ptxcandidate import read_ptx

    rows = []
    for kernel, name, noalias in KERNELS:
        ptx = KERNEL_DIR / "ptx_candidates" / "source" / name
        size = sum(s.kind == "instruction" for s in read_ptx(ptx).function(kernel).body)
        runs = [one_build(ptx, kernel, noalias) for _ in range(repeats)]
        row = {
            "kernel": kernel,
            "ptx_instructions": size,
            "moves": runs[0]["moves"],
            "repeats": repeats,
            "load_avg_1m": round(os.getloadavg()[0], 2),
        }
        for stage in ("moves_s", "ptxas_s", "verify_s", "total_s", "cpu_s"):
            row[stage] = round(statistics.median(r[stage] for r in runs), 3)
        row["total_min_s"] = round(min(r["total_s"] for r in runs), 3)
        rows.append(row)
        print(row, flush=True)
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = p.parse_args(argv)
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    rows = measure(args.repeats)
    from reorder.suite.rows import write_rows

    stamp = time.strftime("%Y-%m-%d")
    write_rows(args.out / f"{stamp}_ptx_build_time.csv", rows)
    print(f"wrote {args.out / f'{stamp}_ptx_build_time.csv'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
