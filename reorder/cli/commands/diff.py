"""`reorder diff`: what a candidate changed against its original, as SASS with control codes."""

from __future__ import annotations

import argparse

from reorder.binary.cubin import read_cubin
from reorder.cli.lastline import listed, plural
from reorder.cli.options import kernel_name
from reorder.cli.registry import command
from reorder.sass.model import decode_kernel


@command("diff", "what B changed against A: SASS with control codes, moved/recoded/rewritten counts, stalls")
def _diff():
    def add(p: argparse.ArgumentParser) -> None:
        p.add_argument("a", metavar="A.cubin", help="the original")
        p.add_argument("b", metavar="B.cubin", help="the candidate (a reorder output)")
        p.add_argument("--kernel", type=kernel_name, help="kernel name (default: every kernel both have)")
        p.add_argument("--context", type=int, default=3, help="unchanged lines around each change (default 3)")

    def run(args: argparse.Namespace) -> int:
        from reorder.base.errors import InputError
        from reorder.report.sassdiff import sass_diff

        a, b = read_cubin(args.a), read_cubin(args.b)
        names = [args.kernel] if args.kernel else [k.name for k in a.kernels if k.name in {x.name for x in b.kernels}]
        if not names:
            raise InputError(f"{args.a} and {args.b} have no kernel in common")
        if args.context < 0:
            raise InputError("--context must be 0 or more")
        pairs = [(decode_kernel(a, n), decode_kernel(b, n)) for n in names]
        print("\n\n".join("\n".join(sass_diff(x, y, args.context)) for x, y in pairs))
        changed = sum([i.word for i in x.instructions] != [i.word for i in y.instructions] for x, y in pairs)
        listed("diff", f"{plural(len(pairs), 'kernel')} compared, {changed} changed")
        return 0

    return run, add
