"""`reorder bench`: optimize every kernel of a suite over its parameter grid (the work is
reorder.cli.bench's)."""

from __future__ import annotations

import argparse

from reorder.cli.registry import command


@command("bench", "optimize every kernel of a suite over its parameter grid; CSV, heatmaps, medians")
def _bench():
    def add(p: argparse.ArgumentParser) -> None:
        from reorder.cli.bench import add_arguments

        add_arguments(p)

    def run(args: argparse.Namespace) -> int:
        from reorder.cli.bench import run_args

        return run_args(args)

    return run, add
