"""GPU evidence for the race checks: barrier sweeps, the race reproduced, optimize winners re-checked.

CPU (nvdisasm, nvcc): `python -m benchmarks.correctness_gpu prepare DIR` builds every
variant (barrier probes, the rmsnorm reproduction) and writes every suite kernel's launch
spec at each of its sweep points. GPU:

    python -m benchmarks.correctness_gpu barrier DIR --out OUT
    python -m benchmarks.correctness_gpu optimize DIR --out OUT --kernels a,b [--budget 40]

`barrier`: each probe variant against the compiler's cubin over 2048 blocks of 1024 threads
(reading a thread of the next warp and one of another half of the block) and over one
block, 8 fresh input sets each, shared memory poisoned before every launch; the rmsnorm
reproduction (the barrier's stall lowered so the LDS behind it issues 4 or 5 cycles after
it) at 1 row without and with poisoning, and at 4, 16 and 512 rows. `optimize`: `reorder
optimize` tuned at one point with `--check-launch` at every sweep point, then the written
output checked again here, independently, at every point on 20 input sets never used.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import sys
import time
from pathlib import Path

import tomllib

from benchmarks.studies.runner import optimize_command
from reorder.suite.rows import write_rows
from reorder.suite.sweep import apply_sweep, spec_toml, sweep_points

SUITE = Path(__file__).parent / "kernels"
PROBE_SETS = 8
REPRO_STALLS = (4, 5, 6)  # 6 is the compiler's (control)
REPRO_ROWS = (1, 4, 16, 512)
RECHECK_SETS = 20
# (kernel, the point it is tuned at or None for the spec's own launch, assume noalias)
TUNED = {"rmsnorm_triton_style": ({"rows": 1}, True), "rms_norm_f32": (None, True)}


# ---------------------------------------------------------------- CPU side


def prepare(folder: Path) -> None:
    """Build the probe variants and the reproduction; write each suite kernel's specs."""
    from legality.silicon.barrier_probe import PROBES_CUBIN, build_variants
    from reorder.base.provenance import commit

    folder.mkdir(parents=True, exist_ok=True)
    manifest = []
    shutil.copy(PROBES_CUBIN, folder / "probe_orig.cubin")
    for v in build_variants(PROBES_CUBIN):
        name = f"probe_{v.kernel}_{v.name}.cubin"
        (folder / name).write_bytes(v.data)
        manifest.append(
            {
                "kind": "probe",
                "kernel": v.kernel,
                "variant": v.name,
                "side": v.side,
                "cycles": v.cycles,
                "barrier": v.barrier,
                "access": v.access,
                "other": v.other,
                "file": name,
            }
        )
    manifest += _reproduction(folder)
    for spec in sorted((SUITE / "specs").glob("*.toml")):
        _write_point_specs(spec, folder / "specs" / spec.stem)
    (folder / "manifest.json").write_text(json.dumps({"commit": commit(), "entries": manifest}, indent=1))


def _reproduction(folder: Path) -> list[dict]:
    """rmsnorm_triton_style with its BAR.SYNC's stall lowered: the LDS behind it issues 4 or 5
    cycles after the barrier, every register dependency still covered."""
    from legality.verify import verify_kernel
    from reorder.binary.cubin import read_cubin
    from reorder.sass.model import decode_kernel
    from reorder.sass.writer import patch_kernel

    cubin = SUITE / "cubin" / "rmsnorm.cubin"
    code = decode_kernel(read_cubin(cubin), "rmsnorm_triton_style")
    b = next(i for i, x in enumerate(code.instructions) if x.opcode.startswith("BAR.SYNC"))
    out = []
    for stall in REPRO_STALLS:
        ins = list(code.instructions)
        ins[b] = ins[b].with_ctrl(ins[b].ctrl.with_(stall=stall))
        verdict = verify_kernel(code, tuple(ins), original=code.instructions).verdict()
        name = f"repro_bar_s{stall}.cubin"
        (folder / name).write_bytes(patch_kernel(code.cubin, code.kernel, tuple(ins), code.kernel.regcount))
        out.append(
            {
                "kind": "repro",
                "kernel": "rmsnorm_triton_style",
                "variant": f"bar_stall_{stall}",
                "cycles": stall,
                "verifier": verdict,
                "file": name,
            }
        )
    shutil.copy(cubin, folder / "repro_orig.cubin")
    return out


def _write_point_specs(spec: Path, folder: Path) -> None:
    raw = tomllib.loads(spec.read_text())
    folder.mkdir(parents=True, exist_ok=True)
    base = dict(raw)
    base.pop("grid_sweep", None)
    (folder / "default.toml").write_text(spec_toml(base))
    for point in sweep_points(raw):
        resized = dict(apply_sweep(raw, point))
        resized.pop("grid_sweep", None)
        (folder / (_point_name(point) + ".toml")).write_text(spec_toml(resized))


def _point_name(point: dict) -> str:
    return "_".join(f"{k}{v}" for k, v in sorted(point.items()))


# ---------------------------------------------------------------- GPU side


def _meta(commit: str) -> dict:
    from reorder.base import provenance

    return {"gpu": provenance.gpu_name(), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "commit": commit}


