"""Scoreboard reuse: an op a move put on another scoreboard than the compiler gave it must
find that scoreboard free of what the compiler's code counts on.

Scoreboards are counters, so sharing one never lets a consumer read too early: a wait on it
waits for every op on it. What a move that reassigns scoreboards (reorder.moves.scoreboards) can
break is what the compiler's code means by a scoreboard: `DEPBAR.LE SBk, n` counts the ops on k,
and the compiler's waits on an op of another queue (an LDC, an S2R, a MUFU, a store's source
read), which the scheduler keeps, would also wait for the newcomer, and with a count, wrongly.
So a reassigned op may join a scoreboard while it is pending (on any path: the verifier's entry
states) only with ops of its own in-order queue, as ptxas itself batches loads on one scoreboard;
and never a scoreboard a DEPBAR of the kernel counts.

Ops are matched to the original by opcode and rank (the k-th `LDG.E.128` of the candidate is the
k-th of the original): moves keep blocks in order and same-opcode ops of a block in their order,
and where a move did reorder two, the mismatch can only refuse a candidate, never pass one (an op
read as reassigned is only checked more). An op the compiler issued without a scoreboard and a
move gave one (the scheduler's `_track`) is not a reassignment: it is covered as before.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import Any

from legality.violation import Violation
from reorder.analysis.cfg import basic_blocks
from reorder.sass.model import Instruction

State = Any  # legality.verify's dataflow state: this module gets the walk from there (it imports this one)
Step = Callable[[State, Instruction], State]  # the state after one instruction
Waited = Callable[[State, int], State]  # a copy of the state with a wait mask applied
Queues = Callable[[Instruction], tuple[str, ...]]  # the in-order queues an op completes and reads in

NO_SCOREBOARD = 7  # the control field's 'none'
SCOREBOARDS = 6  # SB0..SB5


def reassigned(candidate: tuple[Instruction, ...], original: tuple[Instruction, ...]) -> dict[int, int]:
    """offset -> new write scoreboard for each op of `candidate` whose original (same opcode,
    same rank) had another scoreboard (not none)."""
    theirs: dict[str, list[int]] = defaultdict(list)
    for ins in original:
        if ins.is_variable_latency:
            theirs[ins.opcode].append(ins.ctrl.wbar)
    seen: dict[str, int] = defaultdict(int)
    out = {}
    for ins in candidate:
        if not ins.is_variable_latency:
            continue
        rank = seen[ins.opcode]
        seen[ins.opcode] += 1
        was = theirs[ins.opcode][rank] if rank < len(theirs[ins.opcode]) else NO_SCOREBOARD
        if was != NO_SCOREBOARD and ins.ctrl.wbar not in (was, NO_SCOREBOARD):
            out[ins.offset] = ins.ctrl.wbar
    return out


def reuse_violations(
    candidate: tuple[Instruction, ...],
    original: tuple[Instruction, ...],
    entry: Mapping[int, State],
    step: Step,
    waited: Waited,
    queues: Queues,
) -> tuple[Violation, ...]:
    """Every reassigned op that sets a scoreboard on which an op not reassigned there is pending
    (entry states over every path: legality.verify)."""
    moved = reassigned(candidate, original)
    if not moved:
        return ()
    counted = _counted(candidate)
    found: list[Violation] = [_depbar(ins, moved[ins.offset]) for ins in candidate if moved.get(ins.offset) in counted]
    for b in basic_blocks(candidate):
        block = candidate[b.start : b.end]
        if not any(i.offset in moved for i in block):
            continue
        state = entry[b.start]
        for ins in block:
            if ins.offset in moved:
                found += _check(waited(state, ins.ctrl.wait), ins, moved, queues(ins))
            state = step(state, ins)
    return tuple(found)


def _check(after: State, ins: Instruction, moved: dict[int, int], own: tuple[str, ...]) -> list[Violation]:
    """The ops of other queues still pending on the scoreboard `ins` was moved to (`after`: the
    state once its own waits are applied)."""
    sb = moved[ins.offset]
    holders = {
        (p.offset, p.opcode)
        for table in (after.writes, after.reads)
        for pending in table.values()
        for p in pending
        if p.sb == sb and p.offset != ins.offset and p.queue not in own
    }
    return [
        Violation(
            "scoreboard_reuse",
            f"SB{sb}",
            offset,
            opcode,
            ins.offset,
            ins.opcode,
            "a free scoreboard",
            f"SB{sb} pending",
            "reassigned onto a scoreboard an op the compiler placed there still holds",
            scoreboard=sb,
        )
        for offset, opcode in sorted(holders)
    ]


def _counted(instructions: tuple[Instruction, ...]) -> frozenset[int]:
    """Scoreboards a count-based wait (DEPBAR.LE SBk, n) of the kernel names."""
    return frozenset(
        int(m) for i in instructions if i.base == "DEPBAR" for m in re.findall(r"SB(\d)", " ".join(i.operands))
    )


def _depbar(ins: Instruction, sb: int) -> Violation:
    return Violation(
        "scoreboard_reuse",
        f"SB{sb}",
        ins.offset,
        ins.opcode,
        ins.offset,
        ins.opcode,
        "a scoreboard no DEPBAR counts",
        f"SB{sb} counted",
        "reassigned onto a scoreboard a DEPBAR.LE of the kernel counts",
        scoreboard=sb,
    )


def free_scoreboards(
    kernel: tuple[Instruction, ...],
    start: int,
    end: int,
    batch: frozenset[int],
    first: int,
    entry: State,
    step: Step,
    waited: Waited,
) -> list[int] | None:
    """Scoreboards no op outside `batch` (offsets) holds, on any path, at any point from
    position `first` of block [start, end) to the block's end: where a move may put the batch's
    loads without meeting the compiler's ops. None when a batch load is still pending at the
    end (its consumers lie beyond the block and wait on the scoreboard it has)."""
    state = entry
    held: set[int] = set()
    for k, ins in enumerate(kernel[start:end]):
        if k >= first:
            held |= _holders(waited(state, ins.ctrl.wait), batch)
            if ins.offset not in batch:
                held |= {b for b in (ins.ctrl.wbar, ins.ctrl.rbar) if b != NO_SCOREBOARD}
        state = step(state, ins)
    if any(p.offset in batch for t in (state.writes, state.reads) for pend in t.values() for p in pend):
        return None
    held |= _holders(state, batch)
    return [b for b in range(SCOREBOARDS) if b not in held]


def _holders(state: State, batch: frozenset[int]) -> set[int]:
    return {p.sb for t in (state.writes, state.reads) for pend in t.values() for p in pend if p.offset not in batch}
