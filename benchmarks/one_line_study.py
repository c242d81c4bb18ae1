"""A library's Triton kernels through the one line, as a study runs them: the cases, the CPU
check and the GPU run shared by the studies of kernels written elsewhere (Liger-Kernel,
Triton's own tutorials). A study keeps only its `cases.py` (a `CASES` tuple of case makers,
each `make(dev)` -> Case) and two short scripts calling `cpu_check` and `gpu_run` with it.

- `cpu_check(cases, argv)`, on a host with no GPU: each case's first CONFIGS configs and
  their twins compiled for sm_90 through the hook on CPU tensors, then rt.verify's static
  half; what each twin became.
- `gpu_run(cases, argv)`, on the GPU host, `OUT [case,case]`:
  1. every config and its three twins compiled first, in parallel (CPU tensors of the same
     layout: the autotuners below then find them in Triton's and reorder's caches);
  2. per case, the plain autotuner and the one-line autotuner over the same configs (key,
     reset_to_zero, restore_value, prune_configs_by as the case declares them; Triton's
     do_bench, 5 ms of warm-up, 25 ms of repetitions); each run once on fresh inputs and its
     outputs checked against torch; rt.verify on the one-line autotuner (every twin its
     pruning keeps, 3 fresh input sets, byte for byte against its plain config); the two
     picks' cubins timed against each other (timing.paired: same rounds, random order, 0.8 s
     of rounds, 95% bootstrap CI; warm L2 by a CUDA graph of launches, cold L2 by writing
     2x L2 before each launch). Rows go to OUT/rows.json as they finish.
     `PLAIN_TWICE=1` makes the second autotuner a plain one too (an A/A run: how often two
     runs of Triton's own ranking pick builds apart beyond the CI).

A config's pre_hook gets what the autotuner gives it: the arguments by name, the launch
keywords and the config's keywords (Triton's attention tutorial reads HEAD_DIM from them).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from types import ModuleType
from typing import Any


@dataclass
class Case:
    """One kernel at one shape: the bare JITFunction, its arguments, the configs, the grid, the
    autotune extras (key, reset_to_zero, restore_value, prune_configs_by), the outputs rt.verify
    poisons, a check of the outputs against torch ((worst error, tolerance)), a reset run before
    each launch, and the keywords the launch passes by name."""

    name: str
    kernel: Any
    args: tuple
    configs: list
    grid: Any
    extras: dict
    outputs: list
    check: Callable[[], tuple[float, float]]
    reset: Callable[[], None] = lambda: None
    constexprs: dict = field(default_factory=dict)


def rel_error(got: Any, want: Any) -> float:
    """The worst error relative to the largest expected magnitude."""
    return float((got.float() - want).abs().max() / want.abs().max())


def load_cases(path: str) -> ModuleType:
    """A study's cases module, by its file (the study's folder first on sys.path: its own imports)."""
    if "cases" in sys.modules and getattr(sys.modules["cases"], "__file__", None) == path:
        return sys.modules["cases"]
    sys.path.insert(0, os.path.dirname(path))
    spec = importlib.util.spec_from_file_location("cases", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["cases"] = module
    spec.loader.exec_module(module)
    return module


def _pre_hook(c: Case, cfg: Any) -> None:
    if cfg.pre_hook:
        cfg.pre_hook({**dict(zip(c.kernel.arg_names, c.args)), **c.constexprs, **cfg.kwargs})


def _grid(c: Case, cfg: Any) -> Any:
    return c.grid(cfg.kwargs) if callable(c.grid) else c.grid


def cpu_check(cases_path: str, argv: list[str]) -> None:
    import triton

    import reorder.triton as rt
    from reorder.triton.compile import compile_call

    cases = load_cases(cases_path)
    rt.install(say=None)
    only = set(argv[0].split(",")) if argv else None
    for make in cases.CASES:
        if only and make.__name__ not in only:
            continue
        row: dict[str, Any] = {"case": make.__name__}
        t0 = time.process_time()
        try:
            c = make("cpu")
            one = rt.with_reorder(c.configs[: int(os.environ.get("CONFIGS", "1"))], rt.Request(noalias=True))
            builds = []
            for cfg in one:
                _pre_hook(c, cfg)
                call = compile_call(c.kernel, *c.args, arch=90, **c.constexprs, **cfg.all_kwargs())
                builds.append((getattr(call.kernel.metadata, "reorder", "") or "plain", call.cubin))
            row["builds"] = [(n, len(b), b == builds[0][1]) for n, b in builds]
            tuner = triton.autotune(one, **c.extras)(c.kernel)
            v = rt.verify(tuner, *c.args, grid=_grid(c, one[0]), arch=90, outputs=c.outputs, **c.constexprs)
            row["verify"] = v.table()
        except Exception as e:  # noqa: BLE001 - a case that fails is a row
            row["error"] = f"{type(e).__name__}: {e}"
            row["traceback"] = traceback.format_exc(limit=8)
        row["cpu_s"] = round(time.process_time() - t0, 1)
        print(json.dumps(row, indent=1), flush=True)


def _precompile(cases_path: str, case: int, index: int) -> str:
    """One config and its twins compiled through the hook (a worker process)."""
    import reorder.triton as rt
    from reorder.triton.compile import compile_call

    rt.install(say=None)
    c = load_cases(cases_path).CASES[case]("cpu")
    t0 = time.monotonic()
    try:
        for cfg in rt.with_reorder([c.configs[index]], rt.Request(noalias=True)):
            _pre_hook(c, cfg)
            compile_call(c.kernel, *c.args, **c.constexprs, **cfg.all_kwargs())
        return f"{c.name} {index}: {time.monotonic() - t0:.1f} s"
    except Exception as e:  # noqa: BLE001 - reported; the GPU phase compiles it again
        return f"{c.name} {index}: {type(e).__name__}: {e}"


def gpu_run(cases_path: str, argv: list[str]) -> None:
    out_dir = argv[0]
    only = set(argv[1].split(",")) if len(argv) > 1 else None
    os.makedirs(out_dir, exist_ok=True)
    cases = load_cases(cases_path)
    chosen = [k for k, m in enumerate(cases.CASES) if only is None or m.__name__ in only]
    units = [(cases_path, k, i) for k in chosen for i in range(len(cases.CASES[k]("cpu").configs))]
    t0 = time.monotonic()
    with ProcessPoolExecutor(max_workers=14, mp_context=get_context("spawn")) as workers:
        for line in workers.map(_precompile, *zip(*units)):
            print(f"[{time.monotonic() - t0:.0f} s] precompiled {line}", flush=True)

    import reorder.triton as rt
    from timing.cli_support import worker_device
    from timing.worker import WorkerPool

    rt.install(say=None, confirm=os.environ.get("CONFIRM", "1") != "0")
    scratch = tempfile.mkdtemp(prefix="one-line-pairs-")  # the picks' cubins (not kept: the device returns few files)
    rows = []
    with WorkerPool(devices=[worker_device()]) as pool:
        for k in chosen:
            make = cases.CASES[k]
            print(f"[{time.monotonic() - t0:.0f} s] {make.__name__}", flush=True)
            row = _gpu_case(make, pool, scratch)
            print(json.dumps({k: v for k, v in row.items() if k not in ("verify", "traceback")}), flush=True)
            if "verify" in row:
                print(row["verify"], flush=True)
            rows.append(row)
            with open(os.path.join(out_dir, "rows.json"), "w") as fh:
                json.dump(rows, fh, indent=1)


def _gpu_case(make: Callable[[str], Case], pool: Any, scratch: str) -> dict[str, Any]:
    """One case's row: both autotuners' picks and errors, rt.verify's table, the paired times."""
    import torch
    import triton

    import reorder.triton as rt
    from benchmarks.triton_one_line import do_bench

    row: dict[str, Any] = {"case": make.__name__}
    started = time.monotonic()
    try:
        c = make("cuda")
        twice = os.environ.get("PLAIN_TWICE") == "1"
        second = c.configs if twice else rt.with_reorder(c.configs, rt.Request(noalias=True))
        tuners = {
            "plain": triton.autotune(c.configs, do_bench=do_bench, **c.extras)(c.kernel),
            "one_line": triton.autotune(second, do_bench=do_bench, **c.extras)(c.kernel),
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
        if not twice:  # a plain autotuner has nothing of reorder's to verify
            c.reset()
            v = rt.verify(one, *c.args, grid=_grid(c, one.best_config), outputs=c.outputs, **c.constexprs)
            row["verify_ok"] = v.ok
            row["verify"] = v.table()
        for l2 in ("warm", "cold"):
            c.reset()
            row[f"paired_{l2}"] = _paired(c, tuners["plain"].best_config, one.best_config, l2, pool, scratch)
    except Exception as e:  # noqa: BLE001 - a case that fails is a row
        row["error"] = f"{type(e).__name__}: {e}"
        row["traceback"] = traceback.format_exc(limit=8)
    row["seconds"] = round(time.monotonic() - started, 1)
    return row


def _paired(c: Case, a_cfg: Any, b_cfg: Any, l2: str, pool: Any, scratch: str) -> dict[str, Any]:
    """The two picks' cubins timed in the same rounds (B's time over A's, with its CI)."""
    from benchmarks.triton_one_line import pair_job
    from reorder.triton.compile import compile_call
    from reorder.triton.launch import launch_spec
    from timing.worker import Job

    calls = []
    for cfg in (a_cfg, b_cfg):
        _pre_hook(c, cfg)
        calls.append(compile_call(c.kernel, *c.args, **c.constexprs, **cfg.all_kwargs()))
    grids = [_grid(c, cfg) for cfg in (a_cfg, b_cfg)]
    if calls[0].cubin == calls[1].cubin and grids[0] == grids[1]:
        return {"timing": "same build"}
    specs = [launch_spec(call.kernel, call.values, g, outputs=c.outputs) for call, g in zip(calls, grids)]
    paths = []
    for k, call in enumerate(calls):
        path = os.path.join(scratch, f"{re.sub(r'[^A-Za-z0-9_.-]', '_', c.name)}-{'ab'[k]}.cubin")
        with open(path, "wb") as fh:
            fh.write(call.cubin)
        paths.append(path)
    job = Job.of(pair_job, paths[0], paths[1], specs[0], specs[1].block, specs[1].shared, l2, 0.8, timeout_s=120)
    r = pool.run(job)
    return r.value if r.status == "ok" else {"timing": f"{r.status}: {r.reason}"}
