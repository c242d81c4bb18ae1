"""`reorder ptx-loops`: list a PTX kernel's loops and what the loop moves can do with them, or
make one (Prefetch or UnrollBatch) and write the PTX and the verified cubin its producer's
ptxas makes of it.

    reorder ptx-loops IN.ptx --list
    reorder ptx-loops IN.ptx --loop '$L__BB0_2' --prefetch 2 -o OUT.ptx [--assume-noalias]
    reorder ptx-loops IN.ptx --loop '$L__BB0_2' --unroll 4 -o OUT.ptx
"""

from __future__ import annotations

import argparse
from pathlib import Path

from reorder.base.errors import InputError, NotApplicable
from reorder.build.ptxcandidate import check_compiles, read_ptx, write_and_compile
from reorder.cli.options import ptx_move_args
from reorder.cli.ptxhoist import kernel_and_noalias, summary
from reorder.ptx.analyses.analysis import analysis_of
from reorder.ptx.analyses.counted import loop_labels
from reorder.ptx.analyses.memory import Noalias
from reorder.ptx.model.model import Module
from reorder.ptx.moves.layout import from_header
from reorder.ptx.moves.loopfind import find_loop
from reorder.ptx.moves.loopload import loop_loads
from reorder.ptx.moves.prefetch import DISTANCES, Prefetch
from reorder.ptx.moves.unroll import UnrollBatch


def add_arguments(p: argparse.ArgumentParser) -> None:
    ptx_move_args(p)
    p.add_argument("--list", action="store_true", help="list the loops, their inductions, exits and loads")
    p.add_argument("--loop", metavar="LABEL", help="the loop's header label ($L__BB0_2; the $ may be left out)")
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--prefetch", type=int, metavar="D", help=f"Prefetch D iterations ahead ({DISTANCES[0]}..{DISTANCES[-1]})"
    )
    which.add_argument("--unroll", type=int, metavar="K", help="UnrollBatch: K iterations, loads batched (2..8)")
    p.add_argument(
        "--speculate",
        action="store_true",
        help="allow loops left early on loaded data: the next iterations' loads run in bounds "
        "(predicated by the loop's bound exits), speculatively",
    )


def run(args: argparse.Namespace, noalias_of) -> int:
    source = Path(args.ptx)
    if _is_cubin(source):
        return _cubin_only(source, args)
    module = read_ptx(source)
    kernel, noalias = kernel_and_noalias(module, args, source, noalias_of)
    if args.list:
        check_compiles(source)  # a listing of PTX that ptxas rejects would be of nothing real
        print("\n".join(listing(module, kernel, noalias, args.speculate)))
        return 0
    if not args.loop or (args.prefetch is None and args.unroll is None):
        raise InputError("ptx-loops: give --loop LABEL and --prefetch D or --unroll K (or --list)")
    if not args.output:
        raise InputError("ptx-loops: -o/--output is required (or --list)")
    label = _label(module, kernel, args.loop)
    move = (
        Prefetch(kernel, label, args.prefetch, noalias, args.speculate)
        if args.prefetch is not None
        else UnrollBatch(kernel, label, args.unroll, noalias, args.speculate)
    )
    moved = move.apply(module)
    if args.speculate:
        print("ASSUMPTION: loads of the next iterations may run before a data exit is known (--speculate)")
    built = write_and_compile(
        source, kernel, moved, [move.describe()], Path(args.output), Path(args.cubin) if args.cubin else None
    )
    print("\n".join(summary(built)))
    return 0 if built.verdict.ok else 1


def _is_cubin(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def _cubin_only(source: Path, args: argparse.Namespace) -> int:
    """A cubin: say which loops its SASS has, and that the loop moves need the kernel's PTX."""
    from reorder.analysis.loops import cubin_loop_lines
    from reorder.binary.cubin import read_cubin
    from reorder.sass.model import decode_kernel

    cubin = read_cubin(source)
    names = [args.kernel] if args.kernel else [k.name for k in cubin.kernels if k.is_entry]
    for name in names:
        print("\n".join(cubin_loop_lines(decode_kernel(cubin, name))))
    if args.list:
        return 0
    raise NotApplicable(f"{source} is a cubin: loop moves need the kernel's PTX")


def _label(module: Module, kernel: str, given: str) -> str:
    labels = loop_labels(analysis_of(module.function(kernel)))
    for label in (given, f"${given}"):
        if label in labels:
            return label
    raise InputError(f"{kernel}: no loop is headed by {given} (loops: {', '.join(labels) or 'none'})")


def listing(module: Module, kernel: str, noalias: Noalias, speculate: bool) -> list[str]:
    """One paragraph per loop: its shape, inductions, exits, loads and the moves it takes."""
    analysis = analysis_of(module.function(kernel), noalias)
    labels = loop_labels(analysis)
    lines = [f"{kernel}: {len(labels)} loops"]
    for label in labels:
        analysis = analysis_of(from_header(module.function(kernel), label), noalias)
        try:
            loop = find_loop(analysis, label)
        except NotApplicable as exc:
            lines.append(f"  loop {label}: not moved: {str(exc).split(': ', 2)[-1]}")
            continue
        steps = ", ".join(f"{x.register} {'-' if x.negated else '+'}= {x.step}" for x in loop.inductions) or "none"
        exits = ", ".join(
            f"line {analysis.function.body[e.branch].ident} ({'bound' if e.bound else 'data'})" for e in loop.exits
        )
        loads = loop_loads(analysis, loop)
        lines.append(
            f"  loop {label}: inductions {steps}; exits {exits}"
            + ("; early exit on loaded data" if loop.early_exit else "")
        )
        lines += [f"    load line {analysis.function.body[i].ident}: can run early" for i in loads.movable]
        lines += [f"    load line {line}: stays ({reason})" for line, reason in loads.refused]
        moves = [
            m.describe()
            for m in Prefetch.instances(module, kernel, noalias, speculate)
            + UnrollBatch.instances(module, kernel, noalias, speculate)
            if m.header == label
        ]
        lines.append(
            "    moves: "
            + (" ".join(moves) or "none" + (" (try --speculate)" if loop.early_exit and not speculate else ""))
        )
    return lines
