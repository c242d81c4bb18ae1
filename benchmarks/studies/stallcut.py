"""StallCut over the whole corpus on the GPU: stall cycles removed, byte check, paired timing.

    python -m benchmarks.studies stallcut --prepare [--out gpu_build/stallcut] [--kernels a,b]   (CPU, nvdisasm)
    python -m benchmarks.studies stallcut --build gpu_build/stallcut --out OUT [--budget 3] [--dry-run]

Covers the suite kernels (benchmarks/kernels, real launch shapes) and the sm_90 test corpus
kernels with a launch spec (tests/corpus/specs). The CPU side writes each original and cut
cubin and a manifest (stall cycles before and after). The GPU side checks each cut byte for
byte on fresh inputs and times it (paired, CUDA-graph replay, warm L2, 95% CI) in an isolated
worker; a cut that computes different bytes or faults is bisected on the spot
(benchmarks/studies/bisect.py) to name the instruction and the table entry that let it through.
Rows go to OUT/stallcut_kernels.csv, culprits to OUT/culprits.json, the table to
OUT/summary.md; a kernel not begun by the deadline is a row 'skipped: deadline'.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import ClassVar

from benchmarks.studies.runner import (
    SUITE,
    BuildRecord,
    DryDevice,
    LiveDevice,
    commit,
    declared,
    lanes,
    ratio_ci,
    suite_cubin,
    summary_head,
)

CORPUS = Path(__file__).resolve().parent.parent.parent / "tests" / "corpus"
KERNEL_RESERVE_S = 8.0  # a kernel's check and timing beyond its budget
RATIO = "ratio = time(cut) / time(original), paired CUDA-graph replay, warm L2, 95% CI"


def entries() -> list[dict]:
    """(family, kernel, cubin, spec) for every suite and corpus kernel with a launch spec."""
    from reorder.binary.cubin import read_cubin

    out = [
        {"family": "suite", "kernel": p.stem, "cubin": str(suite_cubin(p.stem)), "spec": str(p)}
        for p in sorted((SUITE / "specs").glob("*.toml"))
    ]
    by_kernel = {
        k.name: path for path in sorted((CORPUS / "cubin" / "sm_90").glob("*.cubin")) for k in read_cubin(path).kernels
    }
    for spec in sorted((CORPUS / "specs").glob("*.toml")):
        out.append(
            {
                "family": "corpus",
                "kernel": spec.stem,
                "cubin": str(by_kernel[spec.stem]),
                "spec": str(spec),
                "nondeterministic": spec.read_text().startswith("# nondeterministic"),
            }
        )
    return out


def picked(args: argparse.Namespace) -> list[dict]:
    """The entries --kernels names (all without it); ValueError naming one that has no spec."""
    found = entries()
    wanted = [k for k in args.kernels.split(",") if k]
    unknown = sorted(set(wanted) - {e["kernel"] for e in found})
    if unknown:
        raise ValueError(f"no launch spec for: {', '.join(unknown)}")
    return [e for e in found if e["kernel"] in wanted] if wanted else found


def build_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kernels", default="", help="comma list of kernels to build (default: every one with a spec)")


def prepare(folder: Path, args: argparse.Namespace) -> None:
    """Every kernel's original and stall-cut cubin, and the manifest."""
    from reorder.base.files import write_atomic
    from reorder.binary.cubin import read_cubin
    from reorder.build.pipeline import cut_stalls
    from reorder.sass.model import decode_kernel

    manifest = []
    for e in picked(args):
        code = decode_kernel(read_cubin(e["cubin"]), e["kernel"])
        cut = cut_stalls(code)
        name = f"{e['family']}_{e['kernel']}"
        write_atomic(folder / f"{name}_orig.cubin", Path(e["cubin"]).read_bytes())
        write_atomic(folder / f"{name}_cut.cubin", cut.data)
        before = sum(i.ctrl.stall for i in code.instructions)
        after = sum(i.ctrl.stall for i in cut.after.instructions)
        manifest.append({**e, "name": name, "stall_before": before, "stall_after": after})
        print(f"{name:40s} {before:6d} -> {after:6d}", flush=True)
    (folder / "manifest.json").write_text(json.dumps({"commit": commit(), "kernels": manifest}, indent=1))


