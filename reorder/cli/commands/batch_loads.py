"""`reorder batch-loads`: hoist loads with their address computations into batches."""

from __future__ import annotations

import argparse

from reorder.base.files import check_output
from reorder.binary.cubin import read_cubin
from reorder.cli.kernelpick import pick_kernel
from reorder.cli.options import kernel_name, noalias_choice, write_outcome
from reorder.cli.registry import command
from reorder.sass.model import decode_kernel


@command(
    "batch-loads",
    "hoist loads with their address/guard slices and group them (SliceBatch; LoadBatch "
    "fallback), renaming registers and predicates where needed",
)
def _batch_loads():
    def add(p: argparse.ArgumentParser) -> None:
        p.add_argument("cubin", nargs="?")  # may come as --assume-noalias' value (reorder.cli.main)
        p.add_argument("-o", "--output", required=True)
        p.add_argument("--kernel", type=kernel_name)
        p.add_argument(
            "--assume-noalias",
            nargs="?",
            const="all",
            default=None,
            metavar="PARAMS",
            help="assume pointer parameters do not alias (all, or a comma list of indices)",
        )
        p.add_argument(
            "--no-slices",
            action="store_true",
            help="hoist loads alone (LoadBatch), not with their address and guard slices",
        )
        p.add_argument(
            "--across-barriers",
            action="store_true",
            help="first move global loads above the BAR.SYNC / BAR.RED before them where no store "
            "before the barrier may write their buffer (BarrierHoist)",
        )
        p.add_argument(
            "--across-blocks",
            action="store_true",
            help="first move global loads into the block before theirs, under the guard of the branch "
            "between them, where nothing on the way may write their buffer (DominatorHoist)",
        )
        p.add_argument(
            "--extra-registers",
            type=int,
            default=32,
            metavar="N",
            help="how far a slice batch may raise the register count (default 32)",
        )

    def run(args: argparse.Namespace) -> int:
        from reorder.build.pipeline import batch_loads

        check_output(args.output, [args.cubin])  # refused now, not after the work
        code = decode_kernel(read_cubin(args.cubin), pick_kernel(args, args.kernel))
        noalias = noalias_choice(args.assume_noalias, len(code.kernel.params))
        if noalias:
            which = (
                "all pointer parameters" if isinstance(noalias, bool) else "parameters " + ", ".join(map(str, noalias))
            )
            print(f"ASSUMPTION: {which} do not alias any other buffer")
        return write_outcome(
            args,
            batch_loads(
                code,
                noalias,
                slices=not args.no_slices,
                extra_registers=args.extra_registers,
                across_barriers=args.across_barriers,
                across_blocks=args.across_blocks,
            ),
        )

    return run, add
