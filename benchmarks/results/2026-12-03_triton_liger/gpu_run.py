"""Liger-Kernel's kernels through the one line on the GPU (run from the tree's root):

    LIGER_SRC=.gpu/liger/src python3 benchmarks/results/2026-12-03_triton_liger/gpu_run.py OUT [case,case]

1. Every config and its three twins compiled first, in parallel (CPU tensors of the same
   layout: the autotuners below then find them in Triton's and reorder's caches).
2. Per case: the plain autotuner and the one-line autotuner over the same configs (key and
   reset_to_zero / restore_value as declared, Triton's do_bench with 5 ms warm-up and 25 ms
   of repetitions); each run once on fresh inputs and its outputs checked against torch;
   rt.verify on the one-line autotuner (every twin its pruning keeps, 3 fresh input sets,
   byte for byte against its plain config); the two picks' cubins timed against each other
   (timing.paired: same rounds, random order, 0.8 s of rounds, 95% bootstrap CI; warm L2 by
   a CUDA graph of launches, cold L2 by writing 2x L2 before each launch).
"""
import json
import os
import sys
import tempfile
import time
import traceback
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def precompile(case: int, index: int) -> str:
    """One config and its twins compiled through the hook (a worker process)."""
    import cases
    import reorder.triton as rt
    from reorder.triton.compile import compile_call

    rt.install(say=None)
    c = cases.CASES[case]("cpu")
    name = c.name
    config = c.configs[index]
    t0 = time.monotonic()
    try:
        for cfg in rt.with_reorder([config], rt.Request(noalias=True)):
            if cfg.pre_hook:
                cfg.pre_hook({**dict(zip(c.kernel.arg_names, c.args)), **cfg.kwargs})
            compile_call(c.kernel, *c.args, **c.constexprs, **cfg.all_kwargs())
        return f"{name} {index}: {time.monotonic() - t0:.1f} s"
    except Exception as e:  # noqa: BLE001 - reported, the GPU phase compiles it again
        return f"{name} {index}: {type(e).__name__}: {e}"


def main() -> None:
    out_dir = sys.argv[1]
    only = set(sys.argv[2].split(",")) if len(sys.argv) > 2 else None
    os.makedirs(out_dir, exist_ok=True)
    import cases

    chosen = [k for k, m in enumerate(cases.CASES) if only is None or m.__name__ in only]
    makers = [cases.CASES[k] for k in chosen]
    units = [(k, i) for k in chosen for i in range(len(cases.CASES[k]("cpu").configs))]
    t0 = time.monotonic()
    with ProcessPoolExecutor(max_workers=14, mp_context=get_context("spawn")) as pool:
        for line in pool.map(precompile, *zip(*units)):
            print(f"[{time.monotonic() - t0:.0f} s] precompiled {line}", flush=True)

    import torch
    import triton

    import reorder.triton as rt
    from benchmarks.triton_one_line import do_bench, pair_job
    from reorder.triton.compile import compile_call
    from reorder.triton.launch import launch_spec
    from timing.cli_support import worker_device
    from timing.worker import Job, WorkerPool

    rt.install(say=None)
    scratch = tempfile.mkdtemp(prefix="liger-pairs-")  # the picks' cubins (not kept: the device returns few files)
    pool = WorkerPool(devices=[worker_device()])
    pool.__enter__()

    def paired(c, a_cfg, b_cfg, l2):
        calls = []
        for cfg in (a_cfg, b_cfg):
            if cfg.pre_hook:
                cfg.pre_hook({**dict(zip(c.kernel.arg_names, c.args)), **cfg.kwargs})
            calls.append(compile_call(c.kernel, *c.args, **c.constexprs, **cfg.all_kwargs()))
        grids = [c.grid(cfg.kwargs) if callable(c.grid) else c.grid for cfg in (a_cfg, b_cfg)]
        if calls[0].cubin == calls[1].cubin and grids[0] == grids[1]:
            return {"timing": "same build"}
        specs = [launch_spec(call.kernel, call.values, g, outputs=c.outputs) for call, g in zip(calls, grids)]
        paths = []
        for k, call in enumerate(calls):
            path = os.path.join(scratch, f"{c.name.replace(' ', '_')}-{'ab'[k]}.cubin")
            with open(path, "wb") as fh:
                fh.write(call.cubin)
            paths.append(path)
        job = Job.of(pair_job, paths[0], paths[1], specs[0], specs[1].block, specs[1].shared, l2, 0.8, timeout_s=120)
        r = pool.run(job)
        return r.value if r.status == "ok" else {"timing": f"{r.status}: {r.reason}"}

    rows = []
    for make in makers:
        row = {"case": make.__name__}
        print(f"[{time.monotonic() - t0:.0f} s] {make.__name__}", flush=True)
        started = time.monotonic()
        try:
            c = make("cuda")
            tuners = {
                "plain": triton.autotune(c.configs, do_bench=do_bench, **c.extras)(c.kernel),
                "one_line": triton.autotune(
                    rt.with_reorder(c.configs, rt.Request(noalias=True)), do_bench=do_bench, **c.extras
                )(c.kernel),
            }
            for label, tuner in tuners.items():
                t0 = time.monotonic()
                c.reset()
                tuner[c.grid](*c.args, **c.constexprs)
                torch.cuda.synchronize()
                row[f"{label}_autotune_s"] = round(time.monotonic() - t0, 1)
                c.reset()
                tuner[c.grid](*c.args, **c.constexprs)
                torch.cuda.synchronize()
                err, tol = c.check()
                row[f"{label}_pick"] = str(tuner.best_config)
                row[f"{label}_error"] = err
                row[f"{label}_ok"] = err <= tol
            one = tuners["one_line"]
            c.reset()
            vgrid = c.grid(one.best_config.kwargs) if callable(c.grid) else c.grid
            v = rt.verify(one, *c.args, grid=vgrid, outputs=c.outputs, **c.constexprs)
            row["verify_ok"] = v.ok
            row["verify"] = v.table()
            for l2 in ("warm", "cold"):
                c.reset()
                row[f"paired_{l2}"] = paired(c, tuners["plain"].best_config, one.best_config, l2)
        except Exception as e:  # noqa: BLE001 - a case that fails is a row
            row["error"] = f"{type(e).__name__}: {e}"
            row["traceback"] = traceback.format_exc(limit=8)
        row["seconds"] = round(time.monotonic() - started, 1)
        print(json.dumps({k: v for k, v in row.items() if k not in ("verify", "traceback")}), flush=True)
        if "verify" in row:
            print(row["verify"], flush=True)
        rows.append(row)
        with open(os.path.join(out_dir, "rows.json"), "w") as fh:
            json.dump(rows, fh, indent=1)
    pool.__exit__(None, None, None)


if __name__ == "__main__":
    main()
