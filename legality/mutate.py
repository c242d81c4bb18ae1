"""Under-stalled and over-stalled variants of a real schedule, for testing the verifier.

Each mutant names the dependency it breaks (producer and consumer offsets), so a test can
check that the verifier rejects it for the right reason. Mutants are built from the
original schedule's real dependencies, found by the same read/write sets the verifier
uses but without its latency tables, so a table bug cannot hide a mutant.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from legality.latency import load_table
from legality.verify import queue_of
from reorder.analysis.cfg import basic_blocks
from reorder.sass.model import Instruction


@dataclass(frozen=True)
class Mutant:
    kind: str  # stall_cut, guard_early, drop_wait, drop_scoreboard, swap_scoreboard, over_stall
    producer: int  # offsets
    consumer: int
    instructions: tuple[Instruction, ...]


def _set(instructions: tuple[Instruction, ...], index: int, **ctrl) -> tuple[Instruction, ...]:
    out = list(instructions)
    out[index] = out[index].with_ctrl(out[index].ctrl.with_(**ctrl))
    return tuple(out)


def _first_reader(instructions, start: int, end: int, resources: frozenset[str]) -> int | None:
    for j in range(start + 1, end):
        if instructions[j].access.reads & resources:
            return j
        if not instructions[j].known:
            return None
    return None


def stall_cuts(instructions: tuple[Instruction, ...], arch: int) -> Iterator[Mutant]:
    """Fixed-latency RAW pairs in one block, stalls between them cut to one cycle short."""
    from legality.latency import latency_class, lookup_read

    table = load_table(arch)
    for block in basic_blocks(instructions):
        for i in block.indices():
            p = instructions[i]
            if not p.known or p.is_variable_latency or p.is_barrier or not p.access.writes:
                continue
            j = _first_reader(instructions, i, block.end, p.access.writes)
            if j is None or (instructions[j].guard and p.guard and instructions[j].guard != p.guard):
                continue
            res = sorted(p.access.writes & instructions[j].access.reads)[0]
            need = lookup_read(table, p.opcode, latency_class(p), instructions[j], res).cycles
            gap = j - i
            if gap > need - 1 or need - 1 < 1:
                continue
            out = instructions
            stalls = [1] * gap
            stalls[-1] = need - 1 - (gap - 1)
            for k, s in zip(range(i, j), stalls):
                yb = out[k].ctrl.yield_bit if s <= 11 else 0
                out = _set(out, k, stall=s, yield_bit=yb if s else 0)
            kind = "guard_early" if res.startswith("P") and instructions[j].guard.lstrip("@!") == res else "stall_cut"
            yield Mutant(kind, p.offset, instructions[j].offset, out)


def scoreboard_mutants(instructions: tuple[Instruction, ...]) -> Iterator[Mutant]:
    """For a variable-latency producer whose first waiter on its scoreboard is also its
    first reader: drop that wait bit, drop the producer's scoreboard, or move the
    producer to another scoreboard nobody waits on before the reader."""
    for block in basic_blocks(instructions):
        for i in block.indices():
            p = instructions[i]
            if not p.is_variable_latency or p.ctrl.wbar == 7 or not p.access.writes:
                continue
            sb = p.ctrl.wbar
            w = next((j for j in range(i + 1, block.end) if instructions[j].ctrl.waits_on(sb)), None)
            if w is None or not instructions[w].access.reads & p.access.writes:
                continue
            if any(instructions[k].access.writes & p.access.writes for k in range(i + 1, w)):
                continue
            c = instructions[w]
            yield Mutant("drop_wait", p.offset, c.offset, _set(instructions, w, wait=c.ctrl.wait & ~(1 << sb)))
            same_queue = any(
                queue_of(instructions[k]) == queue_of(p) and instructions[k].ctrl.wbar != 7 for k in range(i + 1, w)
            )  # dropping p's scoreboard leaves it covered by that one's
            if not same_queue:
                yield Mutant("drop_scoreboard", p.offset, c.offset, _set(instructions, i, wbar=7))
            waited = {b for k in range(i + 1, w + 1) for b in range(6) if instructions[k].ctrl.waits_on(b)}
            spare = next((b for b in range(6) if b not in waited and b != sb), None)
            if spare is not None:
                yield Mutant("swap_scoreboard", p.offset, c.offset, _set(instructions, i, wbar=spare))


def over_stalls(instructions: tuple[Instruction, ...], extra: int = 2) -> Mutant:
    """Every stall raised by `extra` (kept encodable): only slower, never wrong."""
    out = list(instructions)
    for k, ins in enumerate(out):
        c = ins.ctrl
        if c.stall == 0:
            continue
        limit = 11 if c.yield_bit else 15
        out[k] = ins.with_ctrl(c.with_(stall=min(limit, c.stall + extra)))
    return Mutant("over_stall", 0, 0, tuple(out))
