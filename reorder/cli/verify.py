"""`reorder verify`: prove or reject a cubin's schedule, and one verdict for every reorder output.

Alone, a cubin is judged as its compiler emitted it (legality.evidence). `--against INPUT`
judges it as made from INPUT (a cubin, or PTX: compiled first). A reorder output carries a
provenance record (reorder.build.record) that says how it was made, and is judged by that:

- a copy or a SASS-route output: as a reordering of the input's instructions;
- a PTX-route output: its PTX moves re-checked on the input's PTX, ptxas's build of them
  judged as compiler output, its SASS moves judged against that build (reorder.build.judge).

`reorder verify OUT` of a reorder output is judged against the input its record names when
that input is still there unchanged, so there is one verdict, whichever way it is asked.
Without a record, an output that is not a reordering of the input (its opcodes differ: another
build) gets a line saying the record is what judging it needs.

The last line is the verdict: how many kernels are legal, or what could not be judged.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from reorder.base.files import read_input
from reorder.binary.cubin import read_cubin
from reorder.build.record import Record, read_record, record_path, sha256
from reorder.sass.model import decode_kernel


def add_arguments(p: argparse.ArgumentParser, kernel_name) -> None:
    p.add_argument("cubin", metavar="CUBIN", help="the cubin to judge (a reorder output, or any cubin)")
    p.add_argument("--kernel", type=kernel_name, help="kernel name (default: every kernel)")
    p.add_argument(
        "--against",
        metavar="INPUT",
        help="the cubin or PTX this one was made from: a reordering is judged against its "
        "instructions (a violation the input has itself, at no fewer cycles, is inherited); a reorder "
        "output from PTX moves by its route, from its provenance record (OUT.provenance.json)",
    )
    p.add_argument(
        "--ptx",
        metavar="FILE",
        help="with --against a cubin: the PTX a PTX-route output's moves were made on (default: the "
        "one its provenance record names)",
    )
    p.add_argument(
        "--assume-noalias",
        action="store_true",
        help="with --against: distinct pointer parameters are distinct buffers, so a load may have "
        "crossed a barrier past stores to other parameters (as batch-loads --across-barriers "
        "--assume-noalias moves them)",
    )
    p.add_argument(
        "--tables-only",
        action="store_true",
        help="without --against: judge by the latency tables "
        "alone, not also by the distances this cubin's compiler chose (legality.evidence)",
    )


def run(args: argparse.Namespace) -> int:
    cubin = read_cubin(args.cubin)
    names = [cubin.kernel(args.kernel).name] if args.kernel else [k.name for k in cubin.kernels]
    record = _usable_record(args)
    if record is not None and record.route == "ptx" and args.against:
        return _by_ptx_route(args, cubin, record, names)
    return _by_instructions(args, cubin, names, record)


def _usable_record(args: argparse.Namespace) -> Record | None:
    """The output's record when it describes this output (and, with --against, this input);
    without --against, a record whose input is at hand unchanged sets it (module docstring)."""
    record = read_record(args.cubin)
    if record is None:
        return None
    where = record_path(args.cubin)
    if not record.describes(read_input(args.cubin)):
        _say(args, f"{where} describes another file than {args.cubin} (written over since): not used")
        return None
    if not args.against:
        original = Path(record.original)
        if record.route == "copy":
            return record
        if original.is_file() and sha256(read_input(original)) == record.original_sha256:
            args.against = str(original)
            _say(
                args,
                f"{args.cubin} is reorder's output ({record.route} route) from {record.made_from}: judged "
                f"against {original}, as its provenance record says (--against names another input)",
            )
        else:
            _say(
                args,
                f"{args.cubin} is reorder's output ({record.route} route) but its input {original} is not at "
                "hand: judged as compiler output, which holds for a compiler's own cubin only; give --against INPUT",
            )
            return None
    if sha256(read_input(args.against)) != record.original_sha256 and not _is_route_ptx(args, record):
        _say(
            args,
            f"{_given(args)} is not the input {args.cubin} was made from ({record.made_from}): "
            "its record is not used; judged as a reordering of it",
        )
        return None
    return record


def _is_route_ptx(args: argparse.Namespace, record: Record) -> bool:
    """Whether --against is the PTX a PTX-route output's moves were made on (its route starts there)."""
    against_ptx = getattr(args, "ptx_inputs", {}).get("against")
    return bool(record.ptx and against_ptx and sha256(read_input(against_ptx)) == record.ptx.ptx_sha256)


