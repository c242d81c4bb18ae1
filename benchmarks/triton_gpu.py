"""reorder against Triton's own tuning, on the GPU, for the kernels of benchmarks.triton_kernels.

For each kernel family (kernel x dtype) and each of its shapes (a cell):

1. Triton's best: every config of the family (num_warps x num_stages, or x the `tl.range`
   stages of a load-only loop) launched by Triton and timed with `triton.testing.do_bench`
   (the autotuner's own timer: L2 flushed before each launch, median); the best config's
   outputs are compared with a torch reference (math check, tolerance per family).
2. reorder's best from Triton's best: the best config at the family's tune shape is compiled
   (reorder.triton.compile; `same_cubin_as_jit` says whether that is the JIT's own cubin),
   its launch built from the metadata and live tensors (reorder.triton.launch), and
   `reorder optimize` runs on the GPU with a small budget (every candidate byte-checked and
   paired-timed against the config's own cubin).
3. Each cell: the winner against its start config's cubin, byte-checked on fresh inputs at
   that shape and timed with paired CUDA-graph timing (timing.evaluate.check_and_time_job,
   ratio with 95% CI, warm or cold L2). Builds with different num_warps cannot share one
   launch, so when Triton's best config at a shape is another one than the start config,
   the ratio is against the start config and `start_is_best` is False. The winner is also
   served to Triton by the stages hook (`ptx_options="--reorder=tuned:KEY"`,
   `hook_served` checks the bytes) and timed by do_bench beside Triton's best:
   `vs_triton_best` (same timer as step 1, any config).

Rows are written as each cell is done (OUT/triton_cells.csv, with GPU, date, commit, Triton
version, L2 state); a failure in a cell or a family is a row with its reason and the run goes
on; families not begun before the deadline are rows marked skipped. OUT/summary.md holds
the per-cell table and the medians.

    python -m benchmarks.triton_gpu --out OUT [--families a,b] [--budget 4] [--deadline 540]
        [--l2 warm[,cold]] [--jobs 14] [--alias] [--dry-run]

`--dry-run` walks the same steps on a machine without a GPU (stand-in tensors, compiles for
sm_90, made-up do_bench times, the search on the static model, no byte check or timing):
tests/test_triton_gpu_script.py runs it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.rows import write_rows

OPTIMIZE_SECONDS = 20.0  # the search phase's bound per family (finalists and re-check come on top)
PAIRED_BUDGET_S = 2.0  # seconds of paired rounds per cell
CELL_RESERVE_S = 12.0  # what one cell's check + timing needs; below it a cell is skipped
FAMILY_RESERVE_S = 100.0  # what one family needs (sweep, search, cells); below it the family is skipped
ORDER = ("rmsnorm_row_fp32", "softmax_fp32", "rmsnorm_looped_fp16", "layernorm_fp16", "matmul_leaky_fp16",
         "rmsnorm_row_fp16", "softmax_fp16", "rmsnorm_looped_fp32", "layernorm_fp32")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"


# ---------------------------------------------------------------- where kernels run


class Live:
    """The GPU: torch tensors, Triton's launches, do_bench, checks and paired timing in a worker."""

    arch = None  # the current device's
    optimize_device = "gpu"

    def __init__(self) -> None:
        from timing.cli_support import worker_device
        from timing.worker import WorkerPool

        self.pool = WorkerPool(devices=[worker_device()])

    def close(self) -> None:
        self.pool.close()

    def args(self, case) -> tuple[tuple, dict]:
        from benchmarks.triton_kernels import torch_args

        return torch_args(case)

    def launch(self, case, args, config: dict):
        """Triton's own launch; returns the CompiledKernel the JIT used."""
        return case.kernel[case.grid](*args, **case.constexprs, **config)

    def time_ms(self, case, args, config: dict) -> float:
        """do_bench's median (ms): the autotuner's timer, L2 flushed before every launch."""
        import triton

        self.launch(case, args, config)
        return float(triton.testing.do_bench(lambda: self.launch(case, args, config), warmup=10, rep=40,
                                             quantiles=(0.5, 0.2, 0.8))[0])

    def math(self, case, config: dict, args, named: dict, tol: float) -> tuple[bool, float]:
        """(within tolerance, max abs error) of the config's outputs against the torch reference."""
        import torch

        self.launch(case, args, config)
        torch.cuda.synchronize()
        worst, ok = 0.0, True
        for name, want in case.reference(named).items():
            got = named[name].float()
            worst = max(worst, (got - want).abs().max().item())
            ok &= bool(torch.allclose(got, want, rtol=tol, atol=tol))
        return ok, worst

    def paired(self, original: Path, winner: Path, spec, l2: str) -> dict:
        """Byte check at the spec's shape, then paired timing (timing.evaluate, in the worker)."""
        from timing.evaluate import check_and_time_job, describe_status
        from timing.worker import Job

        job = Job.of(check_and_time_job, str(original), str(winner), spec, l2=l2, budget_s=PAIRED_BUDGET_S,
                     target_ci_pct=0.5, timeout_s=180)
        return describe_status(self.pool.run(job))

    def roof(self) -> dict:
        """Copy bandwidth (bytes/s, read + write) and cuBLAS' fp16 GEMM rate (FLOP/s) here."""
        import torch
        import triton

        src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        copy_ms = triton.testing.do_bench(lambda: dst.copy_(src), warmup=10, rep=40, return_mode="median")
        a = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
        gemm_ms = triton.testing.do_bench(lambda: a @ a, warmup=10, rep=40, return_mode="median")
        return {"bytes_per_s": 2 * src.numel() / (copy_ms * 1e-3), "flops": 2 * 8192**3 / (gemm_ms * 1e-3)}

    def gpu_name(self) -> str:
        import torch

        return torch.cuda.get_device_name()


