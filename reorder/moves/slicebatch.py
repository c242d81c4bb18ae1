"""SliceBatch: hoist a block's loads together with their backward slices, renaming what
the hoist would clobber, so the loads of an unrolled body are in flight together.

LoadBatch moves a load only past instructions it does not depend on, so it stops below
the ISETP and IADD3 that compute its guard and address; ptxas reuses those registers and
predicates between unrolled chunks, so the chunks' loads stay apart. Here the block is
seen through its def-use webs (reorder.analysis.webs): every renamable value gets its own name, the
dependency graph is built over those names (only true dependencies, memory order, and
the register conflicts of values that cannot be renamed remain), each load whose
ancestors are all fixed-latency ALU work (or loads already hoisted) is hoisted with those
ancestors to the top of the block, slices first and loads after them, and everything
else keeps its order. Registers and predicates are then assigned by a linear scan over
the new order: a value keeps its register where that clashes with nothing, else takes
the lowest free one (dead in the block first, new ones above the count within
`extra_registers`). The hoisted loads then get scoreboards of their own where some are free
(reorder.moves.scoreboards; `own_scoreboards=False` keeps the compiler's, and `instances` lists
both). Every rewritten word is checked with nvdisasm (reorder.sass.rename), and callers verify
the result (reorder.build.pipeline).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass, field, replace
from itertools import accumulate, chain

import networkx as nx

from legality.graph import order_edges
from reorder.analysis.buffers import address_parameters
from reorder.analysis.cfg import Block, movable_blocks
from reorder.analysis.webs import ENTRY, BlockWebs, analyse_block, guarded_live_out, is_renamable_name, web_renames
from reorder.base.errors import LegalityError, NotApplicable
from reorder.binary.cubin import RESERVED_REGISTERS, STACK_POINTER
from reorder.moves.blocks import apply_renames, block_at, declared_parameters, is_hoistable_load
from reorder.moves.protocol import Candidate, MoveOptions, Noalias
from reorder.moves.schedule import schedule_block
from reorder.moves.scoreboards import spread_scoreboards
from reorder.sass.model import Instruction, KernelCode
from reorder.sass.operands import Access
from reorder.sass.rename import OperandRename

PREDICATES = 7  # P0..P6; P7 is PT
REGISTER_FILE = 65536  # 32-bit registers per SM (sm_80, sm_90)
MAX_WARPS = 64  # resident warps per SM (sm_80, sm_90)


@dataclass(frozen=True)
class SliceBatch:
    """Hoist up to `max_loads` loads of the block at `block_start`, each with the ALU
    instructions computing its address and guard, renaming registers and predicates;
    REGCOUNT may grow by at most `extra_registers`. Passing a store needs `noalias`."""

    block_start: int
    max_loads: int = 16
    extra_registers: int = 32
    noalias: Noalias = False
    own_scoreboards: bool = True  # spread the loads over free scoreboards (reorder.moves.scoreboards)
    name: str = field(default="slice_batch", init=False)

    @property
    def blocks(self) -> tuple[int, ...]:
        return (self.block_start,)

    @staticmethod
    def instances(code: KernelCode, options: MoveOptions = MoveOptions()) -> list[SliceBatch]:
        """Blocks whose plan changes the order (the plan is computed, not guessed)."""
        live = guarded_live_out(code.instructions)
        noalias, extra_registers, max_loads = options.noalias, options.extra_registers, SliceBatch.max_loads
        out = []
        for b in movable_blocks(code.instructions):
            if not options.covers(code.instructions[b.start].offset):
                continue
            if not any(is_hoistable_load(code.instructions[i]) for i in b.indices()):
                continue
            plan = plan_slices(code, b, max_loads, extra_registers, noalias, live)
            if plan is not None:
                out.append(SliceBatch(b.start, max_loads, extra_registers, noalias))
                if len(plan.loads) > 1:  # the same batch on the compiler's scoreboards, for the search to weigh
                    out.append(SliceBatch(b.start, max_loads, extra_registers, noalias, own_scoreboards=False))
        return out

    def apply(self, code: KernelCode, instructions: tuple[Instruction, ...]) -> Candidate:
        if instructions is not code.instructions:
            raise LegalityError("SliceBatch applies to a freshly decoded kernel")
        block = block_at(instructions, self.block_start)
        plan = plan_slices(code, block, self.max_loads, self.extra_registers, self.noalias)
        if plan is None:
            raise NotApplicable(f"no load of block {self.block_start} can move")
        renamed = apply_renames(code, list(plan.renames), plan.regcount)
        new = schedule_block(renamed.instructions, block.start, block.end, plan.order, code.arch)
        notes = plan.notes
        if self.own_scoreboards:
            batch = frozenset(code.instructions[i].offset for i in plan.loads)
            new, note = spread_scoreboards(new, block.start, block.end, batch, code.arch)
            notes += (note,) if note else ()
        moved = sum(1 for k, i in enumerate(plan.order) if i != block.start + k)
        return Candidate(renamed, new, plan.regcount, notes, moved)


@dataclass(frozen=True)
class SlicePlan:
    """A new order of one block (absolute indices), the renames it needs, the register count."""

    order: tuple[int, ...]
    renames: tuple[OperandRename, ...]
    regcount: int
    loads: tuple[int, ...]  # absolute indices of the hoisted loads
    notes: tuple[str, ...]


def plan_slices(
    code: KernelCode,
    block: Block,
    max_loads: int,
    extra_registers: int,
    noalias: Noalias,
    live: dict[int, frozenset[str]] | None = None,
) -> SlicePlan | None:
    """The largest prefix of the block's loads (at most `max_loads`) whose hoist fits the
    register budget, or None when nothing would move."""
    ins = code.instructions
    live = live if live is not None else guarded_live_out(ins)
    webs = analyse_block(ins, block, live[block.start])
    graph = _graph(code, block, webs, noalias)
    loads = [p for p in range(block.end - block.start) if is_hoistable_load(ins[block.start + p])]
    limit = min(254 - RESERVED_REGISTERS, code.kernel.regcount - RESERVED_REGISTERS - 1 + extra_registers)
    for count in range(min(max_loads, len(loads)), 0, -1):
        hoist, chosen = _hoist_set(graph, ins, block, loads[:count])
        order = _order(graph, ins, block, hoist)
        if order == list(range(len(order))):
            return None
        assigned = _allocate(webs, order, limit)
        if assigned is None:
            continue
        renames = _renames(ins, webs, assigned)
        regcount = _regcount(code, webs, assigned)
        notes = _notes(code, block, order, chosen, renames, regcount)
        return SlicePlan(
            tuple(block.start + p for p in order),
            tuple(renames),
            regcount,
            tuple(block.start + p for p in chosen),
            notes,
        )
    return None


def _virtual_name(reg: str, d: int) -> str:
    return f"{reg}'{d}"


def _virtual(ins: Instruction, pos: int, webs: BlockWebs, uses: list[int], defs: list[int]) -> Instruction:
    """The instruction with every renamable value named after its web, so the dependency
    test sees only the conflicts renaming cannot remove (`uses`, `defs`: its use and def ids)."""
    if pos in webs.opaque:
        return ins
    reads = {r for r in ins.access.reads if not is_renamable_name(r)}
    writes = {r for r in ins.access.writes if not is_renamable_name(r)}
    for u in uses:
        for reg in webs.uses[u].regs:
            ids = webs.reach[(u, reg)]
            d = next(iter(ids))
            reads.add(_virtual_name(reg, d) if len(ids) == 1 and d in webs.renamable else reg)
    for d in defs:
        writes |= {_virtual_name(reg, d) if d in webs.renamable else reg for reg in webs.defs[d].regs}
    return replace(ins, access=Access(frozenset(reads), frozenset(writes), ins.access.mem_reads, ins.access.mem_writes))


def _graph(code: KernelCode, block: Block, webs: BlockWebs, noalias: Noalias) -> nx.DiGraph:
    """Dependencies between block positions over renamed values: only their order is read
    (ancestors, a topological sort, longest chains), so the edges are `order_edges`, whose
    closure is the pairwise graph's."""
    buffers = address_parameters(code) if noalias else None
    declared = declared_parameters(noalias)
    n = block.end - block.start
    uses_at: list[list[int]] = [[] for _ in range(n)]
    defs_at: list[list[int]] = [[] for _ in range(n)]
    for u, use in enumerate(webs.uses):
        uses_at[use.pos].append(u)
    for d, df in enumerate(webs.defs):
        defs_at[df.pos].append(d)
    virtual = [_virtual(code.instructions[i], p, webs, uses_at[p], defs_at[p]) for p, i in enumerate(block.indices())]
    graph = nx.DiGraph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from(order_edges(virtual, bool(noalias), buffers, declared))
    return graph


