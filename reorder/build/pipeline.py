"""Apply a family of moves to every block of a kernel, verifying after each step.

This is what `reorder stalls` and `reorder batch-loads` run: each accepted step is
re-encoded, re-read and re-decoded, so the next step starts from real bytes, and
`legality.verify` checks the whole kernel after every step (a rejected step is skipped
and reported, never written).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace

from legality.verify import verify_kernel
from reorder.analysis.costmodel import kernel_cycles, stall_cycles
from reorder.base.errors import EncodingError, LegalityError, NotApplicable
from reorder.binary.cubin import parse_cubin
from reorder.moves.barrierhoist import BarrierHoist
from reorder.moves.core import LoadBatch, StallCut
from reorder.moves.dominatorhoist import DominatorHoist
from reorder.moves.protocol import Candidate, Move, MoveOptions
from reorder.moves.slicebatch import SliceBatch
from reorder.sass.model import KernelCode
from reorder.sass.readback import read_back


@dataclass(frozen=True)
class Outcome:
    """The final kernel bytes and what changed."""

    data: bytes
    before: KernelCode
    after: KernelCode
    applied: tuple[str, ...]
    skipped: tuple[str, ...]  # rejected by the verifier or the encoder
    notes: tuple[str, ...]
    moved: int
    inapplicable: tuple[str, ...] = ()  # nothing to do (an earlier step changed the block)

    def summary(self) -> list[str]:
        b, a = self.before, self.after
        lines = [
            f"kernel {a.kernel.name} (sm_{a.arch}): {len(self.applied)} steps applied, {len(self.skipped)} skipped",
            f"instructions moved: {self.moved}",
            f"stall cycles: {stall_cycles(b.instructions)} -> {stall_cycles(a.instructions)} "
            f"({stall_cycles(b.instructions) - stall_cycles(a.instructions)} removed)",
            f"predicted cycles (static model, one pass per block; not a measurement): "
            f"{kernel_cycles(b.instructions)} -> {kernel_cycles(a.instructions)}",
            f"registers: {b.kernel.regcount} -> {a.kernel.regcount}",
        ]
        return (
            lines
            + [f"note: {n}" for n in self.notes]
            + [f"skipped: {s}" for s in self.skipped]
            + [f"nothing to do: {s}" for s in self.inapplicable]
        )


STEPS_KEPT = 16
_recent_steps: OrderedDict[tuple, tuple[KernelCode, Candidate] | Exception] = OrderedDict()


def _step(code: KernelCode, move: Move, noalias: bool | tuple[int, ...] = False) -> tuple[KernelCode, Candidate]:
    """`_apply_step`, kept for the last STEPS_KEPT steps of this process: the builds of one run
    share their first steps (the winner's pruning builds it again without each move, so every
    move before the dropped one is the same step on the same bytes), and a step is a pure
    function of the kernel's bytes, the move and the assumption."""
    key = (hashlib.sha256(code.cubin.data).digest(), code.kernel.name, repr(move), noalias)
    if key not in _recent_steps:
        try:
            _recent_steps[key] = _apply_step(code, move, noalias)
        except (NotApplicable, LegalityError, EncodingError) as exc:
            _recent_steps[key] = exc
        while len(_recent_steps) > STEPS_KEPT:
            _recent_steps.popitem(last=False)
    _recent_steps.move_to_end(key)
    held = _recent_steps[key]
    if isinstance(held, Exception):
        raise held.with_traceback(None)  # its own frames only, not those of every earlier raise
    return held


def clear_caches() -> None:
    """Forget the steps kept (for measuring a build's cost from cold)."""
    _recent_steps.clear()


def _apply_step(code: KernelCode, move: Move, noalias: bool | tuple[int, ...]) -> tuple[KernelCode, Candidate]:
    """Apply one move, write it, read the bytes back, and verify what was written (`noalias`:
    what the move assumed, which the verifier's barrier-crossing rule is told)."""
    cand = move.apply(code, code.instructions)
    written = read_back(parse_cubin(cand.cubin_bytes(), code.cubin.path), code)
    report = verify_kernel(written, original=code.instructions, noalias=noalias)
    if not report.ok:
        raise LegalityError(f"verifier rejected {move}: {report.violations[0].line()}", report.violations)
    return written, cand


def apply_each(code: KernelCode, moves: Sequence[Move], noalias: bool | tuple[int, ...] = False) -> Outcome:
    current = code
    applied: list[str] = []
    skipped: list[str] = []
    notes: list[str] = []
    inapplicable: list[str] = []
    moved = 0
    for move in moves:
        try:
            current, cand = _step(current, move, noalias)
        except NotApplicable as exc:
            inapplicable.append(f"{move.name}: {exc}")
            continue
        except (LegalityError, EncodingError) as exc:
            where = move.blocks[0] if len(move.blocks) == 1 else move.blocks
            skipped.append(f"{move.name} @ block {where}: {str(exc).splitlines()[0]}")
            continue
        applied.append(move.name)
        notes += list(cand.notes)
        moved += cand.moved
    return Outcome(
        current.cubin.data, code, current, tuple(applied), tuple(skipped), tuple(notes), moved, tuple(inapplicable)
    )


