"""`reorder ptx-hoist`: PTX GlobalHoist (the work is reorder.cli.ptxhoist's)."""

from __future__ import annotations

import argparse

from reorder.cli.options import noalias_choice
from reorder.cli.registry import command


@command(
    "ptx-hoist",
    "PTX GlobalHoist: list loads' legal destinations, or move loads up (above barriers, "
    "stores, out of ifs and loops) and write the PTX and its verified cubin",
)
def _ptx_hoist():
    from reorder.cli import ptxhoist as ptx_command

    def run(args: argparse.Namespace) -> int:
        return ptx_command.run(args, noalias_choice)

    return run, ptx_command.add_arguments
