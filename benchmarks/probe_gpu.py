"""The probe timeline of rmsnorm_triton_style on the H200: original vs load-batched.

Building the probe variants is CPU work (one cubin per probed position, each checked:
originals bit-identical, verifier accepts); running them needs the GPU. So, like the
latency probe, this runs in two steps:

    python -m benchmarks.probe_gpu --prebuild DIR [--batched B.cubin] [--rows 16]   # CPU
    python -m benchmarks.probe_gpu --run DIR --out OUT                               # GPU

`--run` writes, for each version, a timeline CSV; one PNG with both overlaid; and
probe_summary.json with what the probe must show: the share of the normalise pass the
probes cover, whether each load-wait jump sits on (or within two instructions of) the
first use of the loaded value, the probe's own cost (paired timing of the kernel with
vs without a mid-pass probe), and a byte check of the probed kernel's outputs against
the original's (the records buffer aside).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import tomllib

from benchmarks.studies.runner import SUITE
from benchmarks.studies.runner import suite_cubin as _suite_cubin
from reorder.base import provenance
from reorder.suite.sweep import apply_sweep, spec_toml

KERNEL = "rmsnorm_triton_style"
NEAR = 2  # a load-wait jump must sit within this many instructions of the first use


def normalise_pass(code) -> tuple[int, int]:
    """Instruction indices of the normalise pass: after the guarded EXIT that ends the
    reduction (rows past the grid leave there) up to the kernel's final EXIT."""
    exits = [i for i, ins in enumerate(code.instructions) if ins.opcode == "EXIT"]
    if len(exits) < 2:
        raise SystemExit(f"{KERNEL}: expected a guarded EXIT before the normalise pass, found {len(exits)} EXITs")
    return exits[0] + 1, exits[-1]


def first_use(code, producer_index: int) -> int | None:
    """The first instruction after the producer that reads a register the producer writes."""
    written = set(code.instructions[producer_index].access.writes)
    for i in range(producer_index + 1, len(code.instructions)):
        if written & set(code.instructions[i].access.reads):
            return i
    return None


def prebuild(folder: Path, batched: Path | None, rows: int) -> int:
    from reorder.binary.cubin import read_cubin
    from reorder.build.pipeline import batch_loads
    from reorder.probe.run import build_variants, layout_of
    from reorder.probe.variants import probe_positions
    from reorder.sass.model import decode_kernel
    from timing.spec import parse_spec

    folder.mkdir(parents=True, exist_ok=True)
    raw = dict(apply_sweep(tomllib.loads((SUITE / "specs" / f"{KERNEL}.toml").read_text()), {"rows": rows}))
    raw.pop("grid_sweep", None)
    spec_text = spec_toml(raw)
    (folder / "spec.toml").write_text(spec_text)
    spec = parse_spec(tomllib.loads(spec_text), "spec.toml")
    original = _suite_cubin(KERNEL)
    shutil.copy(original, folder / "original.cubin")
    if batched is None:
        outcome = batch_loads(decode_kernel(read_cubin(original), KERNEL), True)
        (folder / "batched.cubin").write_bytes(outcome.data)
    else:
        shutil.copy(batched, folder / "batched.cubin")
    manifest = {"rows": rows, "versions": {}}
    for name in ("original", "batched"):
        code = decode_kernel(read_cubin(folder / f"{name}.cubin"), KERNEL)
        first, last = normalise_pass(code)
        positions = probe_positions(code, first, last)
        built = build_variants(code, positions, layout_of(spec), folder / name)
        manifest["versions"][name] = {
            "pass": [first, last],
            "positions": [k for k, _, _ in built],
            "record_bytes": built[0][2].record_bytes,
            "occupancy": built[0][2].occupancy.line(),
        }
        print(
            f"{name}: pass {first}..{last} ({last - first + 1} instructions), {len(built)} probe variants", flush=True
        )
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return 0


