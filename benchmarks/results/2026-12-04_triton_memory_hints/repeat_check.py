"""The cross-entropy case again: its cubin paired with itself and with the 128-byte hint, 3 times each, warm and cold."""
import os, sys, tempfile
sys.path.insert(0, os.getcwd()); sys.path.insert(0, os.path.dirname(__file__))
from hints import hinted
from benchmarks.one_line_study import load_cases, _pre_hook, _grid
import torch, triton
from reorder.triton.compile import compile_call, cubin_stage
from reorder.triton.launch import launch_spec
from benchmarks.triton_one_line import pair_job
from timing.cli_support import worker_device
from timing.worker import Job, WorkerPool
cases = load_cases("benchmarks/results/2026-12-03_triton_liger/cases.py")
c = cases.cross_entropy("cuda")
cfg = c.configs[2]
call = compile_call(c.kernel, *c.args, **c.constexprs, **cfg.all_kwargs())
spec = launch_spec(call.kernel, call.values, _grid(c, cfg), outputs=c.outputs)
print(spec)
d = tempfile.mkdtemp(); a = d + "/a.cubin"; open(a, "wb").write(call.cubin)
b = d + "/b.cubin"; open(b, "wb").write(cubin_stage(hinted(call.kernel.asm["ptx"], size=128), {"num_warps": 32}, 90))
with WorkerPool(devices=[worker_device()]) as pool:
    for label, x in (("A-A", a), ("A-l2_128", b)) * 3:
        for l2 in ("warm", "cold"):
            r = pool.run(Job.of(pair_job, a, x, spec, spec.block, spec.shared, l2, 0.4, timeout_s=60))
            print(label, l2, r.status, r.value["ratio"] if r.status == "ok" else r.reason, flush=True)
