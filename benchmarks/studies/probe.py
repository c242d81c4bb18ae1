"""The probe timeline of rmsnorm_triton_style on the GPU: original vs load-batched.

Building the probe variants is CPU work (one cubin per probed position, each checked:
originals bit-identical, verifier accepts); running them needs the GPU. So, like the
latency probe, this runs in two steps:

    python -m benchmarks.probe_gpu --prebuild DIR [--batched B.cubin] [--rows 16]   # CPU
    python -m benchmarks.probe_gpu --run DIR --out OUT [--dry-run]                   # GPU
    python -m benchmarks.probe_gpu --run DIR --reanalyse OUT                         # CPU, again

(`python -m benchmarks.studies probe --prepare DIR ...` and `--build DIR --out OUT` the same.)
`--run` writes, for each version, a timeline CSV; one PNG with both overlaid; and
probe_summary.json with what the probe must show: the share of the normalise pass the
probes cover, whether each load-wait jump sits on (or within two instructions of) the
first use of the loaded value, the probe's own cost (paired timing of the kernel with
vs without a mid-pass probe), and a byte check of the probed kernel's outputs against
the original's (the records buffer aside). A dry run measures nothing: each probe's cycles
are the stalls before it plus a made-up wait.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from benchmarks.studies.runner import (
    BuildRecord,
    DryDevice,
    LiveDevice,
    commit,
    declared,
    lanes,
    suite_cubin,
    suite_spec_raw,
    summary_head,
)
from reorder.base import provenance

KERNEL = "rmsnorm_triton_style"
NEAR = 2  # a load-wait jump must sit within this many instructions of the first use
LAUNCHES = 5  # launches whose records each probe's point takes


def normalise_pass(code) -> tuple[int, int]:
    """Instruction indices of the normalise pass: after the guarded EXIT that ends the
    reduction (rows past the grid leave there) up to the kernel's final EXIT."""
    exits = [i for i, ins in enumerate(code.instructions) if ins.opcode == "EXIT"]
    if len(exits) < 2:
        raise ValueError(f"{KERNEL}: expected a guarded EXIT before the normalise pass, found {len(exits)} EXITs")
    return exits[0] + 1, exits[-1]


def first_use(code, producer_index: int) -> int | None:
    """The first instruction after the producer that reads a register the producer writes."""
    written = set(code.instructions[producer_index].access.writes)
    for i in range(producer_index + 1, len(code.instructions)):
        if written & set(code.instructions[i].access.reads):
            return i
    return None


def prepare(folder: Path, args: argparse.Namespace) -> None:
    """The spec at --rows, both versions' cubins and every probe variant of their normalise pass."""
    import tomllib

    from reorder.binary.cubin import read_cubin
    from reorder.build.pipeline import batch_loads
    from reorder.probe.run import build_variants, layout_of
    from reorder.probe.variants import probe_positions
    from reorder.sass.model import decode_kernel
    from reorder.suite.sweep import spec_toml
    from timing.spec import parse_spec

    batched, rows = args.batched, args.rows
    spec_text = spec_toml(suite_spec_raw(KERNEL, {"rows": rows}))
    (folder / "spec.toml").write_text(spec_text)
    spec = parse_spec(tomllib.loads(spec_text), "spec.toml")
    original = suite_cubin(KERNEL)
    shutil.copy(original, folder / "original.cubin")
    if batched is None:
        outcome = batch_loads(decode_kernel(read_cubin(original), KERNEL), True)
        (folder / "batched.cubin").write_bytes(outcome.data)
    else:
        shutil.copy(batched, folder / "batched.cubin")
    manifest: dict = {"commit": commit(), "rows": rows, "versions": {}}
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


def _spec(folder: Path):
    import tomllib

    from timing.spec import parse_spec

    return parse_spec(tomllib.loads((folder / "spec.toml").read_text()), "spec.toml")


class Live(LiveDevice):
    """The probe variants, the probe's cost and the output check in one isolated worker."""

    def measure(self, code, variants: list[tuple[int, Path]], pspec) -> tuple[list, list]:
        from reorder.probe.run import measure_variants

        return measure_variants(self.pool, code, variants, pspec, LAUNCHES, 60)

    def cost_and_check(self, base: Path, probed: Path, pspec) -> tuple[Any, Any]:
        """Paired timing of the kernel against it with one probe, and their outputs compared."""
        from reorder.probe.run import probed_outputs_job
        from timing.evaluate import time_job
        from timing.worker import Job

        a, b = str(base.resolve()), str(probed.resolve())
        cost = self.pool.run(Job.of(time_job, a, b, pspec, budget_s=4.0, timeout_s=120))
        return cost, self.pool.run(Job.of(probed_outputs_job, a, b, pspec, timeout_s=120))


