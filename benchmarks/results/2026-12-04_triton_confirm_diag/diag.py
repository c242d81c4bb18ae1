"""Each twin against its own config, by three clocks, on the GPU, from the tree's root:

    python3 benchmarks/results/2026-12-04_triton_confirm_diag/diag.py OUT case[,case] [label,label]

For every twin of the chosen configs (labels such as `LOOP_STAGES1-num_warps8`; all configs
when none is given) whose cubin differs from its config's:
  - the confirmation's paired rounds (reorder.triton.confirm.paired_rounds) with the GPU spin
    before each timed launch and without it, and the verdict each gives;
  - Triton's do_bench on the two, alternated, 4 times each (median of each call);
  - timing.paired on the two cubins (the studies' clock: CUDA-graph warm, 2x L2 written cold).
Then the one-line autotuner over the same configs, with the confirmation, and its verdicts.
Rows go to OUT/rows.json.
"""

import json
import os
import re
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, ROOT)

from benchmarks.one_line_study import _grid, _pre_hook, _precompile, load_cases  # noqa: E402

CASES = os.path.join(os.path.dirname(HERE), "2026-12-04_triton_confirm", "cases.py")


def _ci(v) -> dict:
    return {"ratio": round(v.ratio, 4), "low": round(v.low, 4), "high": round(v.high, 4), "n": v.n_rounds}


def _calls(c, cfg, twin):
    """compile_call's builds of the config and the twin, and the JIT's own (kernel.warmup)."""
    from reorder.triton.compile import compile_call

    calls, jits = [], []
    for k in (cfg, twin):
        _pre_hook(c, k)
        calls.append(compile_call(c.kernel, *c.args, **c.constexprs, **k.all_kwargs()))
        jits.append(c.kernel.warmup(*c.args, grid=_grid(c, k), **c.constexprs, **k.all_kwargs()))
    return calls, jits


def _pair(c, cfg, calls, cubins, pool, scratch, l2):
    from benchmarks.triton_one_line import pair_job
    from reorder.triton.launch import launch_spec
    from timing.worker import Job

    specs = [launch_spec(call.kernel, call.values, _grid(c, cfg), outputs=c.outputs) for call in calls]
    paths = []
    for k, data in enumerate(cubins):
        path = os.path.join(scratch, f"{re.sub(r'[^A-Za-z0-9_.-]', '_', c.name)}-{k}.cubin")
        with open(path, "wb") as fh:
            fh.write(data)
        paths.append(path)
    b = specs[1]
    r = pool.run(Job.of(pair_job, paths[0], paths[1], specs[0], b.block, b.shared, l2, 0.8, timeout_s=120))
    return r.value if r.status == "ok" else {"timing": f"{r.status}: {r.reason}"}


def _case(make, labels, pool, scratch) -> dict:
    import torch
    import triton
    from triton.testing import do_bench

    import reorder.triton as rt
    from benchmarks.triton_one_line import do_bench as study_bench
    from reorder.triton import confirm
    from reorder.triton.tune import label_of, original_of, twin_of

    c = make("cuda")
    row = {"case": make.__name__, "twins": []}
    one = rt.with_reorder(c.configs, rt.Request(noalias=True))
    for twin in one:
        if not twin_of(twin):
            continue
        cfg = original_of(twin)
        if labels and label_of(cfg.all_kwargs()) not in labels:
            continue
        entry = {"twin": confirm.twin_label(twin)}
        calls, jits = _calls(c, cfg, twin)
        if calls[0].cubin == calls[1].cubin:
            continue  # the same binary
        entry["jit_is_compile_call"] = [j.asm["cubin"] == k.cubin for j, k in zip(jits, calls)]
        for j in jits:
            j._init_handles()
        entry["regs_shared"] = [(j.n_regs, j.metadata.shared) for j in jits]
        for l2 in ("warm", "cold"):
            entry[f"paired_{l2}"] = _pair(c, cfg, calls, [k.cubin for k in calls], pool, scratch, l2)
            if entry["jit_is_compile_call"] != [True, True]:
                entry[f"paired_jit_{l2}"] = _pair(c, cfg, calls, [j.asm["cubin"] for j in jits], pool, scratch, l2)

        def launch(k):
            return lambda: c.kernel[_grid(c, k)](*c.args, **c.constexprs, **k.all_kwargs())

        a, b = launch(cfg), launch(twin)
        for spin in (confirm.HEAD_START_CYCLES, 0):
            saved = confirm.HEAD_START_CYCLES
            confirm.HEAD_START_CYCLES = spin
            try:
                v = confirm.judge(confirm.paired_rounds(a, b))
            finally:
                confirm.HEAD_START_CYCLES = saved
            entry[f"rounds_spin{spin}"] = {"warm": _ci(v.warm), "cold": _ci(v.cold), "keeps": v.keeps}
        benches = []
        for _ in range(4):
            benches.append((do_bench(a), do_bench(b)))
        entry["do_bench_ms"] = [(round(x, 5), round(y, 5)) for x, y in benches]
        torch.cuda.synchronize()
        print(json.dumps(entry), flush=True)
        row["twins"].append(entry)
    tuner = triton.autotune(one, do_bench=study_bench, **c.extras)(c.kernel)
    c.reset()
    tuner[c.grid](*c.args, **c.constexprs)
    torch.cuda.synchronize()
    row["pick"] = str(tuner.best_config)
    row["confirmations"] = [x.line() for x in getattr(tuner, "reorder_confirmations", [])]
    print(json.dumps({k: row[k] for k in ("pick", "confirmations")}, indent=1), flush=True)
    return row


def main(argv: list[str]) -> None:
    out_dir = argv[0]
    only = set(argv[1].split(","))
    labels = set(argv[2].split(",")) if len(argv) > 2 else set()
    os.makedirs(out_dir, exist_ok=True)
    cases = load_cases(CASES)
    chosen = [k for k, m in enumerate(cases.CASES) if m.__name__ in only]
    units = [(CASES, k, i) for k in chosen for i in range(len(cases.CASES[k]("cpu").configs))]
    t0 = time.monotonic()
    with ProcessPoolExecutor(max_workers=14, mp_context=get_context("spawn")) as workers:
        for line in workers.map(_precompile, *zip(*units)):
            print(f"[{time.monotonic() - t0:.0f} s] precompiled {line}", flush=True)

    import reorder.triton as rt
    from timing.cli_support import worker_device
    from timing.worker import WorkerPool

    rt.install(say=None)
    scratch = tempfile.mkdtemp(prefix="confirm-diag-")
    rows = []
    with WorkerPool(devices=[worker_device()]) as pool:
        for k in chosen:
            print(f"[{time.monotonic() - t0:.0f} s] {cases.CASES[k].__name__}", flush=True)
            rows.append(_case(cases.CASES[k], labels, pool, scratch))
            with open(os.path.join(out_dir, "rows.json"), "w") as fh:
                json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
