"""`reorder batch-loads`: hoist loads with their address computations into batches."""

from __future__ import annotations

import argparse

from reorder.base.files import check_output
from reorder.binary.cubin import read_cubin
from reorder.cli.kernelpick import pick_kernel
from reorder.cli.options import cubin_move_args, noalias_choice, write_outcome
from reorder.cli.registry import command
from reorder.sass.model import decode_kernel


@command(
    "batch-loads",
    "hoist loads with their address/guard slices and group them (SliceBatch; LoadBatch "
    "fallback), renaming registers and predicates where needed",
)
def _batch_loads():
    def add(p: argparse.ArgumentParser) -> None:
        cubin_move_args(p)
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
            "--peel",
            nargs="?",
            const="last",
            default=None,
            metavar="OFFSET",
            help="first peel one single-block loop (the one at OFFSET, or the last one holding a global "
            "load): its body is copied before it, the text grows; the peeled kernel is written to "
            "OUTPUT.peeled.cubin and every other step is judged against it (reorder verify OUTPUT --against "
            "INPUT remakes the peel from INPUT, checks it by structure and judges the moves against it)",
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
        if args.peel is not None:
            code = _peel_first(args, code)
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


def _peel_first(args: argparse.Namespace, code):
    """The kernel with a loop peeled, written next to the output (the other steps' original)."""
    from reorder.base.errors import InputError
    from reorder.base.files import write_atomic
    from reorder.build.pipeline import peeled

    head = None
    if args.peel != "last":
        try:
            head = int(args.peel, 0)
        except ValueError:
            raise InputError(f"--peel {args.peel}: not an instruction offset (e.g. 0xcb0)") from None
    after, note = peeled(code, head)
    path = peeled_path(args.output)
    check_output(path, [args.cubin])
    write_atomic(path, after.cubin.data, protect=[args.cubin])
    print(f"note: {note}")
    print(f"peeled kernel written to {path} (the original the other steps are judged against)")
    return after


def peeled_path(output: str) -> str:
    """Where `--peel` writes the peeled kernel: beside the output, `K.cubin` -> `K.peeled.cubin`."""
    return output[: -len(".cubin")] + ".peeled.cubin" if output.endswith(".cubin") else output + ".peeled.cubin"