class Dry(Live):
    """The same steps without a GPU: stand-in tensors, sm_90 compiles, made-up times."""

    arch = 90
    optimize_device = "cpu"

    def __init__(self) -> None:
        self.pool = None

    def close(self) -> None:
        pass

    def args(self, case) -> tuple[tuple, dict]:
        from benchmarks.triton_kernels import stand_in_args

        return stand_in_args(case), {}

    def launch(self, case, args, config: dict):
        from reorder.triton.compile import compile_call

        return compile_call(case.kernel, *args, arch=self.arch, **case.constexprs, **config).kernel

    def time_ms(self, case, args, config: dict) -> float:
        return 1.0 + len(self.launch(case, args, config).asm["cubin"]) % 97 / 1000  # not a measurement

    def math(self, case, config, args, named, tol) -> tuple[bool, float]:
        return True, float("nan")

    def paired(self, original: Path, winner: Path, spec, l2: str) -> dict:
        return {"status": "dry", "check": "not run (dry run)"}

    def roof(self) -> dict:
        return {"bytes_per_s": float("nan"), "flops": float("nan")}

    def gpu_name(self) -> str:
        return "none (dry run)"


# ---------------------------------------------------------------- the session


@dataclass
class Run:
    """Options, the deadline, where kernels run, shared stamps, and every row so far."""

    out: Path
    budget: int
    deadline: float
    l2: tuple[str, ...]
    jobs: int
    noalias: bool
    device: Any
    work: Path
    stamps: dict = field(default_factory=dict)
    roof: dict = field(default_factory=dict)
    rows: list[dict] = field(default_factory=list)

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def add(self, row: dict) -> None:
        self.rows.append({**self.stamps, **row})
        write_rows(self.out / "triton_cells.csv", self.rows)


@dataclass
class Search:
    """reorder's result for one family's start config."""

    config: dict
    original: Path
    winner: Path
    name: str
    key: str
    moves: str
    score: str
    seconds: float
    same_as_jit: bool

    @property
    def changed(self) -> bool:
        return self.winner.read_bytes() != self.original.read_bytes()


def sweep(run: Run, case, configs, tol: float) -> dict:
    """Every config launched and timed at this case's shape; the best one's outputs checked."""
    args, named = run.device.args(case)
    times, failed = {}, {}
    for index, config in enumerate(configs):
        try:
            times[index] = run.device.time_ms(case, args, config)
        except Exception as exc:  # noqa: BLE001 - a config Triton cannot build or launch is a result
            failed[index] = _first_line(exc)
    if not times:
        raise RuntimeError(f"every config failed: {failed}")
    best = min(times, key=times.get)
    return {"times": times, "failed": failed, "best": best, "args": args,
            "math": run.device.math(case, configs[best], args, named, tol)}


