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

from collections.abc import Iterable, Sequence

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


# A space's accesses conflict with accesses of the spaces listed (`_spaces_overlap` as tokens:
# two accesses overlap exactly when their token sets meet).
_SPACE_TOKENS: dict[str, frozenset[str]] = {
    "global": frozenset({"global"}),
    "shared": frozenset({"shared"}),
    "local": frozenset({"local"}),
    "generic": frozenset({"global", "shared", "local"}),
}


def order_edges(
    region: Sequence[Instruction],
    noalias: bool = False,
    buffers: dict[int, frozenset[int]] | None = None,
    declared: frozenset[int] | None = None,
) -> list[tuple[int, int]]:
    """Edges a -> b (positions in `region`, a < b) whose transitive closure is exactly that of
    `dependency` over every pair: what a caller needing only the order (ancestors, a
    topological sort, longest chains) may use instead of the pairwise graph, which costs
    n^2 / 2 calls (2 x 10^8 for one 20,000-instruction block). Each edge is a pair
    `dependency` relates. Per register (and per memory space, unless `noalias` exempts pairs
    by their buffers), a write follows the last write and every read since it, a read follows
    the last write; a barrier follows everything since the previous barrier and precedes
    everything up to the next. Under `noalias` with `buffers`, memory pairs are tested one by
    one (`memory_conflict`), each pair of accesses of which one writes."""
    edges: list[tuple[int, int]] = []
    registers, memory = _Chains(edges), _Chains(edges)
    spaces = {space for ins in region for space in (ins.access.mem_reads, ins.access.mem_writes) if space}
    pairwise = (bool(noalias) and buffers is not None) or not spaces <= _SPACE_TOKENS.keys()
    accesses: list[int] = []  # memory accesses since the last barrier (the pairwise test)
    stores: list[int] = []  # those that write
    last_barrier: int | None = None
    since: list[int] = []
    for b, ins in enumerate(region):
        if ins.is_barrier:
            edges += [(a, b) for a in since]
            if last_barrier is not None:
                edges.append((last_barrier, b))
            last_barrier, since, accesses, stores = b, [], [], []
            registers, memory = _Chains(edges), _Chains(edges)
            continue
        if last_barrier is not None:
            edges.append((last_barrier, b))
        since.append(b)
        registers.add(b, ins.access.reads, ins.access.writes)
        reads, writes = ins.access.mem_reads, ins.access.mem_writes
        if not (reads or writes):
            continue
        if pairwise:
            earlier = accesses if writes else stores  # two reads never conflict
            edges += [(a, b) for a in earlier if memory_conflict(region[a], ins, noalias, buffers, declared)]
            accesses.append(b)
            if writes:
                stores.append(b)
        else:
            memory.add(b, _SPACE_TOKENS.get(reads or "", frozenset()), _SPACE_TOKENS.get(writes or "", frozenset()))
    return edges


class _Chains:
    """The last write and the reads since it, per resource, of a straight run of instructions
    (mutable: one `order_edges` call's state)."""

    def __init__(self, edges: list[tuple[int, int]]) -> None:
        self.edges = edges
        self.last_write: dict[str, int] = {}
        self.reads_since: dict[str, list[int]] = {}

    def add(self, b: int, reads: Iterable[str], writes: Iterable[str]) -> None:
        for r in reads:
            if r in self.last_write:
                self.edges.append((self.last_write[r], b))
        for r in writes:
            if r in self.last_write:
                self.edges.append((self.last_write[r], b))
            self.edges += [(a, b) for a in self.reads_since.get(r, ())]
        for r in reads:
            self.reads_since.setdefault(r, []).append(b)
        for r in writes:
            self.last_write[r] = b
            self.reads_since[r] = []


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
