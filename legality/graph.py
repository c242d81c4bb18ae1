"""Dependency graph of a region (a basic block or a straight-line range) as a NetworkX DiGraph.

Nodes are instruction indices. An edge i -> j (i before j) says j must stay after i, with
`kind` RAW / WAR / WAW / MEM / CTRL, the `resource` involved and `cycles`, the minimum
issue distance (the latency-table entry for fixed-latency RAW/WAW, 1 otherwise; a
variable-latency producer's edge has `scoreboard=True`: its distance is set by a wait).
Memory: loads and stores of a space conflict unless both are loads, or unless the caller
asserted (noalias) that the two accesses address different kernel parameters. Barriers
and unknown opcodes depend on everything before and after them.
"""

from __future__ import annotations

from collections.abc import Iterable

import networkx as nx

from legality.latency import latency_class, load_table, read_kind
from reorder.sass.model import Instruction

_SPACES_ALIAS = {
    ("global", "global"),
    ("shared", "shared"),
    ("local", "local"),
}


def _spaces_overlap(a: str, b: str) -> bool:
    return a == "generic" or b == "generic" or (a, b) in _SPACES_ALIAS


def memory_conflict(
    a: Instruction,
    b: Instruction,
    noalias: bool = False,
    buffers: dict[int, frozenset[int]] | None = None,
    declared: frozenset[int] | None = None,
) -> bool:
    """True when a and b may touch the same memory and at least one writes it.

    With `noalias`, two global accesses whose address registers derive from disjoint,
    known sets of kernel parameters (`buffers`: offset -> parameter indices) do not conflict,
    provided one of them uses only parameters declared not to alias anything (`declared`;
    None declares every pointer parameter).
    """
    aw, bw = a.access.mem_writes, b.access.mem_writes
    ar, br = a.access.mem_reads, b.access.mem_reads
    pairs = [(x, y) for x in (aw,) for y in (br, bw) if x and y] + [(x, y) for x in (ar,) for y in (bw,) if x and y]
    if not any(_spaces_overlap(x, y) for x, y in pairs):
        return False
    if noalias and buffers is not None:
        pa, pb = buffers.get(a.offset), buffers.get(b.offset)
        covered = declared is None or (pa is not None and pa <= declared) or (pb is not None and pb <= declared)
        if (
            pa
            and pb
            and not (pa & pb)
            and covered
            and "shared" not in (aw, bw, ar, br)
            and "local" not in (aw, bw, ar, br)
        ):
            return False
    return True


def dependency(
    a: Instruction,
    b: Instruction,
    noalias: bool = False,
    buffers: dict[int, frozenset[int]] | None = None,
    declared: frozenset[int] | None = None,
) -> tuple[str, str] | None:
    """(kind, resource) of the first reason b must stay after a, or None if independent."""
    if a.is_barrier or b.is_barrier:
        return ("CTRL", a.opcode if a.is_barrier else b.opcode)
    for kind, left, right in (
        ("RAW", a.access.writes, b.access.reads),
        ("WAW", a.access.writes, b.access.writes),
        ("WAR", a.access.reads, b.access.writes),
    ):
        shared = left & right
        if shared:
            return (kind, sorted(shared)[0])
    if memory_conflict(a, b, noalias, buffers, declared):
        return ("MEM", a.access.mem_writes or a.access.mem_reads or "memory")
    return None


def build_graph(
    instructions: tuple[Instruction, ...],
    indices: Iterable[int],
    arch: int,
    noalias: bool = False,
    buffers: dict[int, frozenset[int]] | None = None,
) -> nx.DiGraph:
    """The dependency DiGraph over `indices` (a region, in program order)."""
    table = load_table(arch)
    region = list(indices)
    graph = nx.DiGraph()
    for i in region:
        graph.add_node(i, opcode=instructions[i].opcode, offset=instructions[i].offset)
    for x, i in enumerate(region):
        a = instructions[i]
        for j in region[x + 1 :]:
            b = instructions[j]
            dep = dependency(a, b, noalias, buffers)
            if dep is None:
                continue
            kind, resource = dep
            cycles, scoreboard = 1, False
            if kind in ("RAW", "WAW") and a.is_variable_latency:
                scoreboard = True
            elif kind == "RAW":
                cycles = table.lookup(latency_class(a), latency_class(b), read_kind(resource, b)).cycles
            elif kind == "WAW":
                cycles = table.lookup(latency_class(a), latency_class(b), "waw").cycles
            graph.add_edge(i, j, kind=kind, resource=resource, cycles=cycles, scoreboard=scoreboard)
    return graph
