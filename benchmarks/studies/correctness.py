"""GPU evidence for the race checks: barrier sweeps, the race reproduced, optimize winners re-checked.

CPU (nvdisasm): `python -m benchmarks.correctness_gpu prepare DIR` (or `python -m
benchmarks.studies correctness --prepare DIR`) builds every variant (barrier probes, the
rmsnorm reproduction) and writes every suite kernel's launch spec at each of its sweep points.
GPU:

    python -m benchmarks.correctness_gpu barrier DIR --out OUT [--dry-run]
    python -m benchmarks.correctness_gpu optimize DIR --out OUT --kernels a,b [--budget 40] [--dry-run]

(`python -m benchmarks.studies correctness --build DIR --part barrier|optimize ...` the same.)

`barrier`: each probe variant against the compiler's cubin over 2048 blocks of 1024 threads
(reading a thread of the next warp and one of another half of the block) and over one
block, 8 fresh input sets each, shared memory poisoned before every launch; the rmsnorm
reproduction (the barrier's stall lowered so the LDS behind it issues 4 or 5 cycles after
it) at 1 row without and with poisoning, and at 4, 16 and 512 rows. Rows: OUT/barrier_sweep.csv.
`optimize`: `reorder optimize` tuned at one point with `--check-launch` at every sweep point,
then the written output checked again here, independently, at every point on 20 input sets
never used. Rows: OUT/optimize_<kernels>.csv, each kernel's log and report in OUT/KERNEL/.
A dry run checks nothing on silicon (every check 'identical', made up) and stands the
original in for the search's output.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, ClassVar

from benchmarks.studies.runner import (
    SUITE,
    BuildRecord,
    DryDevice,
    ProcessDevice,
    commit,
    copy_report,
    declared,
    lanes,
    optimize_command,
    suite_cubin,
    suite_spec_raw,
    summary_head,
)

PROBE_SETS = 8
REPRO_STALLS = (4, 5, 6)  # 6 is the compiler's (control)
REPRO_ROWS = (1, 4, 16, 512)
RECHECK_SETS = 20
CHECK_RESERVE_S = 5.0  # what one byte check needs; a row is not begun with less left
SEARCH_SLACK_S = 60.0  # a kernel's search and re-check beyond its --seconds
PARTS = ("prepare", "barrier", "optimize")
# (kernel, the point it is tuned at or None for the spec's own launch, assume noalias)
TUNED = {"rmsnorm_triton_style": ({"rows": 1}, True), "rms_norm_f32": (None, True)}


# ---------------------------------------------------------------- CPU side


def prepare(folder: Path, args: argparse.Namespace | None = None) -> None:
    """Build the probe variants and the reproduction; write each suite kernel's specs."""
    from legality.silicon.barrier_probe import PROBES_CUBIN, build_variants

    manifest = []
    shutil.copy(PROBES_CUBIN, folder / "probe_orig.cubin")
    for v in build_variants(PROBES_CUBIN):
        name = f"probe_{v.kernel}_{v.name}.cubin"
        (folder / name).write_bytes(v.data)
        fields = {"kind": "probe", "kernel": v.kernel, "variant": v.name, "side": v.side, "cycles": v.cycles}
        manifest.append({**fields, "barrier": v.barrier, "access": v.access, "other": v.other, "file": name})
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
        fields = {"kind": "repro", "kernel": "rmsnorm_triton_style", "variant": f"bar_stall_{stall}"}
        out.append({**fields, "cycles": stall, "verifier": verdict, "file": name})
    shutil.copy(cubin, folder / "repro_orig.cubin")
    return out


def _write_point_specs(spec: Path, folder: Path) -> None:
    """The spec's own launch as default.toml and one file per sweep point."""
    import tomllib

    from reorder.suite.sweep import spec_toml, sweep_points

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "default.toml").write_text(spec_toml(suite_spec_raw(spec.stem, path=spec)))
    for point in sweep_points(tomllib.loads(spec.read_text())):
        (folder / (_point_name(point) + ".toml")).write_text(spec_toml(suite_spec_raw(spec.stem, point, spec)))


def _point_name(point: dict) -> str:
    return "_".join(f"{k}{v}" for k, v in sorted(point.items()))


# ---------------------------------------------------------------- GPU side


