"""Loops seen in a cubin's SASS, for a user who has only the cubin: the loop moves
(Prefetch, UnrollBatch) work on PTX, where registers are virtual and ptxas allocates and
schedules the new loads; on SASS they would need register allocation this project does
not do. So a cubin's loops are reported (where, how long, how many global loads), with
the note that the moves need the kernel's PTX.

A loop is a back edge u -> h of the SASS control-flow graph (reorder.analysis.cfg) whose target
dominates its source; its body is what reaches u without passing h.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from reorder.analysis.cfg import control_flow_graph
from reorder.sass.model import KernelCode


@dataclass(frozen=True, slots=True)
class SassLoop:
    """A loop: its header's byte offset, its instruction count and its global loads."""

    header: int
    instructions: int
    global_loads: int


def sass_loops(code: KernelCode) -> tuple[SassLoop, ...]:
    """The natural loops of one kernel, by header offset."""
    instructions = code.instructions
    graph = control_flow_graph(instructions)
    if not instructions or 0 not in graph:
        return ()
    bodies = loop_bodies(graph)
    out = []
    for h, blocks in sorted(bodies.items()):
        indices = [i for b in blocks for i in graph.nodes[b]["block"].indices()]
        loads = sum(instructions[i].base == "LDG" for i in indices)
        out.append(SassLoop(instructions[h].offset, len(indices), loads))
    return tuple(out)


def loop_bodies(graph: nx.DiGraph) -> dict[int, set[int]]:
    """Natural loops of a control-flow graph (reorder.analysis.cfg) entered at block 0: header
    block start -> the starts of its body's blocks."""
    if 0 not in graph:
        return {}
    idom = nx.immediate_dominators(graph, 0)
    bodies: dict[int, set[int]] = {}
    for u, h in graph.edges:
        if u in idom and _dominates(idom, h, u):
            bodies.setdefault(h, {h}).update(_reaching(graph, u, h))
    return bodies


def _dominates(idom: dict[int, int], a: int, b: int) -> bool:
    while True:
        if a == b:
            return True
        if idom.get(b, b) == b:
            return False
        b = idom[b]


def _reaching(graph: nx.DiGraph, start: int, avoid: int) -> set[int]:
    seen, work = {start}, [start] if start != avoid else []
    while work:
        for p in graph.predecessors(work.pop()):
            if p != avoid and p not in seen:
                seen.add(p)
                work.append(p)
    return seen


def loops_note(code: KernelCode) -> str:
    """One line for a report on a kernel known only as a cubin."""
    loops = sass_loops(code)
    if not loops:
        return "loops: none in the SASS"
    seen = "; ".join(
        f"at {lp.header:#06x}: {lp.instructions} instructions, {lp.global_loads} global loads" for lp in loops
    )
    return (
        f"loops seen in the SASS: {len(loops)} ({seen}); loop moves (prefetch, unroll-and-batch) need the "
        "kernel's PTX (give the .ptx, or --ptx beside the cubin)"
    )


def cubin_loop_lines(code: KernelCode) -> list[str]:
    """What a report says about a kernel known only as a cubin."""
    loops = sass_loops(code)
    if not loops:
        return [f"{code.kernel.name}: no loops in its SASS"]
    lines = [f"{code.kernel.name}: {len(loops)} loop{'s' if len(loops) > 1 else ''} in its SASS"]
    lines += [
        f"  loop at {lp.header:#06x}: {lp.instructions} instructions, {lp.global_loads} global loads" for lp in loops
    ]
    lines.append(
        "  loop moves (prefetch, unroll-and-batch) need the kernel's PTX (nvcc -ptx, or the .ptx Triton "
        "keeps beside its cubin): give that to reorder ptx-loops or optimize"
    )
    return lines
