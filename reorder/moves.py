"""Moves: named, parameterized transformations that list their own legal instances.

Every move works inside one basic block, leaves branches, barriers and unknown opcodes
where they are, and hands the new order to `reorder.schedule` for control codes. A move
returns a `Candidate`; callers check it with `legality.verify` before writing it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from legality.graph import dependency, memory_conflict
from reorder.buffers import address_parameters
from reorder.cfg import Block, basic_blocks
from reorder.cubin import RESERVED_REGISTERS, parse_cubin
from reorder.errors import EncodingError, LegalityError, NotApplicable
from reorder.liveness import live_out
from reorder.operands import destination_count
from reorder.rename import OperandRename, register_regex, rename_words
from reorder.sass import Instruction, KernelCode, decode_kernel
from reorder.schedule import schedule_block
from reorder.writer import patch_kernel


@dataclass(frozen=True)
class Candidate:
    """A transformed kernel: its instructions (in new order), register count and notes."""

    code: KernelCode  # the kernel the instructions belong to (after any renaming)
    instructions: tuple[Instruction, ...]
    regcount: int
    notes: tuple[str, ...] = ()
    moved: int = 0

    def cubin_bytes(self) -> bytes:
        return patch_kernel(self.code.cubin, self.code.kernel, self.instructions, self.regcount)


@dataclass(frozen=True)
class StallCut:
    """Recompute the stalls of some blocks in their original order: the minimum the tables allow."""

    block_starts: tuple[int, ...]
    name: str = field(default="stall_cut", init=False)

    @staticmethod
    def instances(code: KernelCode, ranges: list[tuple[int, int]] | None = None) -> list[StallCut]:
        """One instance per block that has slack: a fixed-latency instruction stalling more than 1."""
        out = []
        for b in basic_blocks(code.instructions):
            block = code.instructions[b.start:b.end]
            if ranges and not any(lo <= block[0].offset < hi for lo, hi in ranges):
                continue
            if any(i.ctrl.stall > 1 and i.known and not i.is_barrier and not i.is_variable_latency for i in block):
                out.append(StallCut((b.start,)))
        return out

    @staticmethod
    def merged(moves: list[StallCut]) -> StallCut:
        """All the blocks of several instances as one move (one write, one verification)."""
        return StallCut(tuple(sorted(start for m in moves for start in m.block_starts)))

    def apply(self, code: KernelCode, instructions: tuple[Instruction, ...]) -> Candidate:
        new = instructions
        for start in self.block_starts:
            block = _block_at(new, start)
            cut = schedule_block(new, block.start, block.end, list(block.indices()), code.arch)
            if _stalls(cut) < _stalls(new):  # the greedy schedule can lose to the compiler's: keep the better
                new = cut
        return Candidate(code, new, code.kernel.regcount)


@dataclass(frozen=True)
class Swap:
    """Exchange two adjacent independent instructions of a block."""

    index: int
    name: str = field(default="swap", init=False)

    @staticmethod
    def instances(code: KernelCode) -> list[Swap]:
        out = []
        for b in basic_blocks(code.instructions):
            for i in range(b.start, b.end - 1):
                a, c = code.instructions[i], code.instructions[i + 1]
                if dependency(a, c) is None and a.base != "NOP" and c.base != "NOP":
                    out.append(Swap(i))
        return out

    def apply(self, code: KernelCode, instructions: tuple[Instruction, ...]) -> Candidate:
        block = _block_at(instructions, self.index)
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

    @staticmethod
    def instances(code: KernelCode, noalias: Noalias = False) -> list[LoadBatch]:
        """Blocks where at least one load can move up (the hoisting plan is found, not guessed)."""
        out = []
        for b in basic_blocks(code.instructions):
            loads = [i for i in b.indices() if _is_hoistable_load(code.instructions[i])]
            if loads and _plan_hoists(code, b, LoadBatch.max_loads, noalias) is not None:
                out.append(LoadBatch(b.start, noalias=noalias))
        return out

    def apply(self, code: KernelCode, instructions: tuple[Instruction, ...]) -> Candidate:
        if instructions is not code.instructions:
            raise LegalityError("LoadBatch applies to a freshly decoded kernel")
        block = _block_at(instructions, self.block_start)
        plan = _plan_hoists(code, block, self.max_loads, self.noalias)
        if plan is None:
            raise NotApplicable(f"no load of block {self.block_start} can move")
        order, renames, regcount, notes = plan
        renamed = _apply_renames(code, renames, regcount)
        new = schedule_block(renamed.instructions, block.start, block.end, order, code.arch)
        moved = sum(1 for k, i in enumerate(order) if i != block.start + k)
        return Candidate(renamed, new, regcount, tuple(notes), moved)


def _stalls(instructions: tuple[Instruction, ...]) -> int:
    return sum(i.ctrl.stall for i in instructions)


def _block_at(instructions: tuple[Instruction, ...], index: int) -> Block:
    return next(b for b in basic_blocks(instructions) if b.start <= index < b.end)


def _is_hoistable_load(ins: Instruction) -> bool:
    return ins.base in ("LDG", "LDS", "LDC", "LD", "LDL") and ins.known and not ins.is_barrier


Noalias = bool | tuple[int, ...]  # False: nothing assumed; True: all pointer parameters; or these indices


def _declared(noalias: Noalias) -> frozenset[int] | None:
    """The parameters declared not to alias anything: None for all of them."""
    return None if noalias is True or not noalias else frozenset(noalias)


def _plan_hoists(code: KernelCode, block: Block, max_loads: int, noalias: Noalias):
    ins = code.instructions
    buffers = address_parameters(code) if noalias else None
    declared = _declared(noalias)
    live = live_out(ins)
    order = list(block.indices())
    renames: list[OperandRename] = []
    next_reg = code.registers_used()
    notes: list[str] = []
    floor = 0  # loads keep their relative order
    hoisted = 0
    for load_index in [i for i in block.indices() if _is_hoistable_load(ins[i])][:max_loads]:
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
            if kind in ("WAR", "WAW") and not (other.access.writes & ins[load_index].access.reads) \
                    and not memory_conflict(other, ins[load_index], bool(noalias), buffers, declared):
                clobbered |= ins[load_index].access.writes & (other.access.reads | other.access.writes)
                target -= 1
                continue
            break
        if target == pos:
            floor = pos + 1
            continue
        if clobbered:
            planned = _rename_plan(code, block, load_index, next_reg, live)
            if planned is None:
                floor = pos + 1
                continue
            more, next_reg = planned
            renames += more
        order.insert(target, order.pop(pos))
        floor = target + 1
        hoisted += 1
        if passed_store and ins[load_index].access.mem_reads:
            notes.append(f"{ins[load_index].offset:#06x} {ins[load_index].opcode}: hoisted above a store, "
                         "assuming the buffers do not alias")
    if not hoisted:
        return None
    regcount = max(code.kernel.regcount, next_reg + RESERVED_REGISTERS) if renames else code.kernel.regcount
    if regcount > code.kernel.regcount:
        notes.append(f"registers {code.kernel.regcount} -> {regcount} (renamed {len(renames)} operands)")
    return order, renames, regcount, notes


def _align(value: int, to: int) -> int:
    return (value + to - 1) // to * to


def _rename_plan(code: KernelCode, block: Block, load_index: int, next_reg: int, live: dict[int, frozenset[str]]):
    """Operand renames that give the load's result fresh registers up to its last use."""
    ins = code.instructions
    load = ins[load_index]
    dest = sorted(load.access.writes, key=lambda r: int(r[1:]))
    if not dest or not all(r.startswith("R") for r in dest):
        return None
    base, width = int(dest[0][1:]), len(dest)
    new_base = _align(next_reg, width if width in (2, 4) else 1)
    if new_base + width + RESERVED_REGISTERS > 255:
        return None
    mapping = {base + k: new_base + k for k in range(width)}
    renames = [OperandRename(load.offset, 0, base, new_base)]
    alive = set(dest)
    for j in range(load_index + 1, block.end):
        other = ins[j]
        for k, operand in enumerate(other.operands):
            if k < _dest_count(other):
                continue
            for reg in sorted(alive):
                if _names_register(operand, int(reg[1:])):
                    renames.append(OperandRename(other.offset, k, int(reg[1:]), mapping[int(reg[1:])]))
        alive -= other.access.writes
        if not alive:
            break
    if alive & live.get(block.start, frozenset()):
        return None  # the loaded value is still needed after the block
    return renames, new_base + width


def _dest_count(ins: Instruction) -> int:
    return destination_count(ins.base, ins.operands)


def _names_register(operand: str, index: int) -> bool:
    return register_regex(index).search(operand) is not None


def _apply_renames(code: KernelCode, renames: list[OperandRename], regcount: int) -> KernelCode:
    if not renames:
        return code
    by_offset = {i.offset: i for i in code.instructions}
    words = rename_words(by_offset, renames, code.arch)
    ordered = [i.with_word(words.get(i.offset, i.word)) for i in code.instructions]
    data = patch_kernel(code.cubin, code.kernel, ordered, regcount)
    cubin = parse_cubin(data, code.cubin.path + " (renamed)")
    renamed = decode_kernel(cubin, code.kernel.name)
    if len(renamed.instructions) != len(code.instructions):
        raise EncodingError("renaming changed the instruction count")
    return renamed