class Live(ProcessDevice):
    """Byte checks in one isolated worker, started at the first check (after any search, which
    has the GPU to itself); the search as a subprocess."""

    def check(self, a: Path, b: Path, spec, timeout_s: float, **kw: Any) -> dict:
        return self.job("timing.evaluate:check_job", str(a), str(b), spec, timeout_s=timeout_s, **kw)

    def optimize(self, cmd: list[str], cubin: Path, fast: Path, log: Path) -> int:
        """The search's exit code, what it said streamed into `log` (a run cut by an outer
        timeout still shows how far it got)."""
        with log.open("w") as sink:
            return subprocess.run(cmd, stdout=sink, stderr=subprocess.STDOUT, text=True, check=False).returncode


class Dry(DryDevice, Live):
    """No GPU: every check 'identical' (not a measurement); the original stands in for the search's output."""

    def check(self, a, b, spec, timeout_s, **kw) -> dict:
        assert Path(a).is_file() and Path(b).is_file() and spec.name, (a, b)
        return {"status": "ok", "check": "identical", "check_detail": "dry run"}

    def optimize(self, cmd, cubin, fast, log) -> int:
        assert all(Path(cmd[k + 1]).is_file() for k, w in enumerate(cmd) if w in ("--launch", "--check-launch")), cmd
        fast.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(cubin, fast)
        log.write_text("dry run: no search\n")
        return 0


@dataclasses.dataclass
class Rows(BuildRecord):
    prefix: ClassVar[str] = "correctness"
    barrier: list = dataclasses.field(default_factory=list)
    optimize: list = dataclasses.field(default_factory=list)


def record(run) -> Rows:
    """The record, its tables in the files the study always wrote."""
    rec = Rows(run.args.build, run.args.out, run.deadline, run.device, run.stamps)
    kernels = "_".join(k for k in run.args.kernels.split(",") if k)[:60]
    rec.files = {"barrier": "barrier_sweep.csv", "optimize": f"optimize_{kernels}.csv"}
    return rec


def _launches(folder: Path, e: dict):
    """(label, spec, poison) of each launch an entry is checked at."""
    if e["kind"] == "probe":
        from legality.silicon.barrier_probe import probe_launches

        for label, spec in probe_launches(e["kernel"]):
            yield label, spec, True
        return
    from reorder.suite.sweep import spec_toml
    from timing.spec import load_spec

    specs = folder / "specs" / "rmsnorm_triton_style"
    yield "rows 1 (no poison)", load_spec(specs / "rows1.toml"), False
    for rows in REPRO_ROWS:
        path = specs / f"rows{rows}.toml"
        if not path.exists():
            path.write_text(spec_toml(suite_spec_raw("rmsnorm_triton_style", {"rows": rows})))
        yield f"rows {rows}", load_spec(path), True


def one_entry(run, rec: Rows, e: dict) -> None:
    """One probe variant or reproduction checked at each of its launches."""
    reference = rec.build / ("probe_orig.cubin" if e["kind"] == "probe" else "repro_orig.cubin")
    for launch, spec, poison in _launches(rec.build, e):
        fields = {"l2": "n/a (byte checks)", **{k: v for k, v in e.items() if k != "file"}, "launch": launch}
        res = rec.device.check(reference, rec.build / e["file"], spec, 120, sets=PROBE_SETS, poison_shared=poison)
        rec.add("barrier", {**fields, "poisoned": poison, **res})
        shown = ("kernel", "variant", "launch", "poisoned", "status", "check")
        print(json.dumps({k: rec.barrier[-1].get(k) for k in shown}), flush=True)


