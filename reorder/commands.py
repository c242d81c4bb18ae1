"""Subcommand handlers of the `reorder` CLI (argument wiring only; the work lives elsewhere)."""

from __future__ import annotations

import argparse

from reorder.cli import command
from reorder.cubin import read_cubin
from reorder.listing import render_json, render_text
from reorder.sass import decode_kernel


@command("disasm", "annotated SASS: control codes, read/write sets")
def _disasm():
    def add(p: argparse.ArgumentParser) -> None:
        p.add_argument("cubin")
        p.add_argument("--kernel", help="kernel name (default: every kernel)")
        p.add_argument("--json", action="store_true", help="records with offset, opcode, text and control fields")

    def run(args: argparse.Namespace) -> int:
        cubin = read_cubin(args.cubin)
        names = [args.kernel] if args.kernel else [k.name for k in cubin.kernels]
        codes = [decode_kernel(cubin, n) for n in names]
        print(render_json(codes) if args.json else "\n\n".join(render_text(c) for c in codes))
        return 0

    return run, add