def launch_file(run: Run, case, config: dict, args, path: Path):
    """Compile `config` for these arguments and write its launch spec; the Call."""
    from reorder.triton.compile import compile_call
    from reorder.triton.launch import launch_spec, spec_toml

    call = compile_call(case.kernel, *args, arch=run.device.arch, **case.constexprs, **config)
    path.write_text(spec_toml(launch_spec(call.kernel, call.values, case.grid, outputs=case.outputs)))
    return call


def search(run: Run, family, case, config: dict, args) -> Search:
    """Compile the start config, build its launch, run `reorder optimize` on it, store the winner."""
    from reorder.optimize import OptimizeArgs, optimize
    from reorder.triton.rewrite import store_tuned

    started = time.monotonic()
    folder = run.work / family.name
    folder.mkdir(parents=True, exist_ok=True)
    original, winner, toml = folder / "original.cubin", folder / "reorder.cubin", folder / "launch.toml"
    call = launch_file(run, case, config, args, toml)
    original.write_bytes(call.cubin)
    same_as_jit = run.device.launch(case, args, config).asm["cubin"] == call.cubin
    report = optimize(OptimizeArgs(cubin=original, output=winner, kernel=call.name, launch=toml, budget=run.budget,
                                   seconds=max(10.0, min(OPTIMIZE_SECONDS, run.left() - 60.0)), jobs=run.jobs,
                                   storage=None, l2="warm", device=run.device.optimize_device, noalias=run.noalias,
                                   seed=0, candidate_budget_s=1.0, finalists=1, final_budget_s=2.0,
                                   contributions=False, recheck_sets=3))
    key = store_tuned(call.cubin, winner.read_bytes(), {"family": family.name, "config": config,
                                                         "score": report.result.line() if report.result else "none",
                                                         "check": report.check})
    return Search(config, original, winner, call.name, key, report.best_moves,
                  report.result.line() if report.result else "none", time.monotonic() - started, same_as_jit)


def paired(run: Run, case, found: Search, args, l2: str) -> dict:
    """The winner against its start config at this shape: byte check, then paired timing."""
    from timing.cli_support import validated_spec

    path = found.original.parent / f"launch_{_shape(case.shape)}.toml"
    launch_file(run, case, found.config, args, path)
    spec = validated_spec(path, [found.original, found.winner], found.name)
    if not found.changed:
        return {"check": "same binary", "ratio": 1.0, "ci_low": 1.0, "ci_high": 1.0, "speedup": 1.0,
                "note": "reorder kept the start config's cubin (nothing proven faster)"}
    row = run.device.paired(found.original, found.winner, spec, l2)
    if isinstance(row.get("ratio"), float) and row["ratio"] > 0:
        row["speedup"] = 1.0 / row["ratio"]
    return row


def through_hook(run: Run, case, found: Search, args) -> dict:
    """The winner served to Triton by the stages hook, and timed like Triton's configs."""
    from reorder.triton.request import Request, with_marker

    marked = {**found.config,
              "ptx_options": with_marker(found.config.get("ptx_options"), Request("tuned", key=found.key))}
    served = run.device.launch(case, args, marked).asm["cubin"] == found.winner.read_bytes()
    return {"hook_served": served, "reorder_hook_us": 1000 * run.device.time_ms(case, args, marked)}


# ---------------------------------------------------------------- one family


def family_rows(run: Run, family) -> None:
    """Sweep every shape, search once from the tune shape's best config, then every cell."""
    sweeps = {}
    for shape in family.shapes:
        try:
            sweeps[shape] = sweep(run, family.case(shape), family.configs, family.tol)
        except Exception as exc:  # noqa: BLE001
            run.add({"family": family.name, "shape": _shape(shape), "status": "error",
                     "reason": f"Triton sweep: {_first_line(exc)}"})
    if family.tune_shape not in sweeps:
        return
    tuned = sweeps[family.tune_shape]
    try:
        found = search(run, family, family.case(family.tune_shape), family.configs[tuned["best"]], tuned["args"])
    except Exception as exc:  # noqa: BLE001
        traceback.print_exc()
        for shape in sweeps:
            run.add({"family": family.name, "shape": _shape(shape), "status": "error",
                     "reason": f"reorder search: {_first_line(exc)}"})
        return
    for shape, swept in sweeps.items():
        for l2 in run.l2:
            run.add(cell_row(run, family, family.case(shape), swept, found, l2))