class Dry(DryDevice, Live):
    """No GPU: each probe's cycles the stalls before it plus a made-up wait (not measurements)."""

    def measure(self, code, variants, pspec) -> tuple[list, list]:
        from reorder.probe.timeline import Point

        points = []
        for k, path in variants:
            assert path.is_file(), path
            ins = code.instructions[k]
            cycles = sum(i.ctrl.stall for i in code.instructions[: k + 1]) + 100 * self.made_up(str(k))["ratio"]
            points.append(Point(k, ins.offset, ins.text, ins.ctrl.stall, ins.ctrl.wait, cycles, cycles, cycles, 32))
        return points, []

    def cost_and_check(self, base, probed, pspec) -> tuple[Any, Any]:
        assert base.is_file() and probed.is_file() and pspec.name, (base, probed)
        return _Kept(self.made_up(probed.name)), _Kept("identical (dry run)")


@dataclasses.dataclass
class Rows(BuildRecord):
    prefix: ClassVar[str] = "probe"
    versions: list = dataclasses.field(default_factory=list)
    summary: dict = dataclasses.field(default_factory=dict)
    tables: list = dataclasses.field(default_factory=list)


def one_version(run, rec: Rows, name: str) -> None:
    """One version's probes measured, its jumps found, its timeline written."""
    from reorder.binary.cubin import read_cubin
    from reorder.probe.run import probe_spec
    from reorder.probe.timeline import jumps, read_csv, write_csv
    from reorder.sass.model import decode_kernel

    info = run.manifest["versions"][name]
    base = rec.build / f"{name}.cubin"
    code = decode_kernel(read_cubin(base), KERNEL)
    pspec = probe_spec(_spec(rec.build), info["record_bytes"])
    paths = [rec.build / name / f"{KERNEL}.probe_{k:04d}.cubin" for k in info["positions"]]
    points, failed = rec.device.measure(code, list(zip(info["positions"], paths)), pspec)
    found = jumps(code.instructions, points)
    csv_path = write_csv(rec.out / f"timeline_{name}.csv", points, found)
    rec.tables.append((name, read_csv(csv_path)))
    cost, check = rec.device.cost_and_check(base, paths[len(paths) // 2], pspec)
    rec.summary["versions"][name] = _version_summary(code, info, points, failed, found, cost, check)
    print(json.dumps({name: rec.summary["versions"][name]}, indent=1, default=str), flush=True)
    shown = ("coverage", "probed_in_pass", "all_located", "probed_outputs")
    rec.add("versions", {"version": name, **{k: rec.summary["versions"][name][k] for k in shown}})


def check_and_time(run, rec: Rows) -> None:
    rec.summary |= {**rec.stamps, "kernel": KERNEL, "rows": run.manifest["rows"], "l2": "warm", "versions": {}}
    names = list(run.manifest["versions"])
    lanes(rec, "versions", names, lambda n: one_version(run, rec, n), key=lambda n: {"version": n})
    (rec.out / "probe_summary.json").write_text(json.dumps(rec.summary, indent=1, default=str))


def summary(rec: Rows, out: Path) -> str:
    """The overlaid timelines drawn; per version, what the probe must show."""
    from reorder.probe.timeline import plot

    plot(rec.tables, out / "timeline_original_vs_batched.png")
    columns = ("version", "pass coverage", "load jumps", "all located", "probe cost", "probed outputs")
    lines = summary_head(f"The probe timeline of {KERNEL}", rec.stamps, columns)
    for name, v in rec.summary.get("versions", {}).items():
        cost = v["probe_cost"]
        shown = f"{cost['ratio']:.4f}" if isinstance(cost, dict) and "ratio" in cost else str(cost)
        cells = (name, v["coverage"], len(v["load_jumps"]), v["all_located"], shown, v["probed_outputs"])
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    return "\n".join(lines) + "\n"


def build_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--batched", type=Path, help="the load-batched cubin (default: reorder batch-loads --assume-noalias)"
    )
    p.add_argument("--rows", type=int, default=16, help="the launch's rows")


STUDY = declared(
    __name__,
    name="probe",
    build_dir=Path("gpu_build/probe"),
    deadline_s=1200.0,
)


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


def main(argv: list[str] | None = None) -> int:
    """The study's first command line (--prebuild DIR, --run DIR --out OUT, --run DIR
    --reanalyse OUT) as the runner's; any other line goes to the runner as is."""
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="python -m benchmarks.probe_gpu", add_help=False)
    ap.add_argument("--prebuild", type=Path)
    ap.add_argument("--run", type=Path)
    ap.add_argument("--reanalyse", type=Path, metavar="OUT")
    args, rest = ap.parse_known_args(argv)
    if args.reanalyse and args.run:
        return reanalyse(args.run, args.reanalyse)
    if args.prebuild:
        return STUDY.run(["--prepare", str(args.prebuild), *rest])
    if args.run:
        return STUDY.run(["--build", str(args.run), *rest])
    return STUDY.run(rest)
