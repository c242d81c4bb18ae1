"""Guard-aware def-use webs of one basic block, and guard-aware liveness over the CFG.

Renaming a destination is only sound when every read that may see the value sees only
that value. SASS makes "may see" subtle: a guarded write (`@!P0 LDG R4`) leaves the old
value in place when its guard is false, so a later read of R4 sees it only if the read is
guarded by the same predicate value (`@!P0 FMUL .., R4`, with P0 not rewritten in
between); any other read may see either value. So for every read of a general register
or predicate the set of writes that may reach it is computed (ENTRY standing for a value
from before the block), and a write is renamable when it is the only write reaching each
of its reads, none of those reads is opaque (an instruction whose reads are not all
visible in its operands), and it does not reach the block's end while live there.

Liveness uses the same rule: a read covered by an earlier same-guard write in its block
is not upward exposed (so the guarded loads and their guarded consumers of an unrolled
loop body leave their registers dead across the back edge).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass, field
from functools import lru_cache

from reorder.analysis.cfg import Block, basic_blocks
from reorder.analysis.liveness import solve_live_out
from reorder.sass.model import Instruction
from reorder.sass.operands import operand_names
from reorder.sass.rename import GUARD_OPERAND, OperandRename

ENTRY = -1  # the def id standing for "a value from before the block"
GUARD = -1  # the operand index of a guard read
OPAQUE = -2  # the operand index of an opaque instruction's hidden reads / writes
_NEVER: tuple[str, bool] = ("?", False)  # a guard no read shares: an opaque write neither covers nor kills
Guard = tuple[str, bool] | None  # (predicate, negated); None when unguarded


@dataclass(frozen=True, slots=True)
class Def:
    """One destination operand of one instruction: the registers it writes (R or P, one kind)."""

    pos: int  # index into the block
    operand: int
    regs: tuple[str, ...]
    guard: Guard


@dataclass(frozen=True, slots=True)
class Use:
    """One source operand (or the guard) of one instruction: the registers it reads."""

    pos: int
    operand: int  # GUARD for the guard predicate
    regs: tuple[str, ...]
    guard: Guard  # the guard under which the read happens (None for the guard read itself)


@dataclass(frozen=True)
class BlockWebs:
    """Defs, uses and reaching sets of one block.

    `reach[(u, reg)]` is the set of def ids (indices into `defs`, or ENTRY) that may
    deliver `reg` to use `u` (an index into `uses`); `end_reach[reg]` the same for a value
    live after the block. `renamable` holds the def ids whose destination may be renamed.
    `users[d]` is `uses_of(d)`, kept (a rename of every def of a block asks for each).
    """

    block: Block
    defs: tuple[Def, ...]
    uses: tuple[Use, ...]
    reach: dict[tuple[int, str], frozenset[int]]
    end_reach: dict[str, frozenset[int]]
    opaque: frozenset[int]  # block positions whose reads/writes are not all in their operands
    renamable: frozenset[int]
    users: dict[int, tuple[int, ...]] = field(default_factory=dict, repr=False, compare=False)

    def uses_of(self, d: int) -> list[int]:
        """Use ids that def `d` may reach."""
        return list(self.users.get(d, ()))


@lru_cache(maxsize=8)  # asked for every block of one kernel
def calls_subroutines(instructions: tuple[Instruction, ...]) -> bool:
    """Whether the kernel CALLs code in its own text. Nothing is renamed in such a kernel:
    on the H200 the two batch-loads outputs that renamed registers in a kernel with CALL
    (embedding_bag_mean, 28 operands; int_divmod, 16) gave wrong bytes and an illegal
    address, each block alone too, while every rename in kernels without CALL (RMSNorm 30,
    batched_mat4 56) and every kernel with CALL but no rename were byte-identical. The
    cause is not known (the renamed blocks are symbolically equivalent and no renamed value
    lives across a CALL), so renaming is refused there rather than guessed at."""
    return any(i.base == "CALL" for i in instructions)


def is_renamable_name(name: str) -> bool:
    return (name[0] == "R" or name[0] == "P") and name[1:].isdigit()


def guard_of(ins: Instruction) -> Guard:
    """The guard as (predicate, negated). `@PT` is no guard; a guard this analysis cannot
    follow (a uniform predicate, `@!PT`) is one no other instruction shares."""
    g = ins.guard.lstrip("@")
    if not g or g == "PT":
        return None
    pred = g.lstrip("!")
    return (pred, g.startswith("!")) if is_renamable_name(pred) else _NEVER


OperandRegisters = tuple[tuple[int, tuple[str, ...]], ...]


def operand_registers(ins: Instruction) -> tuple[OperandRegisters, OperandRegisters]:
    """(destination operands, source operands) as (operand index, R/P names read or written)."""
    return _operand_registers(ins.opcode, ins.operands)


@lru_cache(maxsize=1 << 17)  # every analysis of a block parses its operands again: once per text
def _operand_registers(opcode: str, operands: tuple[str, ...]) -> tuple[OperandRegisters, OperandRegisters]:
    def renamable(side) -> OperandRegisters:
        kept = ((k, tuple(n for n in names if is_renamable_name(n))) for k, names in side)
        return tuple((k, names) for k, names in kept if names)

    dsts, srcs = operand_names(opcode, operands)
    return renamable(dsts), renamable(srcs)


@lru_cache(maxsize=1 << 17)  # asked of each instruction by every analysis of its block
def _is_opaque(ins: Instruction) -> bool:
    """Reads or writes R/P registers that its operands do not show (or is unknown)."""
    if not ins.known or ins.base in ("CALL", "RET", "BRX", "JMX"):
        return True
    dsts, srcs = operand_registers(ins)
    guard = guard_of(ins)
    shown_w = {r for _, regs in dsts for r in regs}
    shown_r = {r for _, regs in srcs for r in regs} | ({guard[0]} if guard and is_renamable_name(guard[0]) else set())
    return {r for r in ins.access.writes if is_renamable_name(r)} != shown_w or {
        r for r in ins.access.reads if is_renamable_name(r)
    } != shown_r


@lru_cache(maxsize=8)  # asked for every block of one kernel (one pass over the kernel each time)
def named_registers(instructions: tuple[Instruction, ...]) -> frozenset[str]:
    """Every general register and predicate some instruction of the kernel names: what an
    opaque instruction may touch (callees share the kernel's registers; a register no
    instruction names holds nothing anyone reads)."""
    return frozenset(r for i in instructions for r in i.access.reads | i.access.writes if is_renamable_name(r)) | {
        f"P{k}" for k in range(7)
    }


def _hidden(ins: Instruction, names: frozenset[str], universe: frozenset[str]) -> tuple[str, ...]:
    if not ins.known or ins.base in ("CALL", "RET", "BRX", "JMX"):
        return tuple(sorted(universe))
    return tuple(sorted(r for r in names if is_renamable_name(r)))


def _collect(instructions: tuple[Instruction, ...], block: Block, universe: frozenset[str]):
    """Defs and uses of a block. An opaque instruction becomes one use of everything it may
    read and one never-covering def of everything it may write (so nothing it touches is
    renamed, and the values it may read stay live up to it)."""
    defs: list[Def] = []
    uses: list[Use] = []
    opaque = set()
    for pos, i in enumerate(block.indices()):
        ins = instructions[i]
        if _is_opaque(ins):
            opaque.add(pos)
            uses.append(Use(pos, OPAQUE, _hidden(ins, ins.access.reads, universe), None))
            defs.append(Def(pos, OPAQUE, _hidden(ins, ins.access.writes, universe), _NEVER))
            continue
        guard = guard_of(ins)
        dsts, srcs = operand_registers(ins)
        if guard is not None and is_renamable_name(guard[0]):
            uses.append(Use(pos, GUARD, (guard[0],), None))
        uses += [Use(pos, k, regs, guard) for k, regs in srcs]
        defs += [Def(pos, k, regs, guard) for k, regs in dsts]
    return tuple(defs), tuple(uses), frozenset(opaque)


@dataclass(frozen=True)
class Writers:
    """The defs of a block by register: for each R/P name, the ids of the defs writing it and
    their block positions, in block order. A reaching set is then a walk back over one
    register's writers, not over every def of the block (which made a block's webs quadratic
    in its length: 31 CPU-s for one 4,826-instruction block)."""

    defs: tuple[Def, ...]
    ids: dict[str, list[int]]
    positions: dict[str, list[int]]

    @staticmethod
    def of(defs: tuple[Def, ...]) -> Writers:
        ids: dict[str, list[int]] = {}
        positions: dict[str, list[int]] = {}
        for d, df in enumerate(defs):
            for reg in df.regs:
                mine = ids.setdefault(reg, [])
                if not mine or mine[-1] != d:
                    mine.append(d)
                    positions.setdefault(reg, []).append(df.pos)
        return Writers(defs, ids, positions)

    def reaching(self, pos: int, reg: str, guard: Guard) -> frozenset[int]:
        """Def ids that may deliver `reg` to a read at `pos` under `guard` (ENTRY: from
        before): the nearest writers back to one that surely covers the read (unguarded, or
        under the read's own guard with the predicate not written in between)."""
        ids = self.ids.get(reg, ())
        found = set()
        for k in range(bisect_left(self.positions.get(reg, ()), pos) - 1, -1, -1):
            d = ids[k]
            df = self.defs[d]
            found.add(d)
            if df.guard is None or (df.guard == guard and self.same_predicate_value(df.pos, pos, guard[0])):
                return frozenset(found)
        return frozenset(found | {ENTRY})

    def same_predicate_value(self, start: int, end: int, pred: str) -> bool:
        """No write of `pred` at positions [start, end): a guard read at both ends sees one value."""
        positions = self.positions.get(pred, ())
        k = bisect_left(positions, start)
        return k == len(positions) or positions[k] >= end


def analyse_block(instructions: tuple[Instruction, ...], block: Block, live_after: frozenset[str]) -> BlockWebs:
    """Webs of one block, given the R/P registers live after it."""
    defs, uses, opaque = _collect(instructions, block, named_registers(instructions))
    n = block.end - block.start
    writers = Writers.of(defs)
    reach = {(u, reg): writers.reaching(use.pos, reg, use.guard) for u, use in enumerate(uses) for reg in use.regs}
    end_reach = {reg: writers.reaching(n, reg, None) for reg in live_after if is_renamable_name(reg)}
    users = _users(reach)
    pinned = {d for (u, _), ids in reach.items() if uses[u].operand == OPAQUE for d in ids}
    for ids in end_reach.values():
        pinned |= ids
    renamable = (
        frozenset()
        if calls_subroutines(instructions)
        else frozenset(
            d
            for d in range(len(defs))
            if d not in pinned
            and _sole_writer(d, defs, uses, reach, users.get(d, ()))
            and _renamable_def(instructions[block.start + defs[d].pos], defs[d])
        )
    )
    return BlockWebs(block, defs, uses, reach, end_reach, opaque, renamable, users)


def _users(reach: dict[tuple[int, str], frozenset[int]]) -> dict[int, tuple[int, ...]]:
    """def id -> the use ids it may reach, ascending (one pass over `reach`)."""
    out: dict[int, set[int]] = {}
    for (u, _), ids in reach.items():
        for d in ids:
            out.setdefault(d, set()).add(u)
    return {d: tuple(sorted(us)) for d, us in out.items()}


def _sole_writer(d: int, defs: tuple[Def, ...], uses: tuple[Use, ...], reach, users: tuple[int, ...]) -> bool:
    """`d` is the only def reaching every register of every use it reaches (`users`; a
    multi-register use, like `R20.64`, must come wholly from `d`, or renaming its base would
    split it)."""
    only = frozenset({d})
    for u in users:
        if any(reach[(u, reg)] != only for reg in uses[u].regs):
            return False
        if not set(uses[u].regs) <= set(defs[d].regs):
            return False
    return True


def _renamable_def(ins: Instruction, d: Def) -> bool:
    kinds = {r[0] for r in d.regs}
    if d.operand == OPAQUE or len(kinds) != 1 or not ins.known or ins.is_barrier:
        return False
    if kinds == {"R"}:
        idx = [int(r[1:]) for r in d.regs]
        return len(idx) in (1, 2, 4) and idx == list(range(idx[0], idx[0] + len(idx)))
    return len(d.regs) == 1


def _upward_exposed(
    instructions: tuple[Instruction, ...], block: Block, universe: frozenset[str]
) -> tuple[frozenset[str], frozenset[str]]:
    """(registers read before any write that surely covers the read, registers surely written)."""
    defs, uses, _ = _collect(instructions, block, universe)
    writers = Writers.of(defs)
    exposed = {reg for use in uses for reg in use.regs if ENTRY in writers.reaching(use.pos, reg, use.guard)}
    killed = {reg for d in defs if d.guard is None for reg in d.regs}
    return frozenset(exposed), frozenset(killed)


def guarded_live_out(instructions: tuple[Instruction, ...]) -> dict[int, frozenset[str]]:
    """block start index -> general registers and predicates that may be read after the block."""
    universe = named_registers(instructions)
    use_def = {b.start: _upward_exposed(instructions, b, universe) for b in basic_blocks(instructions)}
    return solve_live_out(instructions, use_def)


def _literals(text: str, kind: str) -> list[int]:
    return [int(m) for m in re.findall(rf"(?<![A-Za-z0-9]){kind}(\d+)", text)]


def web_renames(instructions: tuple[Instruction, ...], webs: BlockWebs, d: int, new: int) -> list[OperandRename]:
    """Operand renames that move def `d` (a renamable one) and every read it reaches to base
    number `new` (a group keeps its layout: R4..R7 -> new..new+3)."""
    df = webs.defs[d]
    kind, base = df.regs[0][0], int(df.regs[0][1:])
    if new == base:
        return []
    start = webs.block.start
    out = [OperandRename(instructions[start + df.pos].offset, df.operand, base, new, kind)]
    for u in webs.uses_of(d):
        use = webs.uses[u]
        owner = instructions[start + use.pos]
        text = owner.guard if use.operand == GUARD else owner.operands[use.operand]
        index = GUARD_OPERAND if use.operand == GUARD else use.operand
        for lit in dict.fromkeys(_literals(text, kind)):
            if f"{kind}{lit}" in df.regs:
                out.append(OperandRename(owner.offset, index, lit, new + lit - base, kind))
    return out
