"""`reorder latency-probe`: the stall floor of producer->consumer pairs, measured on the GPU
(and the barrier sweep of legality.silicon.barrier_probe)."""

from __future__ import annotations

import argparse
import sys

from reorder.cli.registry import command


@command("latency-probe", "measure on the GPU the stall floor of producer->consumer pairs (below it results are wrong)")
def _latency_probe():
    def add(p: argparse.ArgumentParser) -> None:
        p.add_argument("--arch", default="sm_90", help="target, e.g. sm_90 (default), sm_100a, sm_103, sm_120")
        p.add_argument("--pairs", help="comma-separated pair names (default: all), e.g. FFMA,DFMA,ISETP->branch")
        p.add_argument(
            "--out",
            help="folder for latency_probe_sm_XX.csv and measured_sm_XX.toml (default: "
            "./latency_probe_sm_XX; REORDER_TABLES=DIR, or a copy in legality/tables/, makes reorder use it)",
        )
        p.add_argument(
            "--build-only",
            action="store_true",
            help="CPU only: compile, locate the chains and write every stall variant, then report",
        )
        p.add_argument("--build-dir", help="where variants are built (default: a temporary folder, or OUT/build)")
        p.add_argument("--from", dest="prebuilt", help="use variants already built into this folder (no nvcc)")
        p.add_argument("--in-process", action="store_true", help="run every pair in this process (no child processes)")
        p.add_argument(
            "--barriers",
            action="store_true",
            help="sweep how soon a memory access may follow BAR.SYNC / BAR.RED and a store precede them "
            "(legality/silicon/barrier_probe.py); with --build-only, list the variants",
        )

    def run(args: argparse.Namespace) -> int:
        from pathlib import Path

        from legality.silicon import latency_probe as lp
        from legality.silicon import probe_chains as pc

        arch, target = _probe_target(args.arch)
        if args.barriers:
            return _barrier_sweep(args, arch, target)
        pairs = pc.selected_pairs(args.pairs)
        names = [p.name for p in pairs]
        if args.build_only:
            folder = Path(args.build_dir or (Path(args.out) / "build" if args.out else pc.scratch_dir()))
            built = pc.build_all(folder, pairs, target)
            for b in built:
                loc = b.located
                if loc.ok:
                    print(
                        f"{b.pair:<16} located  {loc.producer_opcode}->{loc.consumer_opcode} "
                        f"({loc.producer_class}->{loc.consumer_class} {pc.PAIR_BY_NAME[b.pair].kind}), "
                        f"{loc.edges} edges, ptxas stall {sorted(set(loc.ptxas_stalls))}, {len(b.variants)} variants"
                    )
                else:
                    print(f"{b.pair:<16} {loc.reason}")
            print(f"{sum(b.located.ok for b in built)}/{len(built)} pairs located for {target}; variants in {folder}")
            return 0
        lp._cupy()  # no GPU: one line and exit 2, before any compiling
        folder = (
            Path(args.prebuilt)
            if args.prebuilt
            else Path(args.build_dir or (Path(args.out) / "build" if args.out else pc.scratch_dir()))
        )
        if not args.prebuilt:
            pc.build_all(folder, pairs, target)
        out = Path(args.out) if args.out else Path(f"latency_probe_sm_{arch}")  # never the installed package
        if lp.canary_ran(folder, pc.read_manifest(folder).get("canary")) is False:
            print(f"error: {lp.NOT_RUN}", file=sys.stderr)
            return 1
        rows = lp.run_pairs(folder, names, isolate=not args.in_process)
        csv_path, toml_path = out / f"latency_probe_sm_{arch}.csv", out / f"measured_sm_{arch}.toml"
        lp.write_outputs(rows, arch, lp.gpu_name(lp._cupy()), csv_path, toml_path)
        print(lp.table(rows))
        print(f"wrote {csv_path} and {toml_path} (REORDER_TABLES={out} makes reorder use it)")
        unsafe = lp.unsafe_rows(rows)
        for r in unsafe:
            print(
                f"UNSAFE: the verifier accepts {r.pair} at stalls {r.verifier_unsafe}, which gave WRONG results "
                f"on silicon",
                file=sys.stderr,
            )
        return 1 if unsafe else 0

    return run, add


def _probe_target(given: str) -> tuple[int, str]:
    """(arch number, nvcc target) of `--arch` (sm_100a builds for sm_100a; its cubins say sm_100)."""
    from reorder.base.errors import InputError
    from reorder.binary.arches import SUPPORTED_ARCHS, arch_number

    try:
        arch = arch_number(given)
    except ValueError:
        raise InputError(f"--arch {given!r}: expected sm_XX, e.g. sm_90 or sm_100a") from None
    if arch not in SUPPORTED_ARCHS:
        supported = ", ".join(f"sm_{a}" for a in sorted(SUPPORTED_ARCHS))
        raise InputError(f"--arch {given}: reorder does not read sm_{arch} cubins (supported: {supported})")
    name = given.lower()
    return arch, name if name.startswith("sm_") else f"sm_{name}"


def _barrier_sweep(args: argparse.Namespace, arch: int, target: str) -> int:
    """`latency-probe --barriers`: build the barrier variants (and the canary) for `target`; with a
    GPU, byte-check each, print the floor per barrier and side, and write barrier_sweep.csv and
    barriers_sm_XX.toml (the measured distances legality.barriers loads) under --out."""
    import tempfile
    from pathlib import Path

    from legality.silicon import barrier_probe as bp

    with tempfile.TemporaryDirectory() as tmp:
        cubin = bp.probe_cubin(target, Path(args.build_dir or tmp))
        variants = bp.build_variants(cubin)
        if args.build_only:
            for v in variants:
                print(
                    f"{v.kernel:<14} {v.name:<10} {v.barrier:<28} {v.access:<6} "
                    f"{'legal otherwise' if not v.other else 'also breaks: ' + v.other}"
                )
            print(f"{len(variants)} variants for {target} ({cubin.name})")
            return 0
        return _barrier_run(args, arch, cubin, variants, Path(tmp))


def _barrier_run(args: argparse.Namespace, arch: int, cubin, variants, tmp) -> int:
    """The GPU half of `--barriers`: every variant byte-checked at every probe launch."""
    from pathlib import Path

    from legality.silicon import barrier_probe as bp
    from legality.silicon import latency_probe as lp
    from reorder.base.files import write_atomic
    from timing.cli_support import require_gpu
    from timing.worker import WorkerPool

    require_gpu()
    with WorkerPool(devices=[0]) as pool:
        built = []
        for v in variants:
            path = tmp / f"{v.kernel}_{v.name}.cubin"
            path.write_bytes(v.data)
            keys = ("kernel", "side", "cycles", "barrier", "access", "other")
            built.append(({"variant": v.name, **{k: getattr(v, k) for k in keys}}, path))
        rows = bp.run_sweep(cubin, built, pool)
    out = Path(args.out or ".")
    csv_path = write_atomic(out / "barrier_sweep.csv", bp.rows_csv(rows).encode())
    for kernel in bp.KERNELS:
        for side in ("after", "before"):
            print(f"{kernel:<14} {side:<6} floor {bp.floor(rows, kernel, side)}")
    print(f"rows: {csv_path}")
    if not bp.canary_ran(rows):
        print(f"error: {lp.NOT_RUN}", file=sys.stderr)
        return 1
    table = write_atomic(out / f"barriers_sm_{arch}.toml", bp.to_toml(rows, arch, lp.gpu_name(lp._cupy())).encode())
    print(f"wrote {table} (REORDER_TABLES={out} makes reorder use it)")
    return 0