def cut_stalls(code: KernelCode, ranges: list[tuple[int, int]] | None = None) -> Outcome:
    """Every block with slack in one step; block by block only if that step is rejected."""
    moves = StallCut.instances(code, MoveOptions(ranges=tuple(ranges or ())))
    if not moves:
        return apply_each(code, [])
    together = apply_each(code, [StallCut.merged(moves)])
    return together if together.applied else apply_each(code, moves)


def hoist_across_barriers(code: KernelCode, noalias: bool | tuple[int, ...], extra_registers: int = 32) -> Outcome:
    """Move each barrier's crossable global loads above it (BarrierHoist), barrier by barrier,
    each step verified (barrier crossings judged under the same `noalias`) and its blocks proven
    to compute what they computed (legality.equivalence)."""
    current = code
    steps: list[Outcome] = []
    for move in BarrierHoist.instances(code, MoveOptions(noalias=noalias, extra_registers=extra_registers)):
        step = _same_values(current, apply_each(current, [move], noalias))
        steps.append(step)
        current = step.after
    return _merged(code, steps)


MAX_CLIMBS = 64  # dominator hoists per kernel: each step lists the instances again


def hoist_into_dominators(code: KernelCode, noalias: bool | tuple[int, ...]) -> Outcome:
    """Move global loads from each block into its sole predecessor under the branch's guard
    (DominatorHoist), one block at a time, each step verified (the loads that moved judged
    against the kernel before it: legality.blockmoves) and listed again on the kernel it left,
    so a load that landed in a block entered the same way climbs on. A step the verifier or the
    dataflow check refuses is skipped and its block not tried again."""
    current = code
    steps: list[Outcome] = []
    refused: set[int] = set()
    for _ in range(MAX_CLIMBS):
        options = MoveOptions(noalias=noalias)
        move = next((m for m in DominatorHoist.instances(current, options) if m.ordinal not in refused), None)
        if move is None:
            break
        step = _fewer_until_kept(current, move, noalias)
        if not step.applied:
            refused.add(move.ordinal)
        steps.append(step)
        current = step.after
    return _merged(code, steps)


def _fewer_until_kept(code: KernelCode, move: DominatorHoist, noalias: bool | tuple[int, ...]) -> Outcome:
    """The move, or the same with fewer of its block's loads while the verifier refuses it (a
    later load's result may still be pending where the other path writes its register)."""
    first = _same_values(code, apply_each(code, [move], noalias))
    if first.applied or not first.skipped:
        return first
    try:
        count = move.apply(code, code.instructions).moved
    except (LegalityError, EncodingError, NotApplicable):
        return first
    for fewer in range(count - 1, 0, -1):
        step = _same_values(code, apply_each(code, [replace(move, count=fewer)], noalias))
        if step.applied:
            return step
    return first


def batch_loads(
    code: KernelCode,
    noalias: bool | tuple[int, ...],
    slices: bool = True,
    extra_registers: int = 32,
    across_barriers: bool = False,
    across_blocks: bool = False,
) -> Outcome:
    """Group each block's loads. With `slices` (the default) a load travels with the ALU
    instructions computing its address and guard (SliceBatch, renaming registers and
    predicates), block by block; a block's step is kept only if the static model does not
    predict it slower, and a block whose slice batch is rejected or not kept falls back to
    plain hoisting (LoadBatch, under the same rule) on the kernel as it then stands.
    `extra_registers` caps how far a slice batch may raise REGCOUNT. With `across_barriers`,
    each barrier's crossable global loads first move above it (`hoist_across_barriers`). With
    `across_blocks`, global loads first move into the block before theirs, under the guard of the
    branch between them (`hoist_into_dominators`), then the rest runs on the result."""
    if across_blocks:
        first = hoist_into_dominators(code, noalias)
        rest = batch_loads(first.after, noalias, slices, extra_registers, across_barriers)
        return _merged(code, [first, rest])
    if across_barriers:
        first = hoist_across_barriers(code, noalias, extra_registers)
        rest = batch_loads(first.after, noalias, slices, extra_registers)
        return _merged(code, [first, rest])
    if not slices:
        return apply_each(code, LoadBatch.instances(code, MoveOptions(noalias=noalias)))
    steps: list[Outcome] = []
    current = code
    options = MoveOptions(noalias=noalias, extra_registers=extra_registers)
    done: set[tuple[int, ...]] = set()
    for move in SliceBatch.instances(code, options):
        if move.blocks in done:  # the kept-scoreboard twin is only the fallback of its block's spread batch
            continue
        step = _same_values(current, _kept(current, apply_each(current, [move])))
        if step.applied:
            done.add(move.blocks)
        if not step.applied:
            fallback = [m for m in LoadBatch.instances(current, options) if m.blocks == move.blocks]
            step = _merged(current, [step, _kept(current, apply_each(current, fallback))])
        steps.append(step)
        current = step.after
    return _merged(code, steps)