class Live(LiveDevice):
    """Jobs in one isolated worker process on the GPU (a fault costs one job)."""

    def check_and_time(self, a: Path, b: Path, spec, budget_s: float) -> dict:
        return self.job("timing.evaluate:check_and_time_job", str(a), str(b), spec, timeout_s=180, budget_s=budget_s)

    def bisect(self, kernel: str, original: Path, cut: Path, spec) -> list[dict]:
        """The stall changes that make the cut wrong, located on the GPU (benchmarks/studies/bisect.py)."""
        from benchmarks.studies.bisect import _Checker, bisect_stall_cut
        from reorder.binary.cubin import read_cubin
        from reorder.sass.model import decode_kernel

        checker = _Checker(self.pool, kernel, Path("/tmp/bisect"), [], cubin=original, spec=spec)
        return bisect_stall_cut(checker, decode_kernel(read_cubin(cut), kernel).instructions, max_culprits=3)


class Dry(DryDevice, Live):
    """No GPU: made-up ratios from the files' names (not measurements), so every step is walked."""

    def check_and_time(self, a, b, spec, budget_s) -> dict:
        assert Path(a).is_file() and Path(b).is_file() and spec.name, (a, b)
        return {"status": "ok", "check": "identical", "check_detail": "dry run", **self.made_up(Path(b).name)}

    def bisect(self, kernel, original, cut, spec) -> list[dict]:
        return []


@dataclasses.dataclass
class Rows(BuildRecord):
    prefix: ClassVar[str] = "stallcut"
    kernels: list = dataclasses.field(default_factory=list)
    culprits: list = dataclasses.field(default_factory=list)


def one_kernel(run, rec: Rows, e: dict) -> None:
    """Check and time one cut; bisect it when it is wrong (a nondeterministic kernel excepted)."""
    from timing.cli_support import validated_spec

    orig, cut = rec.build / f"{e['name']}_orig.cubin", rec.build / f"{e['name']}_cut.cubin"
    spec = validated_spec(e["spec"], [orig])
    fields = {k: e[k] for k in ("family", "kernel", "stall_before", "stall_after")}
    if e["stall_before"] == e["stall_after"]:
        rec.add("kernels", {**fields, "status": "no stall removed"})
        return
    row = {**fields, "l2": "warm", **rec.device.check_and_time(orig, cut, spec, run.args.budget)}
    rec.add("kernels", row)
    run.log(f"{e['kernel']}: {row.get('status')} {row.get('check')} {row.get('ratio')}")
    wrong = row.get("status") != "ok" or row.get("check") not in ("identical", None)
    if wrong and "not deterministic" not in str(row.get("check_detail", "")):
        rec.culprits += rec.device.bisect(e["kernel"], orig, cut, spec)
        (rec.out / "culprits.json").write_text(json.dumps(rec.culprits, indent=1))


def check_and_time(run, rec: Rows) -> None:
    lanes(
        rec,
        "kernels",
        run.manifest["kernels"],
        lambda e: one_kernel(run, rec, e),
        key=lambda e: {"family": e["family"], "kernel": e["kernel"]},
        reserve_s=run.args.budget + KERNEL_RESERVE_S,
    )


def summary(rec: Rows, out: Path) -> str:
    columns = ("family", "kernel", "stall cycles", "status", "check", "ratio [95% CI]")
    lines = summary_head("StallCut over the suite and the corpus", rec.stamps, columns, RATIO)
    for r in rec.kernels:
        stalls = f"{r.get('stall_before', '-')} -> {r.get('stall_after', '-')}"
        cells = (r["family"], r["kernel"], stalls, r.get("status"), r.get("check", "-"), ratio_ci(r))
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    lines += ["", f"culprits located: {len(rec.culprits)} (culprits.json)"] if rec.culprits else []
    return "\n".join(lines) + "\n"


STUDY = declared(
    __name__,
    name="stallcut",
    build_dir=Path("gpu_build/stallcut"),
    deadline_s=400.0,
    options=lambda p: p.add_argument("--budget", type=float, default=3.0, help="seconds of paired timing per kernel"),
)
