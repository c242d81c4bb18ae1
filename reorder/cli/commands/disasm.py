"""`reorder disasm`: annotated SASS, one line per instruction with its control codes and read/write sets."""

from __future__ import annotations

import argparse

from reorder.binary.cubin import read_cubin
from reorder.cli.lastline import listed, plural
from reorder.cli.options import kernel_name
from reorder.cli.registry import command
from reorder.sass.listing import render_json, render_text
from reorder.sass.model import decode_kernel


@command("disasm", "annotated SASS: control codes, read/write sets")
def _disasm():
    def add(p: argparse.ArgumentParser) -> None:
        p.add_argument("cubin")
        p.add_argument("--kernel", type=kernel_name, help="kernel name (default: every kernel)")
        p.add_argument("--json", action="store_true", help="records with offset, opcode, text and control fields")

    def run(args: argparse.Namespace) -> int:
        cubin = read_cubin(args.cubin)
        names = [args.kernel] if args.kernel else [k.name for k in cubin.kernels]
        codes = [decode_kernel(cubin, n) for n in names]
        print(render_json(codes) if args.json else "\n\n".join(render_text(c) for c in codes))
        count = sum(len(c.instructions) for c in codes)
        listed("disasm", f"{plural(len(codes), 'kernel')}, {plural(count, 'instruction')} listed")
        return 0

    return run, add