def run(folder: Path, out: Path) -> int:
    from reorder.binary.cubin import read_cubin
    from reorder.probe.run import measure_variants, probe_spec, probed_outputs_job
    from reorder.probe.timeline import jumps, plot, read_csv, write_csv
    from reorder.sass.model import decode_kernel
    from timing.cli_support import worker_device
    from timing.evaluate import time_job
    from timing.spec import parse_spec
    from timing.worker import Job, WorkerPool

    out.mkdir(parents=True, exist_ok=True)
    manifest = json.loads((folder / "manifest.json").read_text())
    spec = parse_spec(tomllib.loads((folder / "spec.toml").read_text()), "spec.toml")
    summary: dict = {
        "gpu": provenance.gpu_name(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "commit": provenance.commit(),
        "kernel": KERNEL,
        "rows": manifest["rows"],
        "l2": "warm",
        "versions": {},
    }
    tables = []
    with WorkerPool(devices=[worker_device()]) as pool:
        for name, info in manifest["versions"].items():
            base = folder / f"{name}.cubin"
            code = decode_kernel(read_cubin(base), KERNEL)
            pspec = probe_spec(spec, info["record_bytes"])
            paths = [folder / name / f"{KERNEL}.probe_{k:04d}.cubin" for k in info["positions"]]
            points, failed = measure_variants(pool, code, list(zip(info["positions"], paths)), pspec, 5, 60)
            found = jumps(code.instructions, points)
            csv_path = write_csv(out / f"timeline_{name}.csv", points, found)
            tables.append((name, read_csv(csv_path)))
            mid = paths[len(paths) // 2]
            cost = pool.run(
                Job.of(time_job, str(base.resolve()), str(mid.resolve()), pspec, budget_s=4.0, timeout_s=120)
            )
            check = pool.run(Job.of(probed_outputs_job, str(base.resolve()), str(mid.resolve()), pspec, timeout_s=120))
            summary["versions"][name] = _version_summary(code, info, points, failed, found, cost, check)
            print(json.dumps({name: summary["versions"][name]}, indent=1, default=str), flush=True)
    plot(tables, out / "timeline_original_vs_batched.png")
    (out / "probe_summary.json").write_text(json.dumps(summary, indent=1, default=str))
    return 0


def reanalyse(folder: Path, out: Path) -> int:
    """Recompute the jumps and the summary from a run's timeline CSVs (CPU): the measured
    cycles, the probe's cost and the output check are kept as the GPU run wrote them."""
    from reorder.binary.cubin import read_cubin
    from reorder.probe.timeline import jumps, plot, points_of, read_csv, write_csv
    from reorder.sass.model import decode_kernel

    manifest = json.loads((folder / "manifest.json").read_text())
    summary = json.loads((out / "probe_summary.json").read_text())
    tables = []
    for name, info in manifest["versions"].items():
        code = decode_kernel(read_cubin(folder / f"{name}.cubin"), KERNEL)
        points = points_of(read_csv(out / f"timeline_{name}.csv"))
        found = jumps(code.instructions, points)
        write_csv(out / f"timeline_{name}.csv", points, found)
        tables.append((name, read_csv(out / f"timeline_{name}.csv")))
        old = summary["versions"][name]
        cost, check = _Kept(old["probe_cost"]), _Kept(old["probed_outputs"])
        summary["versions"][name] = _version_summary(code, info, points, old["failed"], found, cost, check)
    summary["analysis"] = f"jumps re-derived on the CPU at commit {provenance.commit()} from the measured timelines"
    plot(tables, out / "timeline_original_vs_batched.png")
    (out / "probe_summary.json").write_text(json.dumps(summary, indent=1, default=str))
    print(json.dumps(summary, indent=1, default=str))
    return 0


@dataclass(frozen=True)
class _Kept:
    """A measured result carried over from the GPU run (the shape of a worker result)."""

    value: object
    ok: bool = True


def _version_summary(code, info, points, failed, found, cost, check) -> dict:
    first, last = info["pass"]
    measured = sorted(p.index for p in points if p.samples)
    in_pass = [k for k in measured if first <= k <= last]
    load_jumps = []
    for j in found:
        if j.producer_offset is None:
            continue
        producer = j.producer_offset // 16
        if not code.instructions[producer].opcode.startswith(("LDG", "LDS", "LD.", "LDL")):
            continue
        use = first_use(code, producer)
        load_jumps.append(
            {
                "waiter": f"{j.offset:#06x} {j.text}",
                "excess_cycles": round(j.excess, 1),
                "load": f"{j.producer_offset:#06x} {j.producer_text}",
                "first_use": f"{use * 16:#06x}" if use is not None else None,
                "distance": None if use is None else abs(j.index - use),
                "located": use is not None and abs(j.index - use) <= NEAR,
            }
        )
    pass_cycles = [p.cycles for p in points if p.samples and first <= p.index <= last]
    return {
        "pass_instructions": last - first + 1,
        "probed_in_pass": len(in_pass),
        "coverage": round(len(in_pass) / (last - first + 1), 3),
        "failed": failed,
        "pass_span_cycles": (max(pass_cycles) - min(pass_cycles)) if pass_cycles else None,
        "load_jumps": load_jumps,
        "all_located": all(j["located"] for j in load_jumps) if load_jumps else None,
        "probe_cost": cost.value if cost.ok else f"{cost.status}: {cost.reason}",
        "probed_outputs": check.value if check.ok else f"{check.status}: {check.reason}",
        "occupancy": info["occupancy"],
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--prebuild", type=Path)
    ap.add_argument(
        "--batched", type=Path, help="the load-batched cubin (default: reorder batch-loads --assume-noalias)"
    )
    ap.add_argument("--rows", type=int, default=16)
    ap.add_argument("--run", type=Path)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--reanalyse", type=Path, metavar="OUT", help="CPU: recompute jumps from OUT's timeline CSVs")
    args = ap.parse_args()
    if args.reanalyse and args.run:
        return reanalyse(args.run, args.reanalyse)
    if args.prebuild:
        return prebuild(args.prebuild, args.batched, args.rows)
    if args.run and args.out:
        return run(args.run, args.out)
    ap.error("give --prebuild DIR, --run DIR --out OUT, or --run DIR --reanalyse OUT")
    return 2


if __name__ == "__main__":
    sys.exit(main())