def peeled(code: KernelCode, head: int | None = None) -> tuple[KernelCode, str]:
    """`code` with one loop peeled (reorder.moves.peel), checked by legality.peel, and the note
    saying which: the loop at offset `head`, or the last peelable loop holding a global load
    (the one after the others: in a two-pass kernel, the second pass)."""
    from legality.peel import peel_match
    from reorder.moves.peel import note, peel_loop, plans
    from reorder.sass.model import decode_kernel

    found = plans(code)
    if head is not None:
        found = [p for p in found if code.instructions[p.start].offset == head]
    if not found:
        where = f"at {head:#06x}" if head is not None else "holding a global load"
        raise NotApplicable(f"{code.kernel.name}: no loop {where} can be peeled")
    plan = found[-1]
    grown = peel_loop(code, plan)
    after = decode_kernel(parse_cubin(grown.data, f"peeled {code.kernel.name}"), code.kernel.name)
    match = peel_match(code, after)
    if isinstance(match, str):
        raise EncodingError(f"{code.kernel.name}: the peel did not check: {match}")
    return after, note(code, plan)


def _same_values(before: KernelCode, step: Outcome) -> Outcome:
    """`step`, or nothing done when its blocks do not provably compute what they computed
    (legality.equivalence: renames are checked by symbolic values, which the verifier's timing
    model cannot see; two slice batches that verified legal were wrong on an H200)."""
    if not step.applied:
        return step
    from legality.equivalence import block_differences

    found = block_differences(before.instructions, step.after.instructions)
    return _not_kept(before, step, found[0].line()) if found else step


def _kept(before: KernelCode, step: Outcome) -> Outcome:
    """`step`, or nothing done (with the reason) when the static model predicts it slower."""
    old, new = kernel_cycles(before.instructions), kernel_cycles(step.after.instructions)
    if new <= old:
        return step
    return _not_kept(before, step, f"predicted slower by the static model ({old} -> {new} cycles)")


def _not_kept(before: KernelCode, step: Outcome, reason: str) -> Outcome:
    """Nothing done: `before` as it was, each of the step's moves noted with `reason`."""
    why = tuple(f"{name}: not kept, {reason}" for name in step.applied)
    return Outcome(before.cubin.data, before, before, (), step.skipped, (), 0, step.inapplicable + why)


def _merged(code: KernelCode, steps: list[Outcome]) -> Outcome:
    """One Outcome for consecutive steps (each starting where the previous one ended)."""
    if not steps:
        return apply_each(code, [])
    last = steps[-1]
    return Outcome(
        last.data,
        code,
        last.after,
        sum((s.applied for s in steps), ()),
        sum((s.skipped for s in steps), ()),
        sum((s.notes for s in steps), ()),
        sum(s.moved for s in steps),
        sum((s.inapplicable for s in steps), ()),
    )


def prefetched(code: KernelCode, noalias: bool | tuple[int, ...], iterations: int = 0) -> tuple[KernelCode, str]:
    """`code` with prefetch copies inserted above its barriers and, with `iterations` > 1, of the
    next iterations' loads before single-block loops (reorder.moves.prefetch), the grown kernel's
    blocks scheduled by the stall cut, and the result judged: by legality.prefetch against `code`
    and by the verifier as an insertion build. Plans are added one at a time; one the judge
    refuses is left out (its reason in the note)."""
    from reorder.moves.prefetch import note, plan_loop_prefetches, plan_prefetches

    plans = plan_prefetches(code, noalias)
    plans += plan_loop_prefetches(code, noalias, iterations, plans)
    if not plans:
        raise NotApplicable(f"{code.kernel.name}: no load to prefetch above a barrier or ahead in a loop")
    kept: list = []
    best, refused = None, []
    for plan in plans:
        built = _prefetch_build(code, kept + [plan], noalias)
        if isinstance(built, str):
            refused.append(f"copies before {code.instructions[plan.before].offset:#06x} refused: {built}")
            continue
        kept, best = kept + [plan], built
    if best is None:
        raise LegalityError(f"{code.kernel.name}: no prefetch copy checked: {refused[0]}")
    return best, "; ".join([note(code, kept), *refused])


def _prefetch_build(code: KernelCode, plans: list, noalias: bool | tuple[int, ...]) -> KernelCode | str:
    """The kernel with these plans' copies, scheduled, or why the judge or the verifier refused it."""
    from legality.prefetch import prefetch_match
    from reorder.moves.prefetch import with_prefetches

    after = cut_stalls(with_prefetches(code, plans)).after
    found = prefetch_match(code, after, noalias)
    if isinstance(found, str):
        return found
    report = verify_kernel(after, original=code.instructions, noalias=noalias, reordered=False)
    return after if report.ok else f"not legal: {report.violations[0].line()}"
