"""Basic blocks and the control-flow graph of one kernel.

A block starts at offset 0, at every branch/BSSY target and after every control-flow
instruction (predicated ones too); barriers stay inside blocks but are never crossed by
moves, so they need not split blocks.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from reorder import opcodes as op
from reorder.sass import Instruction


@dataclass(frozen=True, slots=True)
class Block:
    """Instructions [start, end) by index into the kernel's instruction tuple."""

    start: int
    end: int

    def indices(self) -> range:
        return range(self.start, self.end)


def basic_blocks(instructions: tuple[Instruction, ...]) -> tuple[Block, ...]:
    """Split into basic blocks."""
    n = len(instructions)
    leaders = {0}
    for i, ins in enumerate(instructions):
        if ins.target is not None and 0 <= ins.target // 16 < n:
            leaders.add(ins.target // 16)
        if ins.base in op.CONTROL_FLOW or ins.base in ("BSSY", "BSYNC", "WARPSYNC", "BRX", "CALL"):
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
    return graph