def _by_ptx_route(args: argparse.Namespace, cubin, record: Record, names: list[str]) -> int:
    """Print the PTX route's steps and each kernel's verdict against the rebuilt build."""
    from reorder.build.judge import judge_ptx_route

    ptx = _route_ptx(args, record)
    print(f"{args.cubin}: made by PTX moves, ptxas, then SASS moves (its provenance record); judged by that route")
    if ptx is None:
        assert record.ptx is not None
        print(
            f"verdict: cannot judge: the PTX its moves were made on ({record.ptx.ptx}, sha256 "
            f"{record.ptx.ptx_sha256[:12]}) is not at hand; give it with --ptx"
        )
        return 1
    judged = judge_ptx_route(cubin, record, ptx, names)
    print("\n".join("  " + step for step in judged.steps))
    if judged.failure:
        print(f"verdict: not proven by its route: {judged.failure}")
        return 1
    for report in judged.reports:
        print("\n".join(report_lines(report)))
    return _verdict(sum(not r.ok for r in judged.reports), len(names), "by its PTX route")


def _route_ptx(args: argparse.Namespace, record: Record) -> Path | None:
    """The PTX the route's moves were made on: --ptx, the --against PTX, or the record's, if
    its bytes are the record's."""
    assert record.ptx is not None
    against_ptx = getattr(args, "ptx_inputs", {}).get("against")
    for path in (args.ptx, against_ptx, record.ptx.ptx):
        if path and Path(path).is_file() and sha256(read_input(path)) == record.ptx.ptx_sha256:
            return Path(path)
    return None


def _by_instructions(args: argparse.Namespace, cubin, names: list[str], record: Record | None) -> int:
    """Each kernel judged against the input's instructions (--against), or as compiler output."""
    from legality.evidence import verify_as_compiled
    from legality.verify import verify_kernel

    against = read_cubin(args.against) if args.against else None
    if against and getattr(args, "assume_noalias", False):
        print("ASSUMPTION: all pointer parameters do not alias any other buffer")
    bad = own = 0
    hints = []
    for name in names:
        code = decode_kernel(cubin, name)
        if against:
            original = decode_kernel(against, name)
            inserted: bool | None = False
            if len(code.instructions) > len(original.instructions):
                found = _peel_verdict(code, original)
                if found is None:
                    continue
                inserted = _prefetch_verdict(code, original, getattr(args, "assume_noalias", False))
                if inserted is None:  # code inserted that is not proven harmless: refused
                    bad += 1
                    continue
                if not inserted:
                    original = _peeled_original(code, original, found)  # a peel, then moves: judged against the peel
            report = verify_kernel(
                code,
                original=original.instructions,
                noalias=getattr(args, "assume_noalias", False),
                reordered=not inserted,
            )
            if record is None and not inserted and _other_build(code.instructions, original.instructions):
                hints.append(name)
        else:
            report = verify_as_compiled(code, tables_only=args.tables_only)
        print("\n".join(report_lines(report)))
        bad += not report.ok
        own += bool(report.compiler)
    if own:
        print(
            "(compiler-in-this-cubin: a distance below the tables is accepted because this cubin's compiler "
            "chose it for exactly that pair; that holds for the compiler's own output only: judge a modified "
            "cubin with --against ORIGINAL.cubin, or --tables-only)"
        )
    if hints:
        print(
            f"({', '.join(hints)}: not a reordering of {_given(args)}: its instructions are another build's, so "
            "the verdict above judges its schedule, not how it was made. A reorder output made by PTX moves is "
            f"judged by its route, from its provenance record {record_path(args.cubin).name}, which is not there)"
        )
    if bad and not against:
        print(
            "(judged as the compiler's own output; to judge a reorder output against its original, add "
            "--against ORIGINAL.cubin)",
            file=sys.stderr,
        )
    how = f"against {_given(args)}" if against else "as compiler output"
    return _verdict(bad, len(names), how)


def _peel_verdict(code, original) -> str | None:
    """A candidate longer than its original is judged as a loop peel (legality.peel), by structure:
    the same instructions per thread, in the same order, as the original runs. None when it is
    one (its verdict printed), else why not."""
    from legality.peel import peel_match

    found = peel_match(original, code)
    if isinstance(found, str):
        return found
    head, back = original.instructions[found.start].offset, original.instructions[found.end - 1].offset
    print(
        f"{code.kernel.name}: sm_{code.arch}: legal (loop {head:#06x}-{back:#06x} peeled: its body copied before "
        "it word for word, the copy's back edge negated to the loop's exit, every other word and .nv.info "
        "record the original's with offsets mapped)"
    )
    return None