def cell_row(run: Run, family, case, swept: dict, found: Search, l2: str) -> dict:
    best = family.configs[swept["best"]]
    times_us = {i: 1000 * ms for i, ms in swept["times"].items()}
    row = {"family": family.name, "kernel": found.name, "dtype": family.dtype, "shape": _shape(case.shape), "l2": l2,
           "configs_tried": len(family.configs), "configs_failed": len(swept["failed"]),
           "triton_best_config": _cfg(best), "triton_best_us": times_us[swept["best"]],
           "triton_worst_us": max(times_us.values()), "start_config": _cfg(found.config),
           "start_is_best": best == found.config, "math_ok": swept["math"][0], "math_max_err": swept["math"][1],
           "same_cubin_as_jit": found.same_as_jit, "reorder_moves": found.moves, "reorder_changed": found.changed,
           "optimize_s": round(found.seconds, 1), "optimize_score": found.score, "noalias": run.noalias}
    if run.left() < CELL_RESERVE_S:
        return {**row, "status": "skipped", "reason": "deadline"}
    try:
        row.update(paired(run, case, found, swept["args"], l2))
        row.update(through_hook(run, case, found, swept["args"]))
        row["vs_triton_best"] = row["reorder_hook_us"] / row["triton_best_us"]
        row.update(roofline(case, row, run.roof))
        row["status"] = row.get("status", "ok")
    except Exception as exc:  # noqa: BLE001 - one cell's failure is recorded, the run goes on
        row.update({"status": "error", "reason": _first_line(exc)})
    return row


def roofline(case, row: dict, roof: dict) -> dict:
    """Fraction of the measured copy bandwidth (or of cuBLAS' fp16 rate, for a GEMM)."""
    out = {}
    for who, us in (("triton", row["triton_best_us"]), ("reorder", row.get("reorder_hook_us"))):
        if us:
            rate = (case.flops / roof["flops"]) if case.flops else (case.bytes_moved / roof["bytes_per_s"])
            out[f"roofline_{who}"] = rate / (us * 1e-6)
    return out


def _shape(shape) -> str:
    return "x".join(map(str, shape))


def _cfg(config: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(config.items()))


# ---------------------------------------------------------------- precompile, stamps, summary


def _compile_one(name: str, index: int) -> str:
    """Compile one config of a family for sm_90 from stand-in tensors (in a spawned process)."""
    from benchmarks.triton_kernels import family, stand_in_args
    from reorder.triton.compile import compile_call

    fam = family(name)
    case = fam.case(fam.tune_shape)
    try:
        compile_call(case.kernel, *stand_in_args(case), arch=90, **case.constexprs, **fam.configs[index])
        return ""
    except Exception as exc:  # noqa: BLE001 - the sweep meets it again and records it
        return f"{name} config {index}: {_first_line(exc)}"


