"""`reorder ptx-hoist`: list GlobalHoist instances of a PTX kernel, or apply moves and write
the moved PTX and the cubin its producer's ptxas makes of it (verified)."""

from __future__ import annotations

import argparse
from pathlib import Path

from reorder.base.errors import InputError, NotApplicable
from reorder.build.ptxcandidate import Built, check_compiles, read_ptx, write_and_compile
from reorder.cli.options import ptx_move_args
from reorder.ptx.analyses.analysis import analysis_of
from reorder.ptx.analyses.legality import Planner
from reorder.ptx.analyses.memory import Noalias
from reorder.ptx.model.model import Module
from reorder.ptx.moves.hoist import GlobalHoist, targets
from reorder.ptx.moves.peel import PeelLoop
from reorder.ptx.space.plans import MODES, Move, loads_reaching, plan


def add_arguments(p: argparse.ArgumentParser) -> None:
    ptx_move_args(p)
    p.add_argument("--list", action="store_true", help="list peelable loops and every load's legal destinations")
    p.add_argument(
        "--mode",
        choices=MODES,
        default="barrier",
        help="plan when no --moves: loads above barriers (default, peeling a loop where that lets "
        "its first iteration's loads rise), above stores, barrier loads as far as legal (top), "
        "or every load as far as legal (branch)",
    )
    p.add_argument(
        "--moves",
        nargs="+",
        metavar="MOVE",
        help="peel:LABEL, hoist:LINE@TO or hoist:all@TO (TO: barrier, store, top, upN), in order",
    )


def run(args: argparse.Namespace, noalias_of) -> int:
    source = Path(args.ptx)
    module = read_ptx(source)
    kernel, noalias = kernel_and_noalias(module, args, source, noalias_of)
    if args.list:
        check_compiles(source)  # a listing of PTX that ptxas rejects would be of nothing real
        print("\n".join(listing(module, kernel, noalias)))
        return 0
    if not args.output:
        raise InputError("ptx-hoist: -o/--output is required (or --list)")
    if args.moves:
        moved, moves = parse_moves(args.moves, module, kernel, noalias)
    else:
        moved, moves = plan(module, kernel, noalias, args.mode)
        if not moves:
            raise NotApplicable(f"{kernel}: no load can move ({args.mode} plan); see --list")
    built = write_and_compile(
        source,
        kernel,
        moved,
        [m.describe() for m in moves],
        Path(args.output),
        Path(args.cubin) if args.cubin else None,
    )
    print("\n".join(summary(built)))
    return 0 if built.verdict.ok else 1


def _kernel(module: Module, name: str | None, source: Path) -> str:
    if name:
        module.function(name)
        return name
    kernels = [k.name for k in module.kernels]
    if len(kernels) != 1:
        raise InputError(f"{source}: {len(kernels)} kernels ({', '.join(kernels) or 'none'}); name one with --kernel")
    return kernels[0]


def kernel_and_noalias(module: Module, args: argparse.Namespace, source: Path, noalias_of) -> tuple[str, Noalias]:
    """The kernel --kernel names (or the only one) and what --assume-noalias assumes of it,
    the assumption said on stdout so that no result is read without it."""
    kernel = _kernel(module, args.kernel, source)
    noalias: Noalias = noalias_of(args.assume_noalias, len(module.function(kernel).params))
    if noalias:
        which = "all pointer parameters" if isinstance(noalias, bool) else "parameters " + ", ".join(map(str, noalias))
        print(f"ASSUMPTION: {which} do not alias any other buffer")
    return kernel, noalias


def parse_moves(words: list[str], module: Module, kernel: str, noalias: Noalias) -> tuple[Module, list[Move]]:
    """The module after the moves spelled on the command line, and the moves (`hoist:all@TO`
    expanded on the module as the moves before it left it)."""
    moves: list[Move] = []
    current = module
    for word in words:
        kind, _, rest = word.partition(":")
        if kind == "peel" and rest:
            label = f"${rest}" if not rest.startswith("$") and f"${rest}:" in current.text else rest
            move: Move = PeelLoop(kernel, label)
            current = move.apply(current)
            moves.append(move)
        elif kind == "hoist" and "@" in rest:
            which, to = rest.split("@", 1)
            idents = loads_reaching(current, kernel, noalias, to) if which == "all" else [which]
            for ident in reversed(idents):
                hoist = GlobalHoist(kernel, ident, to, noalias)
                current = hoist.apply(current)
                moves.append(hoist)
        else:
            raise InputError(f"--moves {word!r}: expected peel:LABEL, hoist:LINE@TO or hoist:all@TO")
    return current, moves


def listing(module: Module, kernel: str, noalias: Noalias) -> list[str]:
    """Loops, loads with their legal destinations, and what peeling would add."""
    analysis = analysis_of(module.function(kernel), noalias)
    count = sum(s.kind == "instruction" for s in analysis.function.body)
    lines = [f"{kernel}: {count} instructions, {len(analysis.cfg.blocks)} blocks, {len(analysis.cfg.loops)} loops"]
    unknown = ", ".join(f"line {i} {op}" for i, op in analysis.unknown) or "none"
    lines.append(f"  unknown instructions (kept in place as barriers): {unknown}")
    peels = PeelLoop.instances(module, kernel)
    lines.append("  loops that can be peeled: " + (", ".join(p.header for p in peels) or "none"))
    lines += _loads(module, kernel, noalias, "  ")
    for peel in peels:
        after = peel.apply(module)
        copied = {s.ident for s in after.function(kernel).body} - {s.ident for s in module.function(kernel).body}
        lines.append(f"  after {peel.describe()}:")
        lines += _loads(after, kernel, noalias, "    ", only=copied)
    for mode in MODES:
        _, moves = plan(module, kernel, noalias, mode)
        lines.append(f"  plan {mode}: " + (" ".join(m.describe() for m in moves) or "nothing moves"))
    return lines


def _loads(module: Module, kernel: str, noalias: Noalias, indent: str, only: set[str] | None = None) -> list[str]:
    planner = Planner(analysis_of(module.function(kernel), noalias))
    out = []
    for i, s in enumerate(planner.analysis.function.body):
        if not planner.hoistable_load(i) or (only is not None and s.ident not in only):
            continue
        found, stopped = targets(planner, i)
        where = ", ".join(f"up{t.up} ({'/'.join(sorted(t.plan.crosses))})" for t in found) or "nowhere"
        origin = sorted(map(str, planner.analysis.origins.get(i, ())))
        why = f"; stops: {stopped.reason}" if stopped else ""
        assert s.ins is not None  # a hoistable load is an instruction
        load = f"{s.ins.opcode} [{s.ins.address()}] from {','.join(origin)}"
        out.append(f"{indent}line {s.ident:<6} {load}: {where}{why}")
    return out


def summary(built: Built) -> list[str]:
    """What was written and what the verifier said, one line each."""
    v = built.verdict
    status = "legal" if v.ok else f"{len(v.violations)} violations"
    tighter = (
        f"; {len(v.inherited)} pairs ptxas scheduled tighter than the tables (its own schedule)" if v.inherited else ""
    )
    return [
        f"moves: {' '.join(built.moves)}",
        f"verify {built.kernel}: {status}{tighter}",
        *("  " + line for line in v.violations),
        f"wrote {built.ptx}",
        f"wrote {built.cubin}: ptxas's build of it (sha256 {built.sha256}; {built.recipe}; built in "
        f"{built.seconds:.2f} s), verifier: {status}",
    ]
