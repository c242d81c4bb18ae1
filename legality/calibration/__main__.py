"""Regenerate every ptxas-observed table: write the kernels, compile them, calibrate, write.

    python -m legality.calibration [--work DIR] [--jobs 2] [--kernels 100] [--chains 900] [--loops 450] [--reuse]
    python -m legality.calibration --archs sm_100a,sm_103,sm_120 [--work DIR]   # Blackwell only

Compiles the generated kernels and the project's own CUDA sources (tests/corpus/src,
benchmarks/kernels) for sm_80, sm_86, sm_89, sm_90 and sm_90a at ptxas -O1, -O2 and -O3
(`legality.calibration.build`), then writes legality/tables/ptxas_sm_{80,86,89,90}.toml
(`legality.calibration.calibrate.table_text`). Class-wide entries come from the project's corpora
as checked in (sm_80, sm_90) or, for arches with no checked-in corpus (sm_86, sm_89), from
the same sources built at -O3 for that arch; exact pairs from everything.

`--archs` builds and writes the tables of those arches only (the others stay as they are). An
arch no silicon fact was measured on (`reorder.binary.arches`: Blackwell) first gets its
reference table carried over from its nearest measured family's, each entry raised to the
compiler's own floor on that arch where higher and labelled unmeasured
(`legality.calibration.carry`), then its ptxas-observed table and its issue rates.
"""

from __future__ import annotations

import argparse
import datetime
import resource
import sys
import tempfile
import time
from pathlib import Path

from legality.calibration import carry
from legality.calibration import issue as issue_rates
from legality.calibration.build import ARCHS, GENERATED_ARCHS, GENERATED_LEVELS, OPT_LEVELS, build_all, ptxas_version
from legality.calibration.calibrate import gather, table_text
from legality.calibration.kernels import write_sources
from legality.latency import TABLE_DIR
from reorder.binary.arches import ARCHS as ARCH_INFO
from reorder.binary.arches import arch_number

ROOT = Path(__file__).resolve().parents[2]
PROJECT_SOURCES = {"corpus": ROOT / "tests" / "corpus" / "src", "suite": ROOT / "benchmarks" / "kernels"}
TABLE_ARCHS = (80, 86, 89, 90)
KERNELS = 100
CHAINS = 900
LOOPS = 450
CHECKED_IN = {
    80: ["tests/corpus/cubin/sm_80"],
    90: ["tests/corpus/cubin/sm_90", "benchmarks/kernels/cubin", "tests/corpus/triton/sm_90"],
}


def build(
    work: Path,
    kernels: int,
    chains: int,
    loops: int,
    jobs: int,
    archs: tuple[str, ...] = ARCHS,
    generated_archs: tuple[str, ...] = GENERATED_ARCHS,
    levels: tuple[int, ...] | None = None,
) -> dict[str, int]:
    """Generated and project sources compiled into work/cubin/<group>/<arch>/O<n>/; counts.
    The project's sources for every arch and level; the generated ones without the
    duplicates (GENERATED_ARCHS, GENERATED_LEVELS)."""
    generated = write_sources(work / "src", kernels, chains, loops)
    cubins = len(build_all(generated, work / "cubin" / "generated", generated_archs, levels or GENERATED_LEVELS, jobs))
    project = {name: sorted(folder.glob("*.cu")) for name, folder in PROJECT_SOURCES.items()}
    for name, sources in project.items():
        cubins += len(build_all(sources, work / "cubin" / name, archs, levels or OPT_LEVELS, jobs))
    return {"sources": len(generated) + sum(len(s) for s in project.values()), "cubins": cubins}


def corpus_folders(arch: int, work: Path, built_as: str | None = None) -> list[str]:
    """Where an arch's class-wide entries come from (see the module docstring); `built_as` is
    the target its cubins were compiled for (sm_100a for sm_100)."""
    if arch in CHECKED_IN:
        return [str(ROOT / f) for f in CHECKED_IN[arch]]
    return [str(work / "cubin" / name / (built_as or f"sm_{arch}") / "O3") for name in PROJECT_SOURCES]


