"""GPU: the cubins cpu_build.py made, against the config's plain cubin: byte check on 2 fresh
input sets (timing.multi_check), then paired timing (timing.paired through the Triton
benchmark's pair_job: same rounds, random order, 0.6 s, 95% bootstrap CI; warm L2 and cold
L2). The launch spec is Triton's, compiled on the GPU host for each shape. From the tree's root:

    PYTHONPATH=. LIGER_SRC=.gpu/liger/src OUT=out python3 benchmarks/results/2026-12-03_triton_inplace/gpu_run.py .gpu/ce [TAGS]
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.getcwd(), "benchmarks/results/2026-12-03_triton_liger"))
import cases

from benchmarks.triton_one_line import pair_job
from reorder.triton.compile import compile_call
from reorder.triton.launch import launch_spec
from timing.cli_support import worker_device
from timing.multi import Build
from timing.multi_check import check_builds
from timing.worker import Job, WorkerPool

here = sys.argv[1] if len(sys.argv) > 1 else ".gpu/ce"
out = []
pool = WorkerPool(devices=[worker_device()])
pool.__enter__()
for rows in (1024, 256):
    c = cases.cross_entropy("cuda", rows=rows)
    for w in (16, 32):
        call = compile_call(c.kernel, *c.args, **c.constexprs, num_warps=w, num_stages=3)
        grid = c.grid(call.values) if callable(c.grid) else c.grid
        spec = launch_spec(call.kernel, call.values, grid, outputs=c.outputs)
        plain = f"{here}/w{w}-plain.cubin"
        tags = sys.argv[2].split(",") if len(sys.argv) > 2 else ("p1", "p2", "p12")
        variants = [Build(t, f"{here}/w{w}-{t}.cubin", spec) for t in tags]
        checked = check_builds(Build("plain", plain, spec), variants, sets=2)
        for v in variants:
            row = {"rows": rows, "warps": w, "variant": v.label, "check": checked[v.label]["check"]}
            for l2 in ("warm", "cold"):
                r = pool.run(Job.of(pair_job, plain, v.cubin, spec, spec.block, spec.shared, l2, 0.6, timeout_s=120))
                row[l2] = (
                    (round(r.value["ratio"], 4), round(r.value["ratio_ci_low"], 4), round(r.value["ratio_ci_high"], 4))
                    if r.status == "ok"
                    else r.reason
                )
            print(json.dumps(row), flush=True)
            out.append(row)
pool.__exit__(None, None, None)
json.dump(out, open(os.path.join(os.environ["OUT"], os.environ.get("NAME", "ce_variants.json")), "w"), indent=1)
