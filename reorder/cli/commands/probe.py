"""`reorder probe`: the sliding clock probe, one variant per instruction position -> timeline CSV."""

from __future__ import annotations

import argparse

from reorder.binary.cubin import read_cubin
from reorder.cli.kernelpick import pick_kernel
from reorder.cli.options import kernel_name
from reorder.cli.registry import command
from reorder.sass.model import decode_kernel


@command("probe", "sliding clock probe: one variant per instruction position -> timeline CSV with jumps explained")
def _probe():
    def add(p: argparse.ArgumentParser) -> None:
        p.add_argument("cubin")
        p.add_argument(
            "--launch",
            required=True,
            metavar="SPEC.toml",
            help="launch spec (grid and block shape the record addresses)",
        )
        p.add_argument("--kernel", type=kernel_name, help="kernel name (default: the spec's)")
        p.add_argument("--range", metavar="C0-D40", help="hex byte offsets of the instructions to probe after")
        p.add_argument("--build-only", metavar="DIR", help="CPU only: write and check every variant into DIR")
        p.add_argument("-o", "--output", default="timeline.csv", help="timeline CSV (default timeline.csv)")
        p.add_argument("--launches", type=int, default=5, help="launches per variant (default 5)")
        p.add_argument("--no-cost", action="store_true", help="skip timing the probe's own cost")
        p.add_argument(
            "--stamps",
            metavar="OFF,OFF",
            help="region stamps instead of the sliding probe: a global-timer, clock and "
            "global-timer read (with SM id, per warp) after each listed hex offset; -o names the CSV",
        )
        from reorder.cli.hostclock import HOST_CLOCK_HELP

        p.add_argument("--host-clock", action="store_true", help=HOST_CLOCK_HELP)

    def run(args: argparse.Namespace) -> int:
        import tempfile
        from pathlib import Path

        from reorder.base.errors import InputError
        from reorder.probe import run as tp
        from reorder.probe.variants import barrier_neighbours, parse_range, probe_positions
        from timing import cli_support as cs

        if args.launches < 1:
            raise InputError(f"--launches must be at least 1, got {args.launches}")
        spec = cs.validated_spec(args.launch, [args.cubin], pick_kernel(args, args.kernel))
        if args.host_clock and not args.stamps:
            raise InputError("--host-clock puts region stamps on the host clock: give --stamps too")
        if args.stamps:
            return _region_stamps(args, spec)
        code = decode_kernel(read_cubin(args.cubin), spec.name)
        first, last = parse_range(args.range, code) if args.range else (0, None)
        positions = probe_positions(code, first, last)
        if not positions:
            raise InputError(f"{args.cubin}: no instruction to probe in {args.range or 'the kernel'}")
        beside = barrier_neighbours(code, first, last)
        if beside:
            named = ", ".join(f"{code.instructions[k].offset:#06x} {code.instructions[k].opcode}" for k in beside[:4])
            more = f" and {len(beside) - 4} more" if len(beside) > 4 else ""
            print(f"not probed after {len(beside)} instructions beside barriers kept as compiled: {named}{more}")
        if args.build_only:
            built = tp.build_variants(code, positions, tp.layout_of(spec), Path(args.build_only))
            print(built[0][2].occupancy.line())
            print(
                f"{code.kernel.name}: {len(built)} probe variants in {args.build_only} "
                f"(originals bit-identical, verifier: legal)"
            )
            return 0
        cs.require_gpu()
        folder = Path(tempfile.mkdtemp(prefix="reorder-probe-"))
        result = tp.run_probe(args.cubin, spec, folder, first, last, args.launches, time_cost=not args.no_cost)
        from reorder.probe.timeline import write_csv

        write_csv(args.output, result.points, result.found)
        print(result.occupancy)
        for j in result.found:
            source = f", waited for {j.producer_offset:#06x} {j.producer_text}" if j.producer_offset is not None else ""
            print(f"jump +{j.excess:.0f} cycles at {j.offset:#06x} {j.text}{source}")
        for k, reason in result.failed:
            print(f"position {k}: {reason}")
        if result.cost:
            print(f"probe cost: {result.cost}")
        print(f"wrote {args.output}")
        return 1 if result.failed else 0

    return run, add


def _region_stamps(args: argparse.Namespace, spec) -> int:
    """`reorder probe --stamps`: build (and with a GPU, run) the region-stamp variant."""
    import csv
    import io
    from pathlib import Path

    from reorder.base.errors import InputError
    from reorder.base.files import write_atomic
    from reorder.probe import run as tp
    from reorder.probe.variants import build_stamps, check_build, stamp_positions

    try:
        offsets = [int(t, 16) for t in args.stamps.split(",") if t.strip()]
    except ValueError:
        raise InputError(f"--stamps: expected hex offsets like c0,d40, got {args.stamps!r}") from None
    if args.build_only:
        code = decode_kernel(read_cubin(args.cubin), spec.name)
        build = build_stamps(code, stamp_positions(code, offsets), tp.layout_of(spec))
        result = check_build(code, build)
        path = write_atomic(Path(args.build_only) / f"{code.kernel.name}.stamps.cubin", build.data)
        print(
            f"{path}: {len(offsets)} stamps, originals changed: {len(result.changed)}, "
            f"verifier violations: {len(result.violations)}; {build.occupancy.line()}"
        )
        return 0 if not (result.changed or result.violations) else 1
    if args.host_clock:
        from reorder.cli.hostclock import run_host_clock

        return run_host_clock(args, spec, offsets)
    build, rows = tp.run_stamps(args.cubin, spec, offsets, args.launches)
    out = Path(args.output if args.output != "timeline.csv" else "stamps.csv")
    handle = io.StringIO(newline="")
    writer = csv.DictWriter(handle, fieldnames=tp.STAMP_FIELDS)
    writer.writeheader()
    writer.writerows(rows)
    write_atomic(out, handle.getvalue().encode())  # whole or absent, on a full disk too
    print(f"{out}: {len(rows)} records ({len(offsets)} stamps); {build.occupancy.line()}")
    return 0
