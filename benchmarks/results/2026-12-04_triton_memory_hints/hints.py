"""Do memory hints move the kernels the one line leaves at 1.00x?

    python3 benchmarks/results/2026-12-04_triton_memory_hints/hints.py OUT [case,case]

Per case (Liger-Kernel's and Triton's tutorials' cases, LIGER_SRC / TUTORIALS_SRC): the plain
autotuner's pick, its PTX with every `ld.global` (and `cp.async` to shared memory) given an
L2 prefetch size of 128 or 256 bytes, or made `.nc` (only where the case writes no buffer it
reads), each compiled by the pick's own cubin stage and timed against the pick's cubin
(timing.paired, 0.6 s, warm and cold L2). A hint changes no value: nothing is byte-checked.
"""
import json, os, re, sys, tempfile, time, traceback
sys.path.insert(0, os.getcwd())
from benchmarks.one_line_study import load_cases, _pre_hook, _grid

TYPE = re.compile(r"^(v2|v4|v8|b8|b16|b32|b64|b128|u8|u16|u32|u64|s8|s16|s32|s64|f16|f16x2|f32|f64|bf16|bf16x2)$")

def hinted(ptx, size=None, nc=False, cp=True):
    def ld(m):
        parts = m.group(0).split(".")
        if any(p.startswith("L2::") and p.endswith("B") for p in parts) or "volatile" in parts or "relaxed" in parts or "acquire" in parts:
            return m.group(0)
        if nc and "nc" not in parts:
            parts.insert(parts.index("global") + 1, "nc")
        k = next(i for i, p in enumerate(parts) if TYPE.match(p))
        if size:
            parts.insert(k, f"L2::{size}B")
        return ".".join(parts)
    out = re.sub(r"\bld\.global[\w:.]*", ld, ptx)
    if size and cp:
        out = re.sub(r"\bcp\.async\.(cg|ca)\.shared(::cta)?\.global(?![\w:]*L2::)", lambda m: m.group(0) + f".L2::{size}B", out)
    return out

VARIANTS = {
    "l2_128": dict(size=128),
    "l2_256": dict(size=256),
    "nc": dict(nc=True),
    "nc_256": dict(size=256, nc=True),
}

def main(out_dir, specs):
    import torch, triton
    from reorder.triton.compile import compile_call, cubin_stage
    from reorder.triton.launch import launch_spec
    from benchmarks.triton_one_line import pair_job, do_bench
    from timing.cli_support import worker_device
    from timing.worker import Job, WorkerPool
    os.makedirs(out_dir, exist_ok=True)
    scratch = tempfile.mkdtemp()
    rows = []
    with WorkerPool(devices=[worker_device()]) as pool:
        for path, names, ro in specs:
            cases = load_cases(path)
            for make in cases.CASES:
                if make.__name__ not in names:
                    continue
                row = {"case": make.__name__}
                t0 = time.monotonic()
                try:
                    c = make("cuda")
                    tuner = triton.autotune(c.configs, do_bench=do_bench, **c.extras)(c.kernel)
                    c.reset(); tuner[c.grid](*c.args, **c.constexprs); torch.cuda.synchronize()
                    cfg = tuner.best_config
                    row["pick"] = str(cfg)
                    _pre_hook(c, cfg)
                    call = compile_call(c.kernel, *c.args, **c.constexprs, **cfg.all_kwargs())
                    ptx = call.kernel.asm["ptx"]
                    grid = _grid(c, cfg)
                    spec = launch_spec(call.kernel, call.values, grid, outputs=c.outputs)
                    a = os.path.join(scratch, f"{make.__name__}-a.cubin"); open(a, "wb").write(call.cubin)
                    opts = {k: getattr(call.kernel.metadata, k) for k in ("num_warps", "num_stages", "num_ctas", "maxnreg") if hasattr(call.kernel.metadata, k)}
                    for v, kw in VARIANTS.items():
                        if kw.get("nc") and not ro:
                            continue
                        text = hinted(ptx, **kw)
                        if text == ptx:
                            row[v] = "no change"; continue
                        cub = cubin_stage(text, opts, 90)
                        b = os.path.join(scratch, f"{make.__name__}-{v}.cubin"); open(b, "wb").write(cub)
                        for l2 in ("warm", "cold"):
                            r = pool.run(Job.of(pair_job, a, b, spec, spec.block, spec.shared, l2, 0.6, timeout_s=60))
                            row[f"{v}_{l2}"] = r.value if r.status == "ok" else f"{r.status}: {r.reason}"
                            if r.status == "ok":
                                x = r.value
                                print(f"{make.__name__:24s} {v:8s} {l2}: {x['ratio']:.4f} [{x['ratio_ci_low']:.4f}, {x['ratio_ci_high']:.4f}] {x['plain_us']:.1f}us", flush=True)
                except Exception as e:
                    row["error"] = f"{type(e).__name__}: {e}"; row["tb"] = traceback.format_exc(limit=6)
                    print(make.__name__, row["error"], flush=True)
                row["s"] = round(time.monotonic() - t0, 1)
                rows.append(row)
                json.dump(rows, open(os.path.join(out_dir, "rows.json"), "w"), indent=1)

if __name__ == "__main__":
    R = "benchmarks/results/"
    which = sys.argv[2].split(",") if len(sys.argv) > 2 else None
    specs = [
        (R + "2026-12-03_triton_tutorials/cases.py", {"softmax", "matmul", "layer_norm_fwd", "persistent_matmul"}, True),
        (R + "2026-12-03_triton_liger/cases.py", {"rms_norm_fwd", "geglu_fwd", "kl_div", "dyt_fwd", "swiglu_mlp"}, True),
        (R + "2026-12-03_triton_liger/cases.py", {"cross_entropy"}, False),
    ]
    if which:
        specs = [(p, n & set(which), ro) for p, n, ro in specs]
    main(sys.argv[1], specs)
