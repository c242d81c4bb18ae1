"""GPU: rt.tune on Liger's cross-entropy (256 x 128256, 16 warps, noalias): the per-loop search
seeds each loop's moves alone, the in-place gradient pass's among them. From the tree's root:

    PYTHONPATH=. LIGER_SRC=.gpu/liger/src OUT=out python3 benchmarks/results/2026-12-03_triton_inplace/tune_run.py 16 170

(DEV=cpu TUNE_DEVICE=cpu runs it on a host with no GPU, on the static model.)"""
import json, os, sys, tempfile, time
sys.path.insert(0, os.path.join(os.getcwd(), "benchmarks/results/2026-12-03_triton_liger"))
import cases
import triton
import reorder.triton as rt

c = cases.cross_entropy(os.environ.get("DEV", "cuda"), rows=256)
out = os.environ["OUT"]
t0 = time.monotonic()
result = rt.tune(c.kernel, *c.args, grid=c.grid, configs=[triton.Config({}, num_warps=16)], budget=int(sys.argv[1]),
                 seconds=float(sys.argv[2]), noalias=True, device=os.environ.get("TUNE_DEVICE", "gpu"), outputs=c.outputs, arch=(90 if os.environ.get("DEV") == "cpu" else None),
                 folder=tempfile.mkdtemp(prefix="ce-tune-"), **c.constexprs)
wall = time.monotonic() - t0
rows = []
for r in result.rows:
    row = {k: str(getattr(r, k)) for k in ("label", "kernel", "key", "changed", "score", "measured", "moves", "check", "ptx")}
    row["wall_s"] = round(wall, 1)
    trials = sorted(r.folder.glob("**/trials.csv")) + sorted(r.folder.glob("**/*.csv"))
    row["files"] = [str(p.relative_to(r.folder)) for p in trials][:10]
    rows.append(row)
    for p in trials[:1]:
        import shutil
        shutil.copy(p, os.path.join(out, "trials.csv"))
    for p in sorted(r.folder.glob("**/report*.md"))[:1] + sorted(r.folder.glob("**/*report*.txt"))[:1]:
        import shutil
        shutil.copy(p, os.path.join(out, p.name))
print(json.dumps(rows, indent=1))
json.dump(rows, open(os.path.join(out, "tune_rows.json"), "w"), indent=1)