def _sliceable(ins: Instruction) -> bool:
    """Fixed-latency ALU work that may travel up with a load (no memory, no scoreboard)."""
    return (
        ins.known
        and not ins.is_barrier
        and not ins.is_variable_latency
        and not ins.access.mem_reads
        and not ins.access.mem_writes
    )


def _hoist_set(
    graph: nx.DiGraph, ins: tuple[Instruction, ...], block: Block, loads: list[int]
) -> tuple[set[int], list[int]]:
    """Loads (in order) whose every ancestor is sliceable or already hoisted, with those ancestors."""
    hoist: set[int] = set()
    chosen: list[int] = []
    for load in loads:
        ancestors = nx.ancestors(graph, load)
        if all(a in hoist or _sliceable(ins[block.start + a]) for a in ancestors):
            hoist |= ancestors | {load}
            chosen.append(load)
    return hoist, chosen


def _load_levels(graph: nx.DiGraph, ins: tuple[Instruction, ...], block: Block, nodes: set[int]) -> dict[int, int]:
    """How many hoisted loads lie on the longest dependency chain above each node (a load
    counts for its successors, not for itself)."""
    level: dict[int, int] = {}
    for p in sorted(nodes):
        level[p] = max(
            (level[a] + is_hoistable_load(ins[block.start + a]) for a in graph.predecessors(p) if a in nodes),
            default=0,
        )
    return level


