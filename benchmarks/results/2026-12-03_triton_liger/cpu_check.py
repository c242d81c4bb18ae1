"""On the CPU host (no GPU): every case's configs and their twins compiled for sm_90 through the
one line's hook on CPU tensors, then rt.verify's static half; what each twin became."""
import json, os, sys, time, traceback
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import triton
import reorder.triton as rt
from reorder.triton.compile import compile_call
import cases

rt.install(say=None)
only = set(sys.argv[1].split(",")) if len(sys.argv) > 1 else None
for make in cases.CASES:
    if only and make.__name__ not in only:
        continue
    row = {"case": make.__name__}
    t0 = time.process_time()
    try:
        c = make("cpu")
        configs = c.configs[:int(os.environ.get("CONFIGS", "1"))]
        one = rt.with_reorder(configs, rt.Request(noalias=True))
        builds = []
        for cfg in one:
            if cfg.pre_hook:
                cfg.pre_hook({**dict(zip(c.kernel.arg_names, c.args)), **cfg.kwargs})
            call = compile_call(c.kernel, *c.args, arch=90, **c.constexprs, **cfg.all_kwargs())
            builds.append((getattr(call.kernel.metadata, "reorder", "") or "plain", call.cubin))
        row["builds"] = [(n, len(b), b == builds[0][1]) for n, b in builds]
        tuner = triton.autotune(one, **c.extras)(c.kernel)
        v = rt.verify(tuner, *c.args, grid=c.grid(one[0].kwargs) if callable(c.grid) else c.grid, arch=90,
                      outputs=c.outputs, **c.constexprs)
        row["verify"] = v.table()
    except Exception as e:
        row["error"] = f"{type(e).__name__}: {e}"
        row["traceback"] = traceback.format_exc(limit=8)
    row["cpu_s"] = round(time.process_time() - t0, 1)
    print(json.dumps(row, indent=1), flush=True)
