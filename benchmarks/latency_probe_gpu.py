"""Run the latency probe for every pair and write the CSV + measured table (the lead runs this).

CPU (needs nvcc and nvdisasm; no GPU):
    python -m benchmarks.latency_probe_gpu --prebuild benchmarks/results/latency_probe_build
GPU (needs cupy; no nvcc):
    python -m benchmarks.latency_probe_gpu --run benchmarks/results/latency_probe_build --out OUTDIR
Both at once on a GPU machine with nvcc:
    python -m benchmarks.latency_probe_gpu --out OUTDIR

OUTDIR receives latency_probe_sm_90.csv and measured_sm_90.toml (copy them to
benchmarks/results/ and legality/tables/). Each pair runs in its own child process
(`--in-process` to turn that off). Exit 1 if the verifier accepted a stall that was
WRONG on silicon, 2 when there is no GPU or the build folder is unusable.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from reorder.base.errors import ReorderError


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.latency_probe_gpu", description=__doc__.splitlines()[0])
    ap.add_argument("--arch", type=int, default=90)
    ap.add_argument("--pairs", help="comma-separated pair names (default: all)")
    ap.add_argument("--prebuild", metavar="DIR", help="CPU: compile and write every variant into DIR, then stop")
    ap.add_argument("--run", metavar="DIR", help="GPU: probe the variants prebuilt in DIR")
    ap.add_argument("--out", metavar="OUTDIR", help="where the CSV and the measured toml go")
    ap.add_argument("--in-process", action="store_true", help="no child process per pair")
    args = ap.parse_args(argv)
    try:
        return _main(args)
    except ReorderError as exc:
        print(f"latency_probe_gpu: error: {exc}", file=sys.stderr)
        return exc.exit_code


def _main(args: argparse.Namespace) -> int:
    from legality.silicon import latency_probe as lp
    from legality.silicon import probe_chains as pc

    pairs = pc.selected_pairs(args.pairs)
    if args.prebuild:
        t0 = time.time()
        built = pc.build_all(args.prebuild, pairs, args.arch)
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
        print(
            f"{sum(b.located.ok for b in built)}/{len(built)} pairs located in {time.time() - t0:.0f}s; "
            f"variants in {args.prebuild}"
        )
        return 0
    if not args.out:
        print("latency_probe_gpu: error: --out OUTDIR is required with --run (or without --prebuild)", file=sys.stderr)
        return 2
    cp = lp._cupy()
    folder = Path(args.run) if args.run else Path(args.out) / "build"
    if not args.run:
        pc.build_all(folder, pairs, args.arch)
    t0 = time.time()
    rows = lp.run_pairs(folder, [p.name for p in pairs], isolate=not args.in_process)
    out = Path(args.out)
    csv_path, toml_path = out / f"latency_probe_sm_{args.arch}.csv", out / f"measured_sm_{args.arch}.toml"
    lp.write_outputs(rows, args.arch, lp.gpu_name(cp), csv_path, toml_path)
    print(lp.table(rows))
    print(f"probed {len(rows)} pairs in {time.time() - t0:.0f}s on {lp.gpu_name(cp)}; wrote {csv_path}, {toml_path}")
    unsafe = lp.unsafe_rows(rows)
    for r in unsafe:
        print(
            f"!!! UNSAFE: the verifier accepts {r.pair} at stalls {r.verifier_unsafe}, WRONG on silicon !!!",
            file=sys.stderr,
        )
    return 1 if unsafe else 0


if __name__ == "__main__":
    sys.exit(main())