def _order(graph: nx.DiGraph, ins: tuple[Instruction, ...], block: Block, hoist: set[int]) -> list[int]:
    """The hoisted set first, then everything else in its original order (`hoist` is closed
    under ancestors, so this is a topological order). Inside the hoisted set, work that
    waits on no hoisted load comes first, slices before loads (so guard and address
    latencies overlap and the loads issue back to back), then the work that needs those
    loads' results and the loads that need it, and so on."""
    level = _load_levels(graph, ins, block, hoist)
    key = {p: (level[p], is_hoistable_load(ins[block.start + p]), p) for p in hoist}
    top = list(nx.lexicographical_topological_sort(graph.subgraph(hoist), key=lambda p: key[p]))
    return top + [p for p in range(block.end - block.start) if p not in hoist]


Interval = tuple[float, float]


def _intervals(webs: BlockWebs, new_pos: list[int]) -> dict[int, dict[str, Interval]]:
    """def id (or ENTRY) -> register -> (first point, last point) it holds a value in the
    new order. A def at position p starts at p + 0.5 (after the reads of its instruction)."""
    out: dict[int, dict[str, Interval]] = {}

    def extend(d: int, reg: str, point: float) -> None:
        start = -math.inf if d == ENTRY else new_pos[webs.defs[d].pos] + 0.5
        lo, hi = out.setdefault(d, {}).get(reg, (start, start))
        out[d][reg] = (lo, max(hi, point))

    for d, df in enumerate(webs.defs):
        for reg in df.regs:
            extend(d, reg, new_pos[df.pos] + 0.5)
    for (u, reg), ids in webs.reach.items():
        for d in ids:
            extend(d, reg, new_pos[webs.uses[u].pos])
    for reg, ids in webs.end_reach.items():
        for d in ids:
            extend(d, reg, math.inf)
    return out


class _Held:
    """The intervals one register is taken for: those of values that keep their register
    (ENTRY and the defs not renamed: fixed before allocation starts) and those assigned to it
    so far. Values are assigned in the order they start, so an assigned interval starts no
    later than the one asked about, and overlaps it exactly when it ends at or after its
    start: the latest end answers. The fixed ones, sorted by start with the running largest
    end, answer by bisection. (Scanning every interval per candidate register made the
    allocation of a block quadratic in its length.)"""

    def __init__(self, fixed: list[Interval]) -> None:
        fixed = sorted(fixed)
        self.starts = [lo for lo, _ in fixed]
        self.ends = list(accumulate((hi for _, hi in fixed), max))
        self.assigned_end = -math.inf

    def overlaps(self, span: Interval) -> bool:
        """Whether `span` (starting no earlier than every assigned interval) meets one held."""
        k = bisect_right(self.starts, span[1])
        return (k > 0 and self.ends[k - 1] >= span[0]) or self.assigned_end >= span[0]

    def assign(self, span: Interval) -> None:
        self.assigned_end = max(self.assigned_end, span[1])


