"""The move families that keep a block's instructions (StallCut, Swap) or move its loads
alone (LoadBatch); SliceBatch, which moves loads with their address slices, is in
`slicebatch`. Each has the shape `reorder.moves.protocol` describes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from legality.barriers import load_rules
from legality.graph import dependency, memory_conflict
from reorder.analysis.buffers import address_parameters
from reorder.analysis.cfg import Block, movable_blocks
from reorder.analysis.webs import BlockWebs, analyse_block, guarded_live_out, web_renames
from reorder.base.errors import LegalityError, NotApplicable
from reorder.binary.cubin import RESERVED_REGISTERS
from reorder.moves.blocks import apply_renames, block_at, declared_parameters, is_hoistable_load, stall_sum
from reorder.moves.protocol import Candidate, MoveOptions, Noalias
from reorder.moves.schedule import schedule_block
from reorder.sass.model import Instruction, KernelCode
from reorder.sass.rename import OperandRename

__all__ = ["Candidate", "LoadBatch", "MoveOptions", "Noalias", "StallCut", "Swap"]


@dataclass(frozen=True)
class StallCut:
    """Recompute the stalls of some blocks in their original order: the minimum the tables allow."""

    block_starts: tuple[int, ...]
    name: str = field(default="stall_cut", init=False)

    @staticmethod
    def instances(code: KernelCode, options: MoveOptions = MoveOptions()) -> list[StallCut]:
        """One instance per block that has slack: a fixed-latency instruction stalling more than 1."""
        out = []
        for b in movable_blocks(code.instructions):
            block = code.instructions[b.start : b.end]
            if not options.covers(block[0].offset):
                continue
            if any(i.ctrl.stall > 1 and i.known and not i.is_barrier and not i.is_variable_latency for i in block):
                out.append(StallCut((b.start,)))
        return out

    @property
    def blocks(self) -> tuple[int, ...]:
        return self.block_starts

    @staticmethod
    def merged(moves: list[StallCut]) -> StallCut:
        """All the blocks of several instances as one move (one write, one verification)."""
        return StallCut(tuple(sorted(start for m in moves for start in m.block_starts)))

    def apply(self, code: KernelCode, instructions: tuple[Instruction, ...]) -> Candidate:
        new = instructions
        for start in self.block_starts:
            block = block_at(new, start)
            cut = schedule_block(new, block.start, block.end, list(block.indices()), code.arch, keep_reuse=True)
            if stall_sum(cut) < stall_sum(new):  # the greedy schedule can lose to the compiler's: keep the better
                new = cut
        return Candidate(code, new, code.kernel.regcount)


@dataclass(frozen=True)
class Swap:
    """Exchange two adjacent independent instructions of a block."""

    index: int
    name: str = field(default="swap", init=False)

    @property
    def blocks(self) -> tuple[int, ...]:
        return (self.index,)  # an index inside the block (the block is found when applied)

    @staticmethod
    def instances(code: KernelCode, options: MoveOptions = MoveOptions()) -> list[Swap]:
        """Adjacent independent pairs, except next to a barrier that keeps its neighbours
        (legality.barriers): the verifier would reject the swap, so no trial is spent on it."""
        out = []
        ins = code.instructions
        kept = load_rules(code.arch).keeps_neighbours
        for b in movable_blocks(ins):
            if not options.covers(ins[b.start].offset):
                continue
            for i in range(b.start, b.end - 1):
                a, c = ins[i], ins[i + 1]
                beside_kept = (i > 0 and kept(ins[i - 1])) or (i + 2 < len(ins) and kept(ins[i + 2]))
                if dependency(a, c) is None and a.base != "NOP" and c.base != "NOP" and not beside_kept:
                    out.append(Swap(i))
        return out

    def apply(self, code: KernelCode, instructions: tuple[Instruction, ...]) -> Candidate:
        block = block_at(instructions, self.index)
        if self.index + 1 >= block.end or dependency(instructions[self.index], instructions[self.index + 1]):
            raise NotApplicable(f"instructions {self.index} and {self.index + 1} are no longer independent")
        order = list(block.indices())
        k = self.index - block.start
        order[k], order[k + 1] = order[k + 1], order[k]
        new = schedule_block(instructions, block.start, block.end, order, code.arch, keep_stalls=True)
        return Candidate(code, new, code.kernel.regcount, moved=2)


@dataclass(frozen=True)
class LoadBatch:
    """Hoist the loads of one block up past independent instructions, in their original
    order, so they are in flight together. Registers a hoisted load would clobber are
    renamed to fresh ones above the kernel's register count. Hoisting a global load above
    a store needs `noalias` (the buffers are known distinct kernel parameters)."""

    block_start: int
    max_loads: int = 64
    noalias: Noalias = False
    name: str = field(default="load_batch", init=False)

    @property
    def blocks(self) -> tuple[int, ...]:
        return (self.block_start,)

    @staticmethod
    def instances(code: KernelCode, options: MoveOptions = MoveOptions()) -> list[LoadBatch]:
        """Blocks where at least one load can move up (the hoisting plan is found, not guessed)."""
        out = []
        noalias = options.noalias
        for b in movable_blocks(code.instructions):
            if not options.covers(code.instructions[b.start].offset):
                continue
            loads = [i for i in b.indices() if is_hoistable_load(code.instructions[i])]
            if loads and _plan_hoists(code, b, LoadBatch.max_loads, noalias) is not None:
                out.append(LoadBatch(b.start, noalias=noalias))
        return out

    def apply(self, code: KernelCode, instructions: tuple[Instruction, ...]) -> Candidate:
        if instructions is not code.instructions:
            raise LegalityError("LoadBatch applies to a freshly decoded kernel")
        block = block_at(instructions, self.block_start)
        plan = _plan_hoists(code, block, self.max_loads, self.noalias)
        if plan is None:
            raise NotApplicable(f"no load of block {self.block_start} can move")
        order, renames, regcount, notes = plan
        renamed = apply_renames(code, renames, regcount)
        new = schedule_block(renamed.instructions, block.start, block.end, order, code.arch)
        moved = sum(1 for k, i in enumerate(order) if i != block.start + k)
        return Candidate(renamed, new, regcount, tuple(notes), moved)


def _plan_hoists(code: KernelCode, block: Block, max_loads: int, noalias: Noalias):
    ins = code.instructions
    buffers = address_parameters(code) if noalias else None
    declared = declared_parameters(noalias)
    webs = analyse_block(ins, block, guarded_live_out(ins)[block.start])
    order = list(block.indices())
    renames: list[OperandRename] = []
    next_reg = code.registers_used()
    notes: list[str] = []
    floor = 0  # loads keep their relative order
    hoisted = 0
    for load_index in [i for i in block.indices() if is_hoistable_load(ins[i])][:max_loads]:
        pos = order.index(load_index)
        target = pos
        clobbered: set[str] = set()
        passed_store = False
        while target > floor:
            other = ins[order[target - 1]]
            dep = dependency(other, ins[load_index], bool(noalias), buffers, declared)
            if dep is None:
                passed_store |= bool(other.access.mem_writes)
                target -= 1
                continue
            kind, _ = dep
            if (
                kind in ("WAR", "WAW")
                and not (other.access.writes & ins[load_index].access.reads)
                and not memory_conflict(other, ins[load_index], bool(noalias), buffers, declared)
            ):
                clobbered |= ins[load_index].access.writes & (other.access.reads | other.access.writes)
                target -= 1
                continue
            break
        if target == pos:
            floor = pos + 1
            continue
        if clobbered:
            planned = _rename_plan(code, webs, load_index, next_reg)
            if planned is None:
                floor = pos + 1
                continue
            more, next_reg = planned
            renames += more
        order.insert(target, order.pop(pos))
        floor = target + 1
        hoisted += 1
        if passed_store and ins[load_index].access.mem_reads:
            notes.append(
                f"{ins[load_index].offset:#06x} {ins[load_index].opcode}: hoisted above a store, "
                "assuming the buffers do not alias"
            )
    if not hoisted:
        return None
    regcount = max(code.kernel.regcount, next_reg + RESERVED_REGISTERS) if renames else code.kernel.regcount
    if regcount > code.kernel.regcount:
        notes.append(f"registers {code.kernel.regcount} -> {regcount} (renamed {len(renames)} operands)")
    return order, renames, regcount, notes


def _align(value: int, to: int) -> int:
    return (value + to - 1) // to * to


def _rename_plan(code: KernelCode, webs: BlockWebs, load_index: int, next_reg: int):
    """Operand renames that give the load's result fresh registers for all its reads.

    Only a destination the block's webs call renamable qualifies: the only value each of
    its reads can see, not live after the block (a guarded load's value read under another
    guard, or after the block, keeps its register and the load stays)."""
    pos = load_index - webs.block.start
    d = next((k for k, df in enumerate(webs.defs) if df.pos == pos and df.operand == 0), None)
    if d is None or d not in webs.renamable or webs.defs[d].regs[0][0] != "R":
        return None
    width = len(webs.defs[d].regs)
    new_base = _align(next_reg, width if width in (2, 4) else 1)
    if new_base + width + RESERVED_REGISTERS > 255:
        return None
    return web_renames(code.instructions, webs, d, new_base), new_base + width
