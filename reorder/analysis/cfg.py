"""Basic blocks and the control-flow graph of one kernel.

A block starts at offset 0, at every branch/BSSY target and jump-table target (a BRX's
targets come from EIATTR_INDIRECT_BRANCH_TARGETS) and after every control-flow
instruction (predicated ones too); barriers stay inside blocks but are never crossed by
moves, so they need not split blocks.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from reorder.sass import opcodes as op
from reorder.sass.model import Instruction


@dataclass(frozen=True, slots=True)
class Block:
    """Instructions [start, end) by index into the kernel's instruction tuple."""

    start: int
    end: int

    def indices(self) -> range:
        return range(self.start, self.end)


ENDS_BLOCK = op.CONTROL_FLOW | {"BSSY", "BSYNC", "WARPSYNC", "BRX", "CALL"}


def basic_blocks(instructions: tuple[Instruction, ...]) -> tuple[Block, ...]:
    """Split into basic blocks (called for every candidate by the verifier and the moves:
    one pass, no generator per instruction)."""
    n = len(instructions)
    leaders = {0}
    for i, ins in enumerate(instructions):
        if ins.target is not None and 0 <= ins.target // 16 < n:
            leaders.add(ins.target // 16)
        if ins.indirect_targets:
            leaders.update(t // 16 for t in ins.indirect_targets if 0 <= t // 16 < n)
        if ins.base in ENDS_BLOCK:
            leaders.add(i + 1)
        if not ins.known:
            leaders.add(i)
            leaders.add(i + 1)
    starts = sorted(x for x in leaders if x < n)
    return tuple(Block(s, e) for s, e in zip(starts, starts[1:] + [n]))


def control_flow_graph(instructions: tuple[Instruction, ...]) -> nx.DiGraph:
    """Blocks as nodes (keyed by start index) with fall-through and branch edges."""
    blocks = basic_blocks(instructions)
    start_of = {b.start: b for b in blocks}
    graph = nx.DiGraph()
    for b in blocks:
        graph.add_node(b.start, block=b)
    for b in blocks:
        last = instructions[b.end - 1]
        unconditional = last.base in ("BRA", "EXIT", "RET", "JMP", "BRX", "KILL") and not last.guard
        if not unconditional and b.end in start_of:
            graph.add_edge(b.start, b.end, kind="fallthrough")
        if last.target is not None and last.base != "BSSY" and last.target // 16 in start_of:
            graph.add_edge(b.start, last.target // 16, kind="branch")
        for t in last.indirect_targets:
            if t // 16 in start_of:
                graph.add_edge(b.start, t // 16, kind="indirect")
    return graph


def movable_blocks(instructions: tuple[Instruction, ...]) -> tuple[Block, ...]:
    """The blocks moves may change: those reachable from the kernel's entry, except a
    CALL's return site.

    A subroutine in the kernel's text (`CALL.REL.NOINC $__internal_..._div_u64`) is reached
    only through CALL, which the graph does not follow into it, so neither its entry state
    nor what its last instructions leave in flight for the return site is known to the
    verifier: both keep the compiler's schedule. (An H200 run crashed on int_divmod with a
    batch-loads output that had rescheduled the callee.)"""
    blocks = basic_blocks(instructions)
    if not blocks:
        return ()
    graph = control_flow_graph(instructions)
    reachable = nx.descendants(graph, blocks[0].start) | {blocks[0].start}
    return_sites = {i + 1 for i, ins in enumerate(instructions) if ins.base == "CALL"}
    return tuple(b for b in blocks if b.start in reachable and b.start not in return_sites)