def one_kernel(run, rec: Rows, kernel: str) -> None:
    """Search one kernel with every sweep point checked, then check the output again here."""
    from reorder.optimize import recheck_first_set
    from timing.cli_support import validated_spec

    args = run.args
    cubin = suite_cubin(kernel)
    specs = rec.build / "specs" / kernel
    point, noalias = TUNED.get(kernel, (None, False))
    tuned = specs / (f"{_point_name(point)}.toml" if point else "default.toml")
    points = sorted(p for p in specs.glob("*.toml") if p.name != "default.toml")
    fast = args.work / kernel / "fast.cubin"
    fast.parent.mkdir(parents=True, exist_ok=True)
    cmd = optimize_command(
        cubin,
        kernel,
        fast,
        "--no-contributions",
        *(x for p in points for x in ("--check-launch", str(p))),
        *(["--assume-noalias"] if noalias else []),
        launch=tuned,
        budget=args.budget,
        time=f"{args.seconds}s",
        jobs=args.jobs,
        device="gpu",
        candidate_budget=0.6,
        final_budget=2,
    )
    started = time.monotonic()
    dest = rec.out / kernel
    dest.mkdir(parents=True, exist_ok=True)
    rc = rec.device.optimize(cmd, cubin, fast, dest / "optimize.log")
    elapsed = round(time.monotonic() - started, 1)
    said = (dest / "optimize.log").read_text(errors="replace")
    print(said[-2500:], flush=True)
    copy_report(fast, dest, ("report.md", "trials.csv", "changes.diff"))
    changed = fast.exists() and fast.read_bytes() != cubin.read_bytes()
    meta = {"l2": "warm", "kernel": kernel, "tuned_at": tuned.stem, "optimize_rc": rc, "optimize_s": elapsed}
    meta["changed"] = changed
    if not fast.exists():
        rec.add("optimize", {**meta, "point": "-", "status": "no output", "reason": said.strip().splitlines()[-1:]})
        return
    first = recheck_first_set()
    for p in points or [tuned]:
        spec = validated_spec(p, [cubin], kernel)
        res = rec.device.check(cubin, fast, spec, 600, sets=RECHECK_SETS, first_set=first)
        rec.add("optimize", {**meta, "point": p.stem, "grid": math.prod(spec.grid), **res})
        print(json.dumps({k: rec.optimize[-1].get(k) for k in ("kernel", "point", "status", "check")}), flush=True)
    rec.device.release()  # the next kernel's search has the GPU to itself


def check_and_time(run, rec: Rows) -> None:
    if run.args.part == "barrier":
        entries = run.manifest["entries"]
        key = lambda e: {k: e.get(k) for k in ("kind", "kernel", "variant")}  # noqa: E731
        lanes(rec, "barrier", entries, lambda e: one_entry(run, rec, e), key=key, reserve_s=CHECK_RESERVE_S)
        return
    kernels = [k for k in run.args.kernels.split(",") if k]
    lanes(
        rec,
        "optimize",
        kernels,
        lambda k: one_kernel(run, rec, k),
        key=lambda k: {"kernel": k},
        reserve_s=run.args.seconds + SEARCH_SLACK_S,
    )


def summary(rec: Rows, out: Path) -> str:
    """Per (part, kernel, variant or point): how many checks, how many identical, what else."""
    columns = ("part", "kernel", "variant or point", "checks", "identical", "other outcomes")
    lines = summary_head("Race checks on silicon", rec.stamps, columns)
    groups: dict[tuple, list] = {}
    for part, rows in (("barrier", rec.barrier), ("optimize", rec.optimize)):
        for r in rows:
            groups.setdefault((part, r.get("kernel"), r.get("variant") or r.get("point")), []).append(r)
    for (part, kernel, what), rows in groups.items():
        same = sum(r.get("check") == "identical" for r in rows)
        others = sorted({str(r.get("check") or r.get("status")) for r in rows if r.get("check") != "identical"})
        lines.append(f"| {part} | {kernel} | {what} | {len(rows)} | {same} | {', '.join(others) or '-'} |")
    return "\n".join(lines) + "\n"


def options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--part", choices=PARTS[1:], default="barrier", help="which GPU side runs")
    p.add_argument("--kernels", default="", help="comma list of suite kernels to search (part optimize)")
    p.add_argument("--budget", type=int, default=40, help="trials of each search")
    p.add_argument("--seconds", type=int, default=120, help="seconds of each search")
    p.add_argument("--jobs", type=int, default=14, help="builds in parallel in each search")
    p.add_argument("--work", type=Path, default=Path("/tmp/correctness_gpu"), help="where the searches write")


STUDY = declared(
    __name__,
    name="correctness",
    record=record,
    build_dir=Path("gpu_build/correctness"),
    deadline_s=3600.0,
)


def main(argv: list[str] | None = None) -> int:
    """The study's first command line, `PART FOLDER [options]` (PART prepare, barrier or
    optimize; --out defaults to ./out), as the runner's; any other line goes to the runner as is."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) < 2 or argv[0] not in PARTS:
        return STUDY.run(argv)
    part, folder, rest = argv[0], argv[1], argv[2:]
    if part == "prepare":
        return STUDY.run(["--prepare", folder])
    return STUDY.run(["--build", folder, "--part", part, *(rest if "--out" in rest else [*rest, "--out", "out"])])
