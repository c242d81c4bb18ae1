"""One GPU session: RMSNorm load batching, StallCut over the suite, A/A timing, fault isolation.

Run on the GPU machine after `python -m benchmarks.gpu_session --prepare DIR` has built
the candidate cubins on a CPU machine (the GPU machine has no nvdisasm wheel):

    python -m benchmarks.gpu_session --run DIR --out OUT

Every ratio is time(candidate)/time(original) from timing.paired (CUDA-graph replay,
interleaved randomized rounds, bootstrap 95% CI), after timing.check proved the outputs
byte-identical on 3 fresh input sets. Results: OUT/gpu_session.json and CSV rows.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROWS = (1, 16, 128, 1024, 8192)
SUITE = Path(__file__).parent / "kernels"


def _spec(kernel: str, point: dict | None):
    import tomllib

    from benchmarks.kernels.sweep import apply_sweep
    from timing.spec import parse_spec

    raw = tomllib.loads((SUITE / "specs" / f"{kernel}.toml").read_text())
    raw = apply_sweep(raw, point) if point else raw
    raw.pop("grid_sweep", None)
    return parse_spec(dict(raw), kernel)


def prepare(out: Path) -> None:
    """CPU side: write original and candidate cubins for every experiment into `out`."""
    from legality.mutate import scoreboard_mutants
    from reorder.cubin import read_cubin
    from reorder.pipeline import batch_loads, cut_stalls
    from reorder.sass import decode_kernel
    from reorder.writer import patch_kernel, write_atomic

    out.mkdir(parents=True, exist_ok=True)
    manifest = {"stallcut": [], "batch": None}
    rms = SUITE / "cubin" / "rmsnorm.cubin"
    code = decode_kernel(read_cubin(rms), "rmsnorm_triton_style")
    result = batch_loads(code, noalias=True)
    write_atomic(out / "rmsnorm_orig.cubin", rms.read_bytes())
    write_atomic(out / "rmsnorm_batched.cubin", result.data)
    manifest["batch"] = {"summary": result.summary()}
    for spec_path in sorted((SUITE / "specs").glob("*.toml")):
        kernel = spec_path.stem
        cubin_path = next(p for p in (SUITE / "cubin").glob("*.cubin") if kernel in
                          {k.name for k in read_cubin(p).kernels})
        code = decode_kernel(read_cubin(cubin_path), kernel)
        cut = cut_stalls(code)
        write_atomic(out / f"{kernel}_orig.cubin", cubin_path.read_bytes())
        write_atomic(out / f"{kernel}_stallcut.cubin", cut.data)
        before = sum(i.ctrl.stall for i in code.instructions)
        after = sum(i.ctrl.stall for i in cut.after.instructions)
        manifest["stallcut"].append({"kernel": kernel, "stall_before": before, "stall_after": after})
    cubin = read_cubin(rms)
    code = decode_kernel(cubin, "rmsnorm_triton_style")
    mutant = next(m for m in scoreboard_mutants(code.instructions) if m.kind == "drop_wait")
    write_atomic(out / "rmsnorm_dropwait.cubin", patch_kernel(cubin, code.kernel, mutant.instructions))
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))


def _timed(a: Path, b: Path, spec, l2: str = "warm", method: str = "graph") -> dict:
    from timing.check import check_pair
    from timing.paired import time_pair
    from timing.stats import verdict

    chk = check_pair(str(a), str(b), spec, sets=3) if a != b else None
    if chk is not None and not chk.ok:
        return {"check": "MISMATCH", "reason": chk.reason}
    t = time_pair(str(a), str(b), spec, l2=l2, method=method, target_ci_pct=0.5, budget_s=6.0)
    return {"check": "identical" if chk else "same-file", "ratio": t.ratio.ratio, "ci_low": t.ratio.low,
            "ci_high": t.ratio.high, "a_us": t.a_us, "b_us": t.b_us, "rounds": t.rounds,
            "clock_mhz": t.clock_mhz, "verdict": verdict(t.ratio), "l2": l2, "method": method}


def run(folder: Path, out: Path) -> None:
    import cupy

    from timing.worker import Job, WorkerPool

    out.mkdir(parents=True, exist_ok=True)
    props = cupy.cuda.runtime.getDeviceProperties(0)
    rows: list[dict] = []
    meta = {"gpu": props["name"].decode(), "date": time.strftime("%Y-%m-%d %H:%M:%S"),
            "driver": cupy.cuda.runtime.driverGetVersion(), "commit": _commit()}

    def record(**row):
        rows.append({**meta, **row})
        print(json.dumps(row), flush=True)

    for n in ROWS:
        spec = _spec("rmsnorm_triton_style", {"rows": n})
        record(experiment="batch_loads", kernel="rmsnorm_triton_style", rows=n,
               **_timed(folder / "rmsnorm_orig.cubin", folder / "rmsnorm_batched.cubin", spec))
    for item in json.loads((folder / "manifest.json").read_text())["stallcut"]:
        k = item["kernel"]
        try:
            res = _timed(folder / f"{k}_orig.cubin", folder / f"{k}_stallcut.cubin", _spec(k, None))
        except Exception as exc:  # record failures too
            res = {"check": "ERROR", "reason": f"{type(exc).__name__}: {exc}"[:200]}
        record(experiment="stall_cut", kernel=k, **item, **res)
    for label, kernel, point in (("short", "rmsnorm_triton_style", {"rows": 16}),
                                 ("long", "warp_select_k32", None)):
        spec = _spec(kernel, point)
        a = folder / f"{kernel}_orig.cubin"
        for method in ("graph", "backtoback"):
            for rep in range(3):
                record(experiment="aa", size=label, kernel=kernel, rep=rep, **_timed(a, a, spec, method=method))
    with WorkerPool(devices=[0]) as pool:
        spec = _spec("rmsnorm_triton_style", {"rows": 16})
        from timing.check import check_pair

        bad = pool.run(Job.of(check_pair, str(folder / "rmsnorm_orig.cubin"), str(folder / "rmsnorm_dropwait.cubin"),
                              spec, timeout_s=120))
        good = pool.run(Job.of(check_pair, str(folder / "rmsnorm_orig.cubin"), str(folder / "rmsnorm_batched.cubin"),
                               spec, timeout_s=120))
        record(experiment="isolation", dropwait_status=bad.status, dropwait_reason=str(bad.reason)[:200],
               dropwait_ok=getattr(bad.value, "ok", None), next_status=good.status,
               next_ok=getattr(good.value, "ok", None))
    (out / "gpu_session.json").write_text(json.dumps(rows, indent=1, default=str))


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "unknown"


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--prepare", type=Path)
    parser.add_argument("--run", type=Path)
    parser.add_argument("--out", type=Path, default=Path("out"))
    args = parser.parse_args()
    if args.prepare:
        prepare(args.prepare)
    if args.run:
        run(args.run, args.out)
    sys.exit(0)