def _prefetch_verdict(code, original, noalias) -> bool | None:
    """Whether a candidate longer than its original is the original with prefetch copies inserted
    (legality.prefetch: every original word kept in order, the copies' values never read, their
    loads reading only what the kernel reads); its schedule is then judged as an insertion build.
    None: the original with code inserted that is not proven so (refused, the reason printed)."""
    from legality.prefetch import inserted_only, prefetch_match

    found = prefetch_match(original, code, noalias)
    if isinstance(found, str):
        if inserted_only(original, code):
            print(f"{code.kernel.name}: sm_{code.arch}: REFUSED: instructions inserted, not proven harmless: {found}")
            return None
        return False
    print(
        f"{code.kernel.name}: sm_{code.arch}: {len(found.inserted)} instructions inserted as prefetch copies "
        "(every original word kept, in order; each copied load reads an address the kernel reads on every "
        "path, or runs on no thread that leaves the kernel first; its buffer written nowhere)"
    )
    return True


def _peeled_original(code, original, why: str):
    """For a candidate longer than its original that is no peel by itself (`why`): the original
    with the loop peeled whose result `code` is a reordering of (the peel is remade from the
    original, and checked by structure as it is made), so the candidate's moves are judged
    against that; the original itself when no peel of it has the candidate's instructions
    (judged as another build)."""
    from reorder.base.errors import ReorderError
    from reorder.build.pipeline import peeled
    from reorder.moves.peel import plans

    for plan in plans(original):
        head = original.instructions[plan.start].offset
        try:
            after, note = peeled(original, head)
        except ReorderError:
            continue
        if len(after.instructions) == len(code.instructions) and not _other_build(
            code.instructions, after.instructions
        ):
            print(
                f"{code.kernel.name}: a peel of the original, then moves: {note}; the peel remade from the "
                "original and checked by structure, the moves judged against the peeled kernel below"
            )
            return after
    print(
        f"{code.kernel.name}: not a loop peel of the original, nor a reordering of one ({why}); judged as another build"
    )
    return original


def _other_build(ours: tuple, theirs: tuple) -> bool:
    """Whether two kernels' opcodes differ as a multiset: moves change order, control codes
    and registers, never which instructions there are."""
    return Counter(i.opcode for i in ours) != Counter(i.opcode for i in theirs)


def _verdict(bad: int, total: int, how: str) -> int:
    """The last line: every kernel legal, or how many are not."""
    kernels = f"{total} kernel{'s' * (total != 1)}"
    if bad:
        print(f"verdict: {bad} of {kernels} with violations ({how})")
        return 1
    print(f"verdict: {kernels} legal ({how})")
    return 0


def _given(args: argparse.Namespace) -> str:
    """--against as the user gave it (a PTX file, not the cubin compiled from it)."""
    return getattr(args, "ptx_inputs", {}).get("against") or args.against


def _say(args: argparse.Namespace, line: str) -> None:
    print(f"reorder {args.command}: {line}", file=sys.stderr)


def report_lines(report) -> list[str]:
    """A kernel's verdict, then where each accepted distance came from, then any violations."""
    unknown = f", {len(report.unknown)} unknown opcodes kept as barriers" if report.unknown else ""
    status = "legal" if report.ok else f"{len(report.violations)} violations"
    kept = f", {len(report.inherited)} inherited from the original" if report.inherited else ""
    own = f", {len(report.compiler)} exact pairs at distances this cubin's compiler chose" if report.compiler else ""
    lines = [f"{report.kernel}: sm_{report.arch}: {status}{kept}{own}{unknown}"]
    if report.sources:
        lines.append(
            "  distances checked against table facts: " + ", ".join(f"{n} {source}" for source, n in report.sources)
        )
    lines += ["  " + v.line() for v in report.violations]
    lines += ["  " + c.line() for c in report.compiler]
    lines += ["  inherited " + v.line() for v in report.inherited]
    lines += [f"  unknown  {off:#06x} {opcode} (not verified through; never moved)" for off, opcode in report.unknown]
    return lines