def header(args: argparse.Namespace, counts: dict[str, int], archs=ARCHS, generated=GENERATED_ARCHS) -> list[str]:
    """Provenance lines every table carries: what was compiled, with which ptxas, when."""
    levels = args.levels or OPT_LEVELS
    generated_levels = args.levels or GENERATED_LEVELS
    return [
        (
            f"calibration set: {args.kernels} fragment, {args.chains} chain and {args.loops} loop kernels generated "
            f"by legality.calibration "
            f"(seed 14) and the project's own CUDA sources (tests/corpus/src, benchmarks/kernels), "
            f"{counts['sources']} sources -> {counts['cubins']} cubins: the project's for {', '.join(archs)} at "
            f"ptxas -O{', -O'.join(map(str, levels))}, the generated for {', '.join(generated)} at "
            f"-O{', -O'.join(map(str, generated_levels))}"
        ),
        f"toolkit: {ptxas_version()}; generated {datetime.date.today().isoformat()}",
        "regenerate: python -m legality.calibration (legality/calibration/calibrate.py says how)",
    ]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m legality.calibration")
    parser.add_argument("--work", help="folder for sources and cubins (default: a temporary one)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--kernels", type=int, default=KERNELS, help="fragment kernels")
    parser.add_argument("--chains", type=int, default=CHAINS, help="dependency-chain kernels")
    parser.add_argument("--loops", type=int, default=LOOPS, help="loop kernels")
    parser.add_argument("--reuse", action="store_true", help="calibrate the cubins already in --work")
    parser.add_argument("--archs", help="comma-separated targets to build and table, e.g. sm_100a,sm_103,sm_120")
    parser.add_argument("--levels", help="comma-separated ptxas -O levels for every build (default: as above)")
    args = parser.parse_args(argv)
    args.levels = tuple(int(x) for x in args.levels.split(",")) if args.levels else None
    targets = tuple(args.archs.split(",")) if args.archs else None
    builds = targets or ARCHS
    with tempfile.TemporaryDirectory(prefix="reorder-calibration-") as tmp:
        work = Path(args.work or tmp)
        start = time.monotonic()
        gen = targets or GENERATED_ARCHS
        if args.reuse:
            counts = counted(work)
        else:
            counts = build(work, args.kernels, args.chains, args.loops, args.jobs, builds, gen, args.levels)
        print(f"{counts['cubins']} cubins built, {_times(start)}", file=sys.stderr)
        built_as = {arch_number(t): t for t in (targets or ())}
        archs = tuple(sorted(built_as)) if targets else TABLE_ARCHS
        write_tables(work, header(args, counts, builds, gen), args.jobs, archs, built_as)
        print(f"tables written, {_times(start)}", file=sys.stderr)
    return 0


def write_tables(
    work: Path, head: list[str], jobs: int, archs: tuple[int, ...] = TABLE_ARCHS, built_as: dict[int, str] | None = None
) -> None:
    """Verify every distinct kernel once, then write each arch's table from its own cubins (an
    arch never measured on silicon gets its carried reference table first, and issue rates)."""
    built_as = built_as or {}
    extra = [str(work / "cubin")]
    everything = [f for arch in archs for f in corpus_folders(arch, work, built_as.get(arch))]
    evidence = gather(everything, extra, jobs, set(archs))
    for arch in archs:
        corpus = corpus_folders(arch, work, built_as.get(arch))
        carried = ARCH_INFO[arch].silicon is None and ARCH_INFO[arch].family >= 100
        if carried:
            carry.write_reference(arch, evidence, head)
        text = table_text(arch, evidence, corpus, extra, head)
        (TABLE_DIR / f"ptxas_sm_{arch}.toml").write_text(text)
        if carried:  # no checked-in cubins of this arch: its issue rates come from this build
            built = built_as.get(arch, f"sm_{arch}")
            issue_rates.write_table(arch, sorted(Path(extra[0]).glob(f"*/{built}/O*/*.cubin")))


def _times(start: float) -> str:
    """Wall and CPU seconds so far (CPU: this process and its children, nvcc and workers
    included): on a shared machine the wall time says little."""
    cpu = sum(
        getattr(resource.getrusage(who), f)
        for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
        for f in ("ru_utime", "ru_stime")
    )
    return f"{time.monotonic() - start:.0f} s wall, {cpu:.0f} s CPU"


def counted(work: Path) -> dict[str, int]:
    """What an earlier build left in `work` (for --reuse)."""
    return {
        "sources": len(list(work.rglob("*.cu"))) + sum(len(list(f.glob("*.cu"))) for f in PROJECT_SOURCES.values()),
        "cubins": len(list((work / "cubin").rglob("*.cubin"))),
    }


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
