"""BarrierHoist: move a block's global loads above the `BAR.SYNC` (or `BAR.RED`) before them,
when no thread of the block can have written what they read before that barrier.

A barrier orders every thread's memory accesses before it against every thread's after it. A
load after it needs that order only for a buffer some thread may have written before it: a
load of a buffer written nowhere before the barrier (on any path into it, the barrier's block
itself included when it lies in a loop) reads the same bytes on either side. ptxas never moves
a load across a barrier, so a row kernel's weight loads wait for the reduction: here they are
issued before it, and their latency overlaps the barrier's wait.

Which buffers may have been written is decided from the cubin alone: the kernel's global and
generic stores and atomics that can run before the barrier, against the load by
`legality.graph.memory_conflict` (distinct pointer parameters are distinct buffers only under
`noalias`, as `--assume-noalias` says; `reorder.analysis.buffers` says which parameters an
address derives from). A non-coherent load (`LDG.E.CONSTANT`, ld.global.nc) reads data the
program promised read-only for the kernel's lifetime: no store can precede it. A strong or
volatile load is never moved.

The move is straight-line, inside one block: the loads after the barrier (up to the next one)
whose every dependency after the barrier is fixed-latency ALU work travel up with that work to
just before the barrier, in their order; nothing else moves. The block is seen through its
def-use webs as SliceBatch sees it (reorder.moves.slicebatch): the loads' results and their
slices get registers free across the new range (a linear scan over the new order: live ranges
checked), and the barrier's own registers (BAR.RED's count and predicate) are checked against
what moves past it. The scheduler places control codes from the latency tables and the
barrier floor measured on the H200 (6 cycles from BAR.SYNC / BAR.RED to a memory access,
legality/tables/barriers.toml), and the verifier judges the result against the original,
barrier crossings included (legality.crossings).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx

from legality.barriers import load_rules
from legality.crossings import before_barrier, crossable_load
from reorder.analysis.buffers import address_parameters
from reorder.analysis.cfg import Block, movable_blocks
from reorder.analysis.webs import BlockWebs, analyse_block, guarded_live_out
from reorder.base.errors import LegalityError, NotApplicable
from reorder.binary.cubin import RESERVED_REGISTERS
from reorder.moves.blocks import apply_renames, block_at, declared_parameters
from reorder.moves.protocol import Candidate, MoveOptions, Noalias
from reorder.moves.schedule import schedule_block
from reorder.moves.slicebatch import SlicePlan, _allocate, _graph, _regcount, _renames, _sliceable, _virtual
from reorder.sass.model import Instruction, KernelCode


@dataclass(frozen=True)
class BarrierHoist:
    """Hoist the global loads after the barrier at `barrier` (an instruction offset, in the block
    starting at index `block_start`) above it, with their address and guard slices; REGCOUNT may
    grow by at most `extra_registers`."""

    block_start: int
    barrier: int
    extra_registers: int = 32
    noalias: Noalias = False
    name: str = field(default="barrier_hoist", init=False)

    @property
    def blocks(self) -> tuple[int, ...]:
        return (self.block_start,)

    @staticmethod
    def instances(code: KernelCode, options: MoveOptions = MoveOptions()) -> list[BarrierHoist]:
        """Barriers with a measured floor that some load after them can cross (the plan is computed)."""
        live = guarded_live_out(code.instructions)
        out = []
        for b in movable_blocks(code.instructions):
            if not options.covers(code.instructions[b.start].offset):
                continue
            for q in _barriers(code, b):
                if plan_hoist(code, b, q, options.extra_registers, options.noalias, live) is not None:
                    out.append(
                        BarrierHoist(b.start, code.instructions[q].offset, options.extra_registers, options.noalias)
                    )
        return out

    def apply(self, code: KernelCode, instructions: tuple[Instruction, ...]) -> Candidate:
        if instructions is not code.instructions:
            raise LegalityError("BarrierHoist applies to a freshly decoded kernel")
        q = next((i for i, ins in enumerate(instructions) if ins.offset == self.barrier), None)
        if q is None or not instructions[q].is_barrier:
            raise NotApplicable(f"no barrier at {self.barrier:#06x}")
        block = block_at(instructions, q)
        plan = plan_hoist(code, block, q, self.extra_registers, self.noalias)
        if plan is None:
            raise NotApplicable(f"no load after the barrier at {self.barrier:#06x} can cross it")
        renamed = apply_renames(code, list(plan.renames), plan.regcount)
        new = schedule_block(renamed.instructions, block.start, block.end, list(plan.order), code.arch)
        moved = sum(1 for k, i in enumerate(plan.order) if i != block.start + k)
        return Candidate(renamed, new, plan.regcount, plan.notes, moved)


def _barriers(code: KernelCode, block: Block) -> list[int]:
    """Absolute indices of the block's barriers that have a measured distance rule (BAR.SYNC,
    BAR.RED): the floor the scheduler keeps after them is measured, not guessed."""
    rules = load_rules(code.arch)
    return [
        i
        for i in block.indices()
        if code.instructions[i].is_barrier
        and code.instructions[i].known
        and rules.distance_for(code.instructions[i].opcode)
    ]


def plan_hoist(
    code: KernelCode,
    block: Block,
    q: int,
    extra_registers: int,
    noalias: Noalias,
    live: dict[int, frozenset[str]] | None = None,
) -> SlicePlan | None:
    """The new order of the block with the crossable loads after barrier `q` (absolute index)
    moved above it with their slices, or None when none can move within the register budget."""
    ins = code.instructions
    live = live if live is not None else guarded_live_out(ins)
    p = q - block.start
    end = next((k for k in range(p + 1, block.end - block.start) if ins[block.start + k].is_barrier), None)
    segment = range(p + 1, end if end is not None else block.end - block.start)
    buffers = address_parameters(code)
    declared = declared_parameters(noalias)
    written = before_barrier(ins, q)
    loads = [
        k
        for k in segment
        if crossable_load(ins[block.start + k], [ins[s] for s in written], bool(noalias), buffers, declared)
    ]
    if not loads:
        return None
    webs = analyse_block(ins, block, live[block.start])
    graph = _graph(code, block, webs, noalias)
    graph.remove_edges_from([(p, k) for k in segment])
    limit = min(254 - RESERVED_REGISTERS, code.kernel.regcount - RESERVED_REGISTERS - 1 + extra_registers)
    for count in range(len(loads), 0, -1):
        hoist, chosen = _hoist_set(graph, code, block, p, loads[:count], webs)
        if not chosen:
            return None
        order = (
            list(range(p)) + sorted(hoist) + [p] + [k for k in range(p + 1, block.end - block.start) if k not in hoist]
        )
        assigned = _allocate(webs, order, limit)
        if assigned is None:
            continue
        renames = _renames(ins, webs, assigned)
        regcount = _regcount(code, webs, assigned)
        return SlicePlan(
            tuple(block.start + k for k in order),
            tuple(renames),
            regcount,
            tuple(block.start + k for k in chosen),
            _notes(code, block, q, chosen, hoist, bool(noalias), regcount),
        )
    return None


def _virtual_access(code: KernelCode, block: Block, webs: BlockWebs, pos: int) -> tuple[frozenset[str], frozenset[str]]:
    """(reads, writes) of block position `pos` over the webs' value names."""
    uses = [u for u, use in enumerate(webs.uses) if use.pos == pos]
    defs = [d for d, df in enumerate(webs.defs) if df.pos == pos]
    v = _virtual(code.instructions[block.start + pos], pos, webs, uses, defs)
    return v.access.reads, v.access.writes


