"""CPU host (no GPU): Liger-Kernel's cross-entropy PTX at 16 and 32 warps (Triton 3.6 for sm_90),
Prefetch 1 on its read-only first pass, on its in-place gradient pass, and on both; each
compiled by the config's own cubin stage. From the tree's root:

    PYTHONPATH=. LIGER_SRC=.gpu/liger/src python benchmarks/results/2026-12-03_triton_inplace/cpu_build.py .gpu/ce [TAGS]

Run 2 adds UnrollBatch 2 on the gradient pass (`u2`) and with the first pass's Prefetch 1
(`p1u2`): TAGS `u2,p1u2`.
"""

import os
import sys

os.environ.setdefault("LIGER_SRC", ".gpu/liger/src")
sys.path.insert(0, "benchmarks/results/2026-12-03_triton_liger")
import cases

from reorder.ptx.analyses.analysis import Analysis
from reorder.ptx.analyses.counted import loop_labels
from reorder.ptx.model.model import parse_module
from reorder.ptx.moves.prefetch import Prefetch
from reorder.ptx.moves.unroll import UnrollBatch
from reorder.triton.compile import compile_call, cubin_stage

out = sys.argv[1] if len(sys.argv) > 1 else ".gpu/ce"
os.makedirs(out, exist_ok=True)
c = cases.cross_entropy("cpu", rows=256)
for w in (16, 32):
    opts = dict(num_warps=w, num_stages=3)
    call = compile_call(c.kernel, *c.args, arch=90, **c.constexprs, **opts)
    ptx = call.kernel.asm["ptx"]
    module = parse_module(ptx)
    name = module.kernels[0].name
    labels = loop_labels(Analysis(module.kernels[0], True))
    print(w, labels)
    open(f"{out}/w{w}-plain.cubin", "wb").write(call.cubin)
    first, second = "$L__BB0_7", "$L__BB0_12"
    plans = {
        "p1": [Prefetch(name, first, 1, True)],
        "p2": [Prefetch(name, second, 1, True)],
        "p12": [Prefetch(name, first, 1, True), Prefetch(name, second, 1, True)],
        "u2": [UnrollBatch(name, second, 2, True)],  # the in-place pass unrolled 2 (run 2)
        "p1u2": [Prefetch(name, first, 1, True), UnrollBatch(name, second, 2, True)],
    }
    for tag in sys.argv[2].split(",") if len(sys.argv) > 2 else plans:
        m = module
        for move in plans[tag]:
            m = move.apply(m)
        open(f"{out}/w{w}-{tag}.cubin", "wb").write(cubin_stage(m.text, opts, 90))
        print(w, tag, "ok", flush=True)
