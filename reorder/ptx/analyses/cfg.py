"""Basic blocks, control-flow graph, dominators and natural loops of one PTX function.

Blocks are runs of statements: a label starts one, a branch, `ret`, `exit` or `trap` ends
one (a guarded one too: it has two successors). Comments, `.loc` and declarations belong to
the block they sit in. Edges carry the condition under which they are taken: the index of
the branch statement and whether its guard held (None for an unconditional edge), which
is what reorder.ptx.analyses.guards turns back into predicates. The virtual node EXIT collects
every way out of the function, so post-dominators are defined for all blocks.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import networkx as nx

from reorder.base.errors import InputError
from reorder.ptx.model.effects import BRANCHES
from reorder.ptx.model.model import Function

EXIT = -1


@dataclass(frozen=True, slots=True)
class Block:
    """Statements [start, end) of the body; `instructions` are the statement indices of its instructions."""

    index: int
    start: int
    end: int
    labels: tuple[str, ...]
    instructions: tuple[int, ...]

    @property
    def terminator(self) -> int | None:
        """The statement index of its last instruction, if that is a branch or a return."""
        return self.instructions[-1] if self.instructions else None


@dataclass(frozen=True, slots=True)
class Loop:
    """A natural loop: its header block, its blocks, and the blocks whose edges return to the header."""

    header: int
    blocks: frozenset[int]
    latches: frozenset[int]


class Cfg:
    """The control-flow graph of one function (built once; read-only afterwards)."""

    def __init__(self, function: Function) -> None:
        self.function = function
        self.blocks = _blocks(function)
        self.block_of = _block_of(self.blocks, len(function.body))
        self.graph = _edges(function, self.blocks)
        self.entry = 0

    @cached_property
    def idom(self) -> dict[int, int]:
        """Immediate dominators of every block reachable from the entry (the entry maps to itself)."""
        found = dict(nx.immediate_dominators(self.graph, self.entry))
        found[self.entry] = self.entry  # networkx >= 3.5 leaves the start node out
        return found

    @cached_property
    def ipdom(self) -> dict[int, int]:
        """Immediate post-dominators (EXIT maps to itself)."""
        found = dict(nx.immediate_dominators(self.graph.reverse(copy=False), EXIT))
        found[EXIT] = EXIT
        return found

    @cached_property
    def reverse_postorder(self) -> tuple[int, ...]:
        """Blocks reachable from the entry, each after its predecessors (back edges aside)."""
        order = [n for n in nx.dfs_postorder_nodes(self.graph, self.entry) if n != EXIT]
        return tuple(reversed(order))

    def dominates(self, a: int, b: int) -> bool:
        """Block a dominates block b (every path from the entry to b passes a)."""
        idom = self.idom
        if b not in idom:
            return False
        while True:
            if a == b:
                return True
            if idom[b] == b:
                return False
            b = idom[b]

    def dominators(self, b: int) -> list[int]:
        """b and its dominators, nearest first."""
        chain = [b]
        while self.idom.get(chain[-1], chain[-1]) != chain[-1]:
            chain.append(self.idom[chain[-1]])
        return chain

    @cached_property
    def loops(self) -> tuple[Loop, ...]:
        """Natural loops, one per header (back edges to one header merged), outermost first."""
        bodies: dict[int, set[int]] = {}
        latches: dict[int, set[int]] = {}
        for u, h in self.back_edges:
            body = bodies.setdefault(h, {h})
            latches.setdefault(h, set()).add(u)
            body |= _reaching_without(self.graph, u, h)
        loops = [Loop(h, frozenset(b), frozenset(latches[h])) for h, b in bodies.items()]
        return tuple(sorted(loops, key=lambda loop: -len(loop.blocks)))

    @cached_property
    def back_edges(self) -> frozenset[tuple[int, int]]:
        """Edges u -> h whose target dominates their source."""
        return frozenset((u, v) for u, v in self.graph.edges if v != EXIT and u in self.idom and self.dominates(v, u))

    @cached_property
    def dag(self) -> nx.DiGraph:
        """The graph without back edges (acyclic when the function is reducible)."""
        dag = self.graph.copy()
        dag.remove_edges_from(self.back_edges)
        return dag

    @cached_property
    def dag_order(self) -> tuple[int, ...]:
        """A topological order of the acyclic graph."""
        return tuple(nx.topological_sort(self.dag)) if self.reducible else ()

    def dag_descendants(self, b: int) -> frozenset[int]:
        """Blocks reachable from b in the acyclic graph (cached)."""
        cache = self.__dict__.setdefault("_dag_descendants", {})
        if b not in cache:
            cache[b] = frozenset(nx.descendants(self.dag, b))
        return cache[b]

    def dag_ancestors(self, b: int) -> frozenset[int]:
        """Blocks that reach b in the acyclic graph (cached)."""
        cache = self.__dict__.setdefault("_dag_ancestors", {})
        if b not in cache:
            cache[b] = frozenset(nx.ancestors(self.dag, b))
        return cache[b]

    @cached_property
    def reducible(self) -> bool:
        return nx.is_directed_acyclic_graph(self.dag)

    def loops_of(self, b: int) -> frozenset[int]:
        """Headers of the loops that contain block b."""
        return frozenset(loop.header for loop in self.loops if b in loop.blocks)

    def label_block(self, label: str) -> int:
        for block in self.blocks:
            if label in block.labels:
                return block.index
        raise InputError(f"{self.function.name}: branch to unknown label {label}")


def _blocks(function: Function) -> tuple[Block, ...]:
    """Cut the body into blocks at labels and after block-ending instructions."""
    cuts: list[int] = [0]
    labels_at: dict[int, list[str]] = {}
    has_instruction = ended = False
    for i, s in enumerate(function.body):
        if s.kind == "label":
            if has_instruction or ended:
                cuts.append(i)
                has_instruction = ended = False
            labels_at.setdefault(cuts[-1], []).append(s.label)
        elif s.kind == "instruction":
            if ended:
                cuts.append(i)
                ended = False
            has_instruction = True
            ended = s.ins.base in BRANCHES
    bounds = list(zip(cuts, cuts[1:] + [len(function.body)]))
    return tuple(
        Block(
            k,
            a,
            b,
            tuple(labels_at.get(a, ())),
            tuple(i for i in range(a, b) if function.body[i].kind == "instruction"),
        )
        for k, (a, b) in enumerate(bounds)
    )


def _block_of(blocks: tuple[Block, ...], count: int) -> tuple[int, ...]:
    out = [0] * count
    for b in blocks:
        for i in range(b.start, b.end):
            out[i] = b.index
    return tuple(out)


def _edges(function: Function, blocks: tuple[Block, ...]) -> nx.DiGraph:
    """Successor edges with their conditions: `cond` = (branch statement, guard held) or None."""
    graph = nx.DiGraph()
    graph.add_nodes_from([b.index for b in blocks] + [EXIT])
    where = {label: b.index for b in blocks for label in b.labels}
    for b in blocks:
        after = b.index + 1 if b.index + 1 < len(blocks) else EXIT
        last = b.terminator
        ins = function.body[last].ins if last is not None else None
        if ins is None or ins.base not in BRANCHES:
            graph.add_edge(b.index, after, cond=None)
            continue
        targets = _targets(function, ins, where)
        for t in targets:
            graph.add_edge(b.index, t, cond=None if ins.guard is None or ins.base == "brx" else (last, True))
        if ins.guard is not None and after not in targets:
            graph.add_edge(b.index, after, cond=(last, False))
        elif ins.guard is not None:
            graph.edges[b.index, after]["cond"] = None  # both ways lead to the same block
    return graph


def _targets(function: Function, ins, where: dict[str, int]) -> list[int]:
    if ins.base in ("ret", "exit", "trap"):
        return [EXIT]
    if ins.base == "bra":
        label = ins.operands[-1]
        if label not in where:
            raise InputError(f"{function.name}: branch to unknown label {label}")
        return [where[label]]
    return [where[t] for t in _branch_targets(function, ins.operands[1] if len(ins.operands) > 1 else "")]


def _branch_targets(function: Function, table: str) -> list[str]:
    """The labels a `.branchtargets` list named `table` holds (brx.idx jump tables)."""
    for i, s in enumerate(function.body):
        if s.kind == "label" and s.label == table:
            for t in function.body[i + 1 :]:
                if t.kind == "directive" and t.code.startswith(".branchtargets"):
                    return [x.strip().rstrip(";") for x in t.code[len(".branchtargets") :].split(",")]
    raise InputError(f"{function.name}: brx.idx with unknown target list {table}")


def _reaching_without(graph: nx.DiGraph, start: int, avoid: int) -> set[int]:
    """Nodes from which `start` is reachable without passing `avoid` (start included)."""
    seen, work = {start}, ([start] if start != avoid else [])
    while work:
        n = work.pop()
        for p in graph.predecessors(n):
            if p != avoid and p not in seen:
                seen.add(p)
                work.append(p)
    return seen
