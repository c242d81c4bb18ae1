"""`reorder stalls`: cut redundant stall counts (StallCut); --skeleton prints a starting config."""

from __future__ import annotations

import argparse

from reorder.base.files import check_output
from reorder.binary.cubin import read_cubin
from reorder.cli.kernelpick import pick_kernel
from reorder.cli.options import kernel_name, write_outcome
from reorder.cli.registry import command
from reorder.sass.model import decode_kernel


@command("stalls", "cut redundant stall counts (StallCut); --skeleton prints a starting config")
def _stalls():
    def add(p: argparse.ArgumentParser) -> None:
        p.add_argument("cubin")
        p.add_argument("-o", "--output")
        p.add_argument("--config", help="sections and hex ranges to process (.text.K c0-d40)")
        p.add_argument("--kernel", type=kernel_name)
        p.add_argument("--skeleton", action="store_true", help="print a config covering every kernel and exit")

    def run(args: argparse.Namespace) -> int:
        from reorder.base.errors import InputError
        from reorder.build.pipeline import cut_stalls
        from reorder.moves.stallconfig import read_config, skeleton

        cubin = read_cubin(args.cubin)
        if args.skeleton:
            print(skeleton(cubin), end="")
            return 0
        if not args.output:
            raise InputError("stalls: -o/--output is required")
        check_output(args.output, [args.cubin])  # refused now, not after the work
        config = read_config(args.config) if args.config else None
        name = args.kernel or (config.kernels()[0] if config and config.kernels() else None)
        code = decode_kernel(cubin, pick_kernel(args, name))
        ranges = config.ranges(code.kernel.name) if config else None
        return write_outcome(args, cut_stalls(code, ranges))

    return run, add
