"""`reorder ptx-loops`: PTX loop moves (the work is reorder.cli.ptxloops's)."""

from __future__ import annotations

import argparse

from reorder.cli.options import noalias_choice
from reorder.cli.registry import command


@command(
    "ptx-loops",
    "PTX loop moves: list loops, or Prefetch a loop's loads D iterations ahead / "
    "UnrollBatch it K times, and write the PTX and its verified cubin",
)
def _ptx_loops():
    from reorder.cli import ptxloops as loopcommand

    def run(args: argparse.Namespace) -> int:
        return loopcommand.run(args, noalias_choice)

    return run, loopcommand.add_arguments