def _hoist_set(
    graph: nx.DiGraph,
    code: KernelCode,
    block: Block,
    p: int,
    loads: list[int],
    webs: BlockWebs,
) -> tuple[set[int], list[int]]:
    """The loads (in order) whose every dependency after the barrier is sliceable ALU work or
    an already hoisted load, with that work; none of it may touch the barrier's own registers
    (BAR.RED writes a count and reads a predicate: no edge of the graph says so)."""
    ins = code.instructions
    bar_reads, bar_writes = _virtual_access(code, block, webs, p)
    hoist: set[int] = set()
    chosen: list[int] = []
    for load in loads:
        after = {a for a in nx.ancestors(graph, load) if a > p}
        if not all(a in hoist or _sliceable(ins[block.start + a]) for a in after):
            continue
        touched = [_virtual_access(code, block, webs, a) for a in after | {load}]
        if any(reads & bar_writes or writes & (bar_reads | bar_writes) for reads, writes in touched):
            continue
        hoist |= after | {load}
        chosen.append(load)
    return hoist, chosen


def _notes(
    code: KernelCode, block: Block, q: int, chosen: list[int], hoist: set[int], noalias: bool, regcount: int
) -> tuple[str, ...]:
    ins = code.instructions
    bar = ins[q]
    slices = len(hoist) - len(chosen)
    why = "no store before it may alias them" + (" (assuming distinct parameters do not alias)" if noalias else "")
    notes = [
        f"{bar.offset:#06x} {bar.opcode}: {len(chosen)} global loads hoisted above it with {slices} slice "
        f"instructions ({why})"
    ]
    if regcount > code.kernel.regcount:
        notes.append(f"registers {code.kernel.regcount} -> {regcount}")
    return tuple(notes)