def precompile(names: list[str], jobs: int) -> None:
    """Fill Triton's cache with every config of every family from parallel processes: the JIT
    then finds each cubin there (stand-in tensors specialize as torch's do) instead of
    compiling ~70 configs one after another. On another GPU than sm_90 nothing matches and the
    sweep compiles as usual."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    from benchmarks.triton_kernels import family

    started = time.monotonic()
    work = [(n, i) for n in names for i in range(len(family(n).configs))]
    with ProcessPoolExecutor(max_workers=max(1, min(jobs, len(work))), mp_context=get_context("spawn")) as pool:
        problems = [p for p in pool.map(_compile_one, *zip(*work)) if p]
    print(f"precompiled {len(work)} configs in {time.monotonic() - started:.0f} s; {problems or 'no failures'}",
          file=sys.stderr, flush=True)


def stamps(device) -> dict:
    import triton

    from reorder import provenance

    return {"gpu": device.gpu_name(), "date": time.strftime("%Y-%m-%d %H:%M:%S"), "commit": provenance.commit(),
            "triton": triton.__version__}


HEADER = ("| family | shape | L2 | Triton best us (do_bench) | config | check | reorder / start (paired, 95% CI) "
          "| speed-up | reorder via hook / Triton best (do_bench) | status |")


def summary(run: Run) -> None:
    """OUT/summary.md: one line per cell, and the medians over the cells done."""
    s = run.stamps
    lines = [(f"# reorder vs Triton's best config ({s.get('gpu')}, {s.get('date')}, commit {s.get('commit')}, "
             f"Triton {s.get('triton')})"), "",
             (f"copy bandwidth {run.roof.get('bytes_per_s', 0) / 1e9:.0f} GB/s, cuBLAS fp16 "
             f"{run.roof.get('flops', 0) / 1e12:.0f} TFLOP/s; {run.budget} trials per family; noalias {run.noalias}"),
             "", HEADER, "|---" * HEADER.count(" | ") + "|---|"]
    lines += [_summary_line(r) for r in run.rows] + ["", _totals([r for r in run.rows if r.get("status") == "ok"])]
    (run.out / "summary.md").write_text("\n".join(lines) + "\n")


def _summary_line(r: dict) -> str:
    nan = float("nan")
    ci = f"{r['ratio']:.4f} [{r['ci_low']:.4f}, {r['ci_high']:.4f}]" if isinstance(r.get("ratio"), float) else "-"
    return (f"| {r.get('family')} | {r.get('shape', '')} | {r.get('l2', '')} | {r.get('triton_best_us', nan):.2f} | "
            f"{r.get('triton_best_config', '')} | {r.get('check', '')} | {ci} | {r.get('speedup', nan):.3f} | "
            f"{r.get('vs_triton_best', nan):.3f} | {r.get('status')} {r.get('reason', '')} |")


def _totals(done: list[dict]) -> str:
    speed = [r["speedup"] for r in done if isinstance(r.get("speedup"), float)]
    vs_best = [1 / r["vs_triton_best"] for r in done if r.get("vs_triton_best")]
    if not speed:
        return "no cell measured"
    changed = sum(r.get("reorder_changed") is True for r in done)
    not_slower = sum(r["ci_low"] <= 1.0 for r in done if isinstance(r.get("ci_low"), float))
    return (f"cells done: {len(done)} ({changed} with a binary reorder changed, timed; the others kept the start "
            f"config's cubin, counted as 1.000); median speed-up (paired, vs the start config) "
            f"{statistics.median(speed):.3f}x; median speed-up vs Triton's best config (do_bench) "
            f"{statistics.median(vs_best):.3f}x; cells not slower (CI low <= 1): {not_slower}")


def parse(argv) -> argparse.Namespace:
    from benchmarks.triton_kernels import FAMILIES

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--families", default=",".join(ORDER + tuple(f.name for f in FAMILIES if f.name not in ORDER)))
    p.add_argument("--budget", type=int, default=4, help="optimize trials per family")
    p.add_argument("--deadline", type=float, default=540.0, help="seconds; families and cells not begun by then "
                                                                 "are skipped")
    p.add_argument("--l2", default="warm", help="warm, cold or warm,cold (paired timing)")
    p.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) - 2))
    p.add_argument("--alias", action="store_true", help="do not assume that pointer arguments never alias")
    p.add_argument("--dry-run", action="store_true", help="walk every step without a GPU (nothing is measured)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse(argv)
    started = time.monotonic()
    args.out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="triton-cache-"))  # nothing stale is served
    from benchmarks.triton_kernels import family
    from reorder.triton import install

    names = args.families.split(",")
    device = Dry() if args.dry_run else Live()
    run = Run(args.out, args.budget, started + args.deadline, tuple(args.l2.split(",")), args.jobs, not args.alias,
              device, Path(tempfile.mkdtemp(prefix="triton-gpu-")))
    try:
        run.stamps = stamps(device)
        install(say=lambda line: print(line, file=sys.stderr, flush=True))
        precompile([n for n in names if n in {f.name for f in _families()}], args.jobs)
        run.roof = device.roof()
        for name in names:
            if run.left() < FAMILY_RESERVE_S:
                run.add({"family": name, "status": "skipped", "reason": "deadline"})
                continue
            print(f"[{time.monotonic() - started:.0f} s] {name}", file=sys.stderr, flush=True)
            try:
                family_rows(run, family(name))
            except Exception as exc:  # noqa: BLE001 - a family's failure is a row; the next family runs
                traceback.print_exc()
                run.add({"family": name, "status": "error", "reason": _first_line(exc)})
            summary(run)
    finally:
        device.close()
    summary(run)
    print(f"[{time.monotonic() - started:.0f} s] wrote {args.out / 'triton_cells.csv'} and {args.out / 'summary.md'}",
          file=sys.stderr)
    return 0


def _families():
    from benchmarks.triton_kernels import FAMILIES

    return FAMILIES


if __name__ == "__main__":
    raise SystemExit(main())
