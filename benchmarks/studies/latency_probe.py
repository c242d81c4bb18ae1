"""Run the latency probe for every pair and write the CSV + measured table.

CPU (needs nvcc and nvdisasm; no GPU):
    python -m benchmarks.latency_probe_gpu --prebuild benchmarks/results/latency_probe_build
GPU (needs cupy; no nvcc):
    python -m benchmarks.latency_probe_gpu --run benchmarks/results/latency_probe_build --out OUTDIR
Both at once on a GPU machine with nvcc:
    python -m benchmarks.latency_probe_gpu --out OUTDIR
(`python -m benchmarks.studies latency_probe --prepare DIR` and `--build DIR --out OUTDIR` the same.)

OUTDIR receives latency_probe_sm_90.csv and measured_sm_90.toml (copy them to
benchmarks/results/ and legality/tables/). Each pair runs in its own child process
(`--in-process` to turn that off). Exit 1 if the verifier accepted a stall that was
WRONG on silicon, 4 when there is no GPU, 2 when the build folder is unusable. A dry run
(`--dry-run`) launches nothing: each located pair's stalls are made up correct exactly
where the verifier accepts them.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path
from typing import ClassVar

from benchmarks.studies.runner import BuildRecord, DryDevice, LiveDevice, declared, lanes
from reorder.base.errors import ReorderError


def build_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--arch", type=int, default=90, help="the SM the chains are compiled for")
    p.add_argument("--pairs", help="comma-separated pair names (default: all)")


def prepare(folder: Path, args: argparse.Namespace) -> None:
    """Compile and write every variant of the chosen pairs into `folder`, with its manifest."""
    from legality.silicon import probe_chains as pc

    t0 = time.time()
    built = pc.build_all(folder, pc.selected_pairs(args.pairs), args.arch)
    for b in built:
        loc = b.located
        accepted = [s for s, ok in b.verifier_ok.items() if ok]
        verdict = f"verifier accepts stall >= {min(accepted)}" if accepted else "verifier accepts none"
        what = (
            f"{loc.producer_opcode}->{loc.consumer_opcode} ({loc.producer_class}->{loc.consumer_class}), "
            f"{loc.edges} edges, ptxas {sorted(set(loc.ptxas_stalls))}, {len(b.variants)} variants, {verdict}"
            if loc.ok
            else (b.error or loc.reason)
        )
        print(f"{b.pair:<16} {what}")
    located = sum(b.located.ok for b in built)
    print(f"{located}/{len(built)} pairs located in {time.time() - t0:.0f}s; variants in {folder}")


class Live(LiveDevice):
    """Each pair probed by legality.silicon.latency_probe (in a child process of its own unless
    --in-process); no worker pool."""

    def __init__(self) -> None:
        from legality.silicon import latency_probe as lp

        self.pool = None
        self.cp = lp._cupy()  # no GPU: a ReorderError, one line

    def close(self) -> None:
        pass

    def gpu_name(self) -> str:
        from legality.silicon import latency_probe as lp

        return lp.gpu_name(self.cp)

    def probe(self, folder: Path, name: str, isolate: bool):
        from legality.silicon import latency_probe as lp

        return lp.run_pairs(folder, [name], isolate=isolate)


class Dry(DryDevice, Live):
    """No GPU: a located pair is 'measured' with its stalls correct exactly where the verifier
    accepts them (made up, never a measurement); an unlocated one is as the probe reports it."""

    def probe(self, folder: Path, name: str, isolate: bool):
        from collections import Counter

        from legality.silicon import latency_probe as lp

        (entry,) = [e for e in lp.read_manifest(folder)["pairs"] if e["pair"] == name]
        if not entry["located"]:
            return [lp.probe_pair(entry, folder)]
        assert all((folder / p).is_file() for p in entry["variants"].values()), name
        accepted = sorted(int(s) for s, ok in entry["verifier_ok"].items() if ok)
        stalls = sorted(int(s) for s in entry["variants"])
        row = lp.PairResult(name, "measured" if accepted else "no floor", kind=entry["kind"], note="dry run")
        row.producer, row.consumer = entry["producer_opcode"], entry["consumer_opcode"]
        row.producer_class, row.consumer_class = entry["producer_class"], entry["consumer_class"]
        row.edges, row.ptxas_stall = entry["edges"], Counter(entry["ptxas_stalls"]).most_common(1)[0][0]
        row.correct_stalls, row.verifier_accepted = accepted, accepted
        row.wrong_stalls = [s for s in stalls if s not in accepted]
        row.floor = accepted[0] if accepted else None
        return [row]


@dataclasses.dataclass
class Rows(BuildRecord):
    prefix: ClassVar[str] = "latency_probe"
    pairs: list = dataclasses.field(default_factory=list)
    results: list = dataclasses.field(default_factory=list)


def check_and_time(run, rec: Rows) -> None:
    """Every chosen pair probed, then the CSV and the measured table written."""
    from legality.silicon import latency_probe as lp
    from legality.silicon import probe_chains as pc

    names = [p.name for p in pc.selected_pairs(run.args.pairs)]
    t0 = time.time()

    def one(name: str) -> None:
        found = rec.device.probe(rec.build, name, not run.args.in_process)
        rec.results += found
        rec.add("pairs", {"pair": name, "status": ",".join(r.status for r in found)})

    located = {e["pair"] for e in run.manifest["pairs"]}
    lanes(rec, "pairs", [n for n in names if n in located], one, key=lambda n: {"pair": n})
    arch = run.args.arch
    csv_path, toml_path = rec.out / f"latency_probe_sm_{arch}.csv", rec.out / f"measured_sm_{arch}.toml"
    lp.write_outputs(rec.results, arch, rec.stamps["gpu"], csv_path, toml_path)
    print(lp.table(rec.results))
    took = time.time() - t0
    print(f"probed {len(rec.results)} pairs in {took:.0f}s on {rec.stamps['gpu']}; wrote {csv_path}, {toml_path}")
    for r in lp.unsafe_rows(rec.results):
        print(
            f"!!! UNSAFE: the verifier accepts {r.pair} at stalls {r.verifier_unsafe}, WRONG on silicon !!!",
            file=sys.stderr,
        )


def summary(rec: Rows, out: Path) -> str:
    from legality.silicon import latency_probe as lp

    stamps = rec.stamps
    head = f"# The latency probe ({stamps['gpu']}, {stamps['date']}, built at {stamps['commit']})"
    unsafe = lp.unsafe_rows(rec.results)
    return f"{head}\n\n{lp.table(rec.results)}\n\nunsafe pairs (verifier accepts, WRONG on silicon): {len(unsafe)}\n"


def options(p: argparse.ArgumentParser) -> None:
    build_options(p)
    p.add_argument("--in-process", action="store_true", help="no child process per pair")


STUDY = declared(
    __name__,
    name="latency_probe",
    build_dir=Path("benchmarks/results/latency_probe_build"),
    deadline_s=3600.0,
    verdict=lambda rec: 1 if any(r.verifier_unsafe for r in rec.results) else 0,  # type: ignore[attr-defined]
)


def main(argv: list[str] | None = None) -> int:
    """The study's first command line (--prebuild DIR; --run DIR --out OUTDIR; --out OUTDIR
    alone builds into OUTDIR/build, then probes) as the runner's."""
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="python -m benchmarks.latency_probe_gpu", description=__doc__.splitlines()[0])
    ap.add_argument("--prebuild", metavar="DIR", help="CPU: compile and write every variant into DIR, then stop")
    ap.add_argument("--run", metavar="DIR", help="GPU: probe the variants prebuilt in DIR")
    ap.add_argument("--out", metavar="OUTDIR", help="where the CSV and the measured toml go")
    ap.add_argument("--dry-run", action="store_true", help="no GPU: made-up results, every step walked")
    args, rest = ap.parse_known_args(argv)
    if args.prebuild:
        return STUDY.run(["--prepare", args.prebuild, *rest])
    if not args.out:
        print("latency_probe_gpu: error: --out OUTDIR is required with --run (or without --prebuild)", file=sys.stderr)
        return 2
    dry = ["--dry-run"] if args.dry_run else []
    try:
        if not args.dry_run:
            Live()  # no GPU: one line and its exit code before anything is read or built
        if not args.run:
            args.run = str(Path(args.out) / "build")
            if STUDY.run(["--prepare", args.run, *[a for a in rest if a != "--in-process"]]) != 0:
                return 2
    except ReorderError as exc:
        print(f"latency_probe_gpu: error: {exc}", file=sys.stderr)
        return exc.exit_code
    return STUDY.run(["--build", args.run, "--out", args.out, *dry, *rest])
