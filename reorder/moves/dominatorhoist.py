"""DominatorHoist: move a block's global loads up into the block before it, under the guard
that leads into the block.

A block entered only from one predecessor D, whose last instruction is a guarded branch or
exit on a predicate (`@P0 EXIT`, `@!P1 BRA L`), runs exactly for the threads whose guard
holds at that branch. A load of the block, issued in D under that same guard, runs for the same
threads with the same address, so its latency overlaps D's tail instead of following it. ptxas
never issues a load above the branch that guards it; `if (i < n) { ... x[i] ... }` and the
guarded tails of reductions leave a load waiting for the branch's predicate (13 cycles on the
H200) and for everything D does after its address is known.

A load travels when, in the original, it is a plain global load (legality.crossings.is_global_load),
unguarded or guarded by the path's own guard (an unguarded load takes the path guard: the one
field its word gains; its other bits stay), and nothing it passes conflicts with it: no
instruction before it in its block, or after its new place in D, writes what it reads (its
address, its guard), reads or writes what it writes, may write its buffer (a store or atomic of
another buffer passes only under `noalias`, as `--assume-noalias` says), is a barrier or is an
op the tool cannot read. The load lands in D after the last instruction it conflicts with, in
its original order among the loads moved. No register is renamed: a load whose destination is
touched on the way stays. A kernel with a call, a return or an indirect branch is left alone (a
return address is an immediate of a MOV, a jump table holds offsets: both would need rewriting),
so is a block that the load would leave empty.

Blocks keep their order and count; D grows and the block shrinks, every branch target is
written at its block's new offset, the two blocks' control codes come from the scheduler
(reorder.moves.schedule), and the verifier judges the move against the original
(legality.blockmoves: guard, memory and the values the two blocks leave).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import networkx as nx

from legality.blockmoves import absolute_addresses, block_ordinal, path_guard, sole_predecessor
from legality.crossings import is_global_load, may_alias, writes_global
from reorder.analysis.buffers import address_parameters
from reorder.analysis.cfg import Block, basic_blocks, control_flow_graph, movable_blocks
from reorder.base.errors import EncodingError, LegalityError, NotApplicable
from reorder.binary import branches
from reorder.moves.blocks import declared_parameters
from reorder.moves.protocol import Candidate, MoveOptions, Noalias
from reorder.moves.schedule import schedule_block
from reorder.sass.model import Instruction, KernelCode
from reorder.sass.rename import GUARD_FIELD, disassemble_guarded

MAX_LOADS = 16


@dataclass(frozen=True)
class HoistPlan:
    """Which loads of the block move (absolute indices) and after which index of D each lands
    (-1: D's start), with the guard each runs under in D."""

    dom: int  # D's start index
    loads: tuple[int, ...]
    after: tuple[int, ...]
    guard: str
    notes: tuple[str, ...]


@dataclass(frozen=True)
class DominatorHoist:
    """Hoist the global loads of the `ordinal`-th basic block into its sole predecessor, under
    the guard of the branch between them (blocks are named by ordinal, which the move and every
    in-block move keep)."""

    ordinal: int
    block_start: int  # the block's first index when listed (for reports: the move finds it by ordinal)
    noalias: Noalias = False
    count: int = MAX_LOADS  # at most this many loads, the first ones of the block
    name: str = field(default="dominator_hoist", init=False)

    @property
    def blocks(self) -> tuple[int, ...]:
        """The block the loads leave (its predecessor, which they join, changes too)."""
        return (self.block_start,)

    @staticmethod
    def instances(code: KernelCode, options: MoveOptions = MoveOptions()) -> list[DominatorHoist]:
        """Blocks with at least one load that can move (the plan is computed)."""
        ins = code.instructions
        if absolute_addresses(ins):
            return []
        blocks = basic_blocks(ins)
        movable = {b.start for b in movable_blocks(ins)}
        cfg = control_flow_graph(ins)
        buffers = address_parameters(code) if options.noalias else {}
        out = []
        for k, b in enumerate(blocks):
            if b.start not in movable or not options.covers(ins[b.start].offset):
                continue
            if not any(is_global_load(ins[i]) for i in b.indices()):
                continue
            if plan_hoist(ins, blocks, cfg, movable, b, options.noalias, buffers) is not None:
                out.append(DominatorHoist(k, b.start, options.noalias))
        return out

    def apply(self, code: KernelCode, instructions: tuple[Instruction, ...]) -> Candidate:
        if instructions is not code.instructions:
            raise LegalityError("DominatorHoist applies to a freshly decoded kernel")
        if absolute_addresses(instructions):
            raise NotApplicable(
                "the kernel holds code addresses the move cannot rewrite (a call, return or jump table)"
            )
        blocks = basic_blocks(instructions)
        if self.ordinal >= len(blocks):
            raise NotApplicable(f"no block {self.ordinal}")
        cfg = control_flow_graph(instructions)
        movable = {b.start for b in movable_blocks(instructions)}
        buffers = address_parameters(code) if self.noalias else {}
        block = blocks[self.ordinal]
        plan = plan_hoist(instructions, blocks, cfg, movable, block, self.noalias, buffers, self.count)
        if plan is None:
            raise NotApplicable(f"no load of block {self.ordinal} can move into its predecessor")
        new = hoisted_order(instructions, blocks, block, plan, code.arch)
        return Candidate(code, new, code.kernel.regcount, plan.notes, len(plan.loads))


def plan_hoist(
    ins: tuple[Instruction, ...],
    blocks: tuple[Block, ...],
    cfg,
    movable: set[int],
    block: Block,
    noalias: Noalias,
    buffers: dict[int, frozenset[int]],
    count: int = MAX_LOADS,
) -> HoistPlan | None:
    """The loads of `block` (at most `count`) that can run in its sole predecessor under the
    path's guard, and where each lands there; None when none can (module docstring)."""
    pred = sole_predecessor(cfg, block.start)
    if pred is None or pred not in movable or pred == block.start:
        return None
    dom = next(b for b in blocks if b.start == pred)
    guard = path_guard(ins, dom, block)
    if guard is None:
        return None
    declared = declared_parameters(noalias)
    touched, written = _other_path(ins, blocks, cfg, dom, block)
    passed: list[int] = []
    loads: list[int] = []
    after: list[int] = []
    for i in range(block.start, block.end - 1):  # the block's last instruction stays: the block keeps one
        load = ins[i]
        if not load.known or load.is_barrier:
            break
        if (
            len(loads) < count
            and _travels(load, guard)
            and not load.access.writes & touched
            and not load.access.reads & written
            and not _blocked(load, [ins[j] for j in passed], buffers, noalias, declared)
        ):
            land = _landing(ins, dom, load, guard, buffers, noalias, declared)
            if land is not None:
                loads.append(i)
                after.append(max([land, *after[-1:]]))
                continue
        passed.append(i)
    if not loads:
        return None
    note = (
        f"block {ins[block.start].offset:#06x}: {len(loads)} global loads moved into the block at "
        f"{ins[dom.start].offset:#06x}, under {guard} (the guard of the branch between them)"
        + ("; assuming distinct parameters do not alias" if noalias else "")
    )
    return HoistPlan(dom.start, tuple(loads), tuple(after), guard, (note,))


def _other_path(
    ins: tuple[Instruction, ...], blocks: tuple[Block, ...], cfg, dom: Block, block: Block
) -> tuple[frozenset[str], frozenset[str]]:
    """(read or written, written) by the blocks D's other path can reach: a moved load's result
    pending on its scoreboard, or its address not yet read, would meet them there (the verifier's
    model does not follow the guard into the other path, so such a load stays)."""
    others = set()
    for s in cfg.successors(dom.start):
        if s != block.start:
            others |= nx.descendants(cfg, s) | {s}
    touched: set[str] = set()
    written: set[str] = set()
    for b in blocks:
        if b.start in others:
            for i in b.indices():
                touched |= ins[i].access.reads | ins[i].access.writes
                written |= ins[i].access.writes
    return frozenset(touched), frozenset(written)


def _travels(load: Instruction, guard: str) -> bool:
    """A plain global load, unguarded or under the path's guard."""
    return is_global_load(load) and load.guard in ("", guard) and not load.has_relocation


def _conflicts(
    other: Instruction,
    load: Instruction,
    guard: str,
    buffers: dict[int, frozenset[int]],
    noalias: Noalias,
    declared: frozenset[int] | None,
) -> bool:
    """Whether `load` (running under `guard`) may not change places with `other`."""
    if not other.known or other.is_barrier:
        return True
    reads = load.access.reads | {guard.lstrip("@!")}
    writes = load.access.writes
    if other.access.writes & (reads | writes) or other.access.reads & writes:
        return True
    if writes_global(other):
        return may_alias(
            buffers.get(load.offset, frozenset()), buffers.get(other.offset, frozenset()), bool(noalias), declared
        )
    return False


def _blocked(
    load: Instruction,
    passed: list[Instruction],
    buffers: dict[int, frozenset[int]],
    noalias: Noalias,
    declared: frozenset[int] | None,
) -> bool:
    """Whether an instruction before the load in its block keeps it there (the guard is read in
    D, so only the load's own operands count here)."""
    return any(_conflicts(p, load, load.guard or "@PT", buffers, noalias, declared) for p in passed)


def _landing(
    ins: tuple[Instruction, ...],
    dom: Block,
    load: Instruction,
    guard: str,
    buffers: dict[int, frozenset[int]],
    noalias: Noalias,
    declared: frozenset[int] | None,
) -> int | None:
    """The index of D after which the load lands: D's last instruction it conflicts with
    (dom.start - 1 when none), never past D's branch; None when the branch itself conflicts."""
    last = dom.end - 1
    if _conflicts_branch(ins[last], load):
        return None
    hit = [j for j in range(dom.start, last) if _conflicts(ins[j], load, guard, buffers, noalias, declared)]
    return hit[-1] if hit else dom.start - 1


def _conflicts_branch(branch: Instruction, load: Instruction) -> bool:
    """The branch reads only its guard; the load must not write it."""
    return bool(branch.access.reads & load.access.writes)


def hoisted_order(
    ins: tuple[Instruction, ...], blocks: tuple[Block, ...], block: Block, plan: HoistPlan, arch: int
) -> tuple[Instruction, ...]:
    """The kernel with the plan's loads in D (under the plan's guard), every branch target at its
    block's new offset, and D's and the block's control codes recomputed."""
    moving = set(plan.loads)
    before: dict[int, list[int]] = {}
    for load, after in zip(plan.loads, plan.after):
        before.setdefault(after + 1, []).append(load)
    order: list[int] = []
    for i in range(len(ins)):
        order += before.get(i, [])
        if i not in moving:
            order.append(i)
    position = {old: new for new, old in enumerate(order)}
    starts = _new_starts(blocks, plan.dom, block.start, len(moving))
    new = tuple(
        _retargeted(_guarded(ins[i], plan.guard, arch) if i in moving else ins[i], starts, position[i], arch)
        for i in order
    )
    new_blocks = basic_blocks(new)
    if [(b.start, b.end) for b in new_blocks] != _expected(blocks, starts):
        raise EncodingError("the move changed the kernel's blocks beyond the two it joins")
    for k in sorted({block_ordinal(blocks, plan.dom), block_ordinal(blocks, block.start)}):
        b = new_blocks[k]
        new = schedule_block(new, b.start, b.end, list(range(b.start, b.end)), arch)
    return new


def _expected(blocks: tuple[Block, ...], starts: dict[int, int]) -> list[tuple[int, int]]:
    """The new blocks' bounds: each old block from its new start to the next one's."""
    new_starts = [starts[b.start] for b in blocks]
    total = sum(b.end - b.start for b in blocks)
    return list(zip(new_starts, new_starts[1:] + [total]))


def _new_starts(blocks: tuple[Block, ...], dom: int, block: int, moved: int) -> dict[int, int]:
    """Old block start index -> new start index: blocks keep their order, D holds `moved` more
    instructions and the block `moved` fewer."""
    out, at = {}, 0
    for b in blocks:
        out[b.start] = at
        at += b.end - b.start + (moved if b.start == dom else -moved if b.start == block else 0)
    return out


def _guarded(load: Instruction, guard: str, arch: int) -> Instruction:
    """`load` under `guard`: unchanged when it already is, else its guard field [15:12] set
    and the word checked with nvdisasm (the one field a moved load's word may gain)."""
    if load.guard == guard or not is_global_load(load):
        return load
    negated, number = guard.startswith("@!"), int(guard.lstrip("@!P"))
    word = (load.word & ~(0xF << GUARD_FIELD)) | ((number | (8 if negated else 0)) << GUARD_FIELD)
    ((got_guard, opcode, operands),) = disassemble_guarded([word], arch)
    if got_guard != guard or opcode != load.opcode or operands != load.operands:
        raise EncodingError(f"{load.offset:#06x} {load.opcode}: the guard {guard} did not encode", load.offset)
    from reorder.sass.model import make_instruction

    record = {"opcode": opcode, "operands": ", ".join(operands), "predicate": got_guard}
    return make_instruction(load.offset, word, record, load.has_relocation, arch)


def _retargeted(ins: Instruction, starts: dict[int, int], new_index: int, arch: int) -> Instruction:
    """A branch (or BSSY) pointed at its target block's new start; an instruction that does not
    move is re-encoded here (the writer re-encodes the ones that move)."""
    if ins.target is None or ins.target // 16 not in starts:
        return ins
    target = 16 * starts[ins.target // 16]
    if target == ins.target:
        return ins
    word = ins.word
    if ins.offset == 16 * new_index:
        word = branches.encode_target(word, arch, ins.offset, target, ins.base)
    return replace(ins, word=word, target=target)
