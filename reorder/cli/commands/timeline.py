"""`reorder timeline`: one or two timeline CSVs drawn as a PNG with the jumps annotated."""

from __future__ import annotations

import argparse

from reorder.cli.registry import command


@command("timeline", "plot one or two timeline CSVs (original, optimized) as a PNG with jumps annotated")
def _timeline():
    def add(p: argparse.ArgumentParser) -> None:
        p.add_argument("csv", nargs="+", help="one or two timeline CSVs from `reorder probe`")
        p.add_argument("-o", "--output", default="timeline.png")

    def run(args: argparse.Namespace) -> int:
        from pathlib import Path

        from reorder.base.errors import InputError
        from reorder.probe.timeline import plot, read_csv

        if len(args.csv) > 2:
            raise InputError("timeline: give one or two CSVs (original, optimized)")
        tables = [(Path(c).stem, read_csv(c)) for c in args.csv]
        print(f"wrote {plot(tables, args.output, protect=args.csv)}")
        return 0

    return run, add
