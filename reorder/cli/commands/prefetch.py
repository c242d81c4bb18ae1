"""`reorder prefetch`: copies of global loads issued above the barrier before them (L1 prefetch)."""

from __future__ import annotations

import argparse

from reorder.base.files import check_output
from reorder.binary.cubin import read_cubin
from reorder.cli.kernelpick import pick_kernel
from reorder.cli.options import cubin_move_args, noalias_choice
from reorder.cli.registry import command
from reorder.sass.model import decode_kernel


@command(
    "prefetch",
    "issue copies of global loads above the barrier before them into registers nothing reads, so "
    "their lines are in L1 when the kernel's own loads run; the text and REGCOUNT grow",
)
def _prefetch():
    def add(p: argparse.ArgumentParser) -> None:
        cubin_move_args(p)
        p.add_argument(
            "--iterations",
            type=int,
            default=0,
            metavar="N",
            help="also copy a single-block loop's loads of its next N-1 iterations before the loop, each "
            "under the loop's own exit compare on that iteration's index (default 0: off)",
        )

    def run(args: argparse.Namespace) -> int:
        from reorder.base.files import write_atomic
        from reorder.build.pipeline import prefetched

        check_output(args.output, [args.cubin])  # refused now, not after the work
        code = decode_kernel(read_cubin(args.cubin), pick_kernel(args, args.kernel))
        noalias = noalias_choice(args.assume_noalias, len(code.kernel.params))
        if noalias:
            print("ASSUMPTION: pointer parameters do not alias any other buffer")
        after, note = prefetched(code, noalias, args.iterations)
        write_atomic(args.output, after.cubin.data, protect=[args.cubin])
        print(f"note: {note}")
        print(f"registers: {code.kernel.regcount} -> {after.kernel.regcount} (fewer blocks per SM may fit)")
        print(
            f"wrote {args.output}: {code.kernel.name}: judged against the input (legality.prefetch) and verified legal"
        )
        return 0

    return run, add