def _allocate(webs: BlockWebs, order: list[int], limit: int) -> dict[int, int] | None:
    """def id -> new base number (register or predicate) for every renamable def, or None
    when some value finds no free register at or below `limit`."""
    new_pos = [0] * len(order)
    for k, p in enumerate(order):
        new_pos[p] = k
    spans = _intervals(webs, new_pos)
    fixed: dict[str, list[Interval]] = {}
    for d, regs in spans.items():
        if d == ENTRY or d not in webs.renamable:
            for reg, span in regs.items():
                fixed.setdefault(reg, []).append(span)
    held: dict[str, _Held] = {}

    def free(name: str, span: Interval) -> bool:
        if name not in held:
            held[name] = _Held(fixed.get(name, []))
        return not held[name].overlaps(span)

    assigned: dict[int, int] = {}
    for d in sorted(webs.renamable, key=lambda d: new_pos[webs.defs[d].pos]):
        df = webs.defs[d]
        kind, base, width = df.regs[0][0], int(df.regs[0][1:]), len(df.regs)
        top = limit if kind == "R" else PREDICATES - 1
        align = width if width in (2, 4) else 1
        # never into R1, the stack pointer, as ptxas never does (a suspect in an H200 NaN of
        # 2026-11-30 that proved not to be its cause; the convention stays)
        candidates = chain(
            [base],
            (
                b
                for b in range(0, top - width + 2, align)
                if b != base and not (kind == "R" and b <= STACK_POINTER < b + width)
            ),
        )
        mine = [spans[d][reg] for reg in df.regs]
        pick = next((b for b in candidates if all(free(f"{kind}{b + k}", mine[k]) for k in range(width))), None)
        if pick is None:
            return None
        assigned[d] = pick
        for k in range(width):
            free(f"{kind}{pick + k}", mine[k])  # makes its entry
            held[f"{kind}{pick + k}"].assign(mine[k])
    return assigned


def _renames(ins: tuple[Instruction, ...], webs: BlockWebs, assigned: dict[int, int]) -> list[OperandRename]:
    """Operand renames for every def that moved to another number, and for all its reads."""
    return [r for d, new in assigned.items() for r in web_renames(ins, webs, d, new)]


def _regcount(code: KernelCode, webs: BlockWebs, assigned: dict[int, int]) -> int:
    """REGCOUNT covering the highest register written by any renamed value (whole groups)."""
    tops = [new + len(webs.defs[d].regs) - 1 for d, new in assigned.items() if webs.defs[d].regs[0][0] == "R"]
    highest = max([code.registers_used() - 1] + tops)
    return max(code.kernel.regcount, highest + 1 + RESERVED_REGISTERS)


def register_limited_warps(regcount: int) -> int:
    """Resident warps per SM the register file allows (256-register allocation units per warp,
    at least one: a count of 0, which the cubin reader refuses, divided by zero here once)."""
    per_warp = max(1, math.ceil(regcount * 32 / 256)) * 256
    return min(MAX_WARPS, REGISTER_FILE // per_warp)


def _notes(
    code: KernelCode, block: Block, order: list[int], chosen: list[int], renames: list[OperandRename], regcount: int
) -> tuple[str, ...]:
    ins = code.instructions
    registers, predicates = sum(r.kind == "R" for r in renames), sum(r.kind == "P" for r in renames)
    notes = [
        (
            f"block {ins[block.start].offset:#06x}: {len(chosen)} loads hoisted with their address/guard slices "
            f"({registers} register and {predicates} predicate operands renamed)"
        )
    ]
    new_pos = {p: k for k, p in enumerate(order)}
    for load in chosen:
        passed = [p for p in range(load) if ins[block.start + p].access.mem_writes and new_pos[p] > new_pos[load]]
        if passed:
            notes.append(
                f"{ins[block.start + load].offset:#06x} {ins[block.start + load].opcode}: hoisted above a "
                "store, assuming the buffers do not alias"
            )
    if regcount > code.kernel.regcount:
        before, after = register_limited_warps(code.kernel.regcount), register_limited_warps(regcount)
        notes.append(
            f"registers {code.kernel.regcount} -> {regcount}: register-limited warps per SM "
            f"{before} -> {after} (occupancy by the register file alone)"
        )
    return tuple(notes)