def barrier(folder: Path, out: Path) -> None:
    from timing.evaluate import check_job, describe_status
    from timing.worker import Job, WorkerPool

    manifest = json.loads((folder / "manifest.json").read_text())
    meta = {**_meta(manifest["commit"]), "l2": "n/a (byte checks)"}
    rows: list[dict] = []
    with WorkerPool(devices=[0]) as pool:
        for e in manifest["entries"]:
            for launch, spec, poison in _launches(folder, e):
                res = describe_status(
                    pool.run(
                        Job.of(
                            check_job,
                            str(folder / ("probe_orig.cubin" if e["kind"] == "probe" else "repro_orig.cubin")),
                            str(folder / e["file"]),
                            spec,
                            sets=PROBE_SETS,
                            poison_shared=poison,
                            timeout_s=120,
                        )
                    )
                )
                row = {
                    **meta,
                    **{k: v for k, v in e.items() if k != "file"},
                    "launch": launch,
                    "poisoned": poison,
                    **res,
                }
                rows.append(row)
                print(
                    json.dumps({k: row.get(k) for k in ("kernel", "variant", "launch", "poisoned", "status", "check")}),
                    flush=True,
                )
            write_rows(out / "barrier_sweep.csv", rows)


def _launches(folder: Path, e: dict):
    """(label, spec, poison) of each launch an entry is checked at."""
    if e["kind"] == "probe":
        from legality.silicon.barrier_probe import probe_launches

        for label, spec in probe_launches(e["kernel"]):
            yield label, spec, True
        return
    from timing.spec import load_spec

    specs = folder / "specs" / "rmsnorm_triton_style"
    yield "rows 1 (no poison)", load_spec(specs / "rows1.toml"), False
    for rows in REPRO_ROWS:
        path = specs / f"rows{rows}.toml"
        if not path.exists():
            _write_rows_spec(path, rows)
        yield f"rows {rows}", load_spec(path), True


def _write_rows_spec(path: Path, rows: int) -> None:
    raw = tomllib.loads((SUITE / "specs" / "rmsnorm_triton_style.toml").read_text())
    resized = dict(apply_sweep(raw, {"rows": rows}))
    resized.pop("grid_sweep", None)
    path.write_text(spec_toml(resized))


def optimize(folder: Path, out: Path, kernels: list[str], budget: int, seconds: int, jobs: int) -> None:
    manifest = json.loads((folder / "manifest.json").read_text())
    rows: list[dict] = []
    for kernel in kernels:
        rows += _optimize_one(folder, out, kernel, budget, seconds, jobs, manifest["commit"])
        write_rows(out / f"optimize_{'_'.join(kernels)[:60]}.csv", rows)


def _optimize_one(folder: Path, out: Path, kernel: str, budget: int, seconds: int, jobs: int, commit: str):
    from benchmarks.studies.runner import suite_cubin as _suite_cubin
    from reorder.optimize import recheck_first_set
    from timing.cli_support import validated_spec
    from timing.evaluate import check_job, describe_status
    from timing.worker import Job, WorkerPool

    cubin = _suite_cubin(kernel)
    specs = folder / "specs" / kernel
    point, noalias = TUNED.get(kernel, (None, False))
    tuned = specs / (f"{_point_name(point)}.toml" if point else "default.toml")
    points = sorted(p for p in specs.glob("*.toml") if p.name != "default.toml")
    fast = Path("/tmp/correctness_gpu") / kernel / "fast.cubin"
    fast.parent.mkdir(parents=True, exist_ok=True)
    cmd = optimize_command(
        cubin,
        kernel,
        fast,
        "--no-contributions",
        *(x for p in points for x in ("--check-launch", str(p))),
        *(["--assume-noalias"] if noalias else []),
        launch=tuned,
        budget=budget,
        time=f"{seconds}s",
        jobs=jobs,
        device="gpu",
        candidate_budget=0.6,
        final_budget=2,
    )
    started = time.monotonic()
    dest = out / kernel
    dest.mkdir(parents=True, exist_ok=True)
    log = dest / "optimize.log"  # streamed: a run cut by an outer timeout still shows how far it got
    with log.open("w") as sink:
        done = subprocess.run(cmd, stdout=sink, stderr=subprocess.STDOUT, text=True, check=False)
    elapsed = round(time.monotonic() - started, 1)
    said = log.read_text(errors="replace")
    print(said[-2500:], flush=True)
    for name in ("report.md", "trials.csv", "changes.diff"):
        src = fast.with_name("fast.reorder") / name
        if src.exists():
            shutil.copy(src, dest / name)
    meta = {
        **_meta(commit),
        "l2": "warm",
        "kernel": kernel,
        "tuned_at": tuned.stem,
        "optimize_rc": done.returncode,
        "optimize_s": elapsed,
        "changed": fast.exists() and fast.read_bytes() != cubin.read_bytes(),
    }
    rows = []
    if not fast.exists():
        return [{**meta, "point": "-", "status": "no output", "reason": said.strip().splitlines()[-1:]}]
    first = recheck_first_set()
    with WorkerPool(devices=[0]) as pool:
        for p in points or [tuned]:
            spec = validated_spec(p, [cubin], kernel)
            res = describe_status(
                pool.run(
                    Job.of(check_job, str(cubin), str(fast), spec, sets=RECHECK_SETS, first_set=first, timeout_s=600)
                )
            )
            rows.append({**meta, "point": p.stem, "grid": math.prod(spec.grid), **res})
            print(json.dumps({k: rows[-1].get(k) for k in ("kernel", "point", "status", "check")}), flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=("prepare", "barrier", "optimize"))
    parser.add_argument("folder", type=Path)
    parser.add_argument("--out", type=Path, default=Path("out"))
    parser.add_argument("--kernels", default="")
    parser.add_argument("--budget", type=int, default=40)
    parser.add_argument("--seconds", type=int, default=120)
    parser.add_argument("--jobs", type=int, default=14)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.part == "prepare":
        prepare(args.folder)
    elif args.part == "barrier":
        barrier(args.folder, args.out)
    else:
        optimize(args.folder, args.out, [k for k in args.kernels.split(",") if k], args.budget, args.seconds, args.jobs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
