"""Everything the moves read about one function, computed once: CFG, effects, def-use,
address provenance, what the kernel writes, and the dependency graph."""

from __future__ import annotations

from functools import cached_property, lru_cache

import networkx as nx

from reorder.ptx.analyses.cfg import Cfg
from reorder.ptx.analyses.dataflow import DefUse
from reorder.ptx.analyses.graph import dependency_graph, memory_edge, memory_graph, reachable_blocks
from reorder.ptx.analyses.memory import MemoryFacts, Noalias, kernel_facts
from reorder.ptx.analyses.phases import barrier_sides
from reorder.ptx.analyses.provenance import Origins, address_origins
from reorder.ptx.model.effects import function_effects
from reorder.ptx.model.model import Function
from reorder.ptx.model.registers import depth_of


class Analysis:
    """One function under one no-alias assumption (read-only once built)."""

    def __init__(self, function: Function, noalias: Noalias = False) -> None:
        self.function = function
        self.noalias = noalias
        self.cfg = Cfg(function)
        self.effects = function_effects(function)
        self.defuse = DefUse(self.cfg, self.effects)
        self.depth = depth_of(function)

    @cached_property
    def origins(self) -> dict[int, Origins]:
        return address_origins(self.cfg, self.effects)

    @cached_property
    def facts(self) -> MemoryFacts:
        sides = barrier_sides(self.function, self.cfg, self.effects, self.origins, self.later)
        return kernel_facts(self.effects, self.origins, self.noalias, sides)

    @cached_property
    def memory_graph(self) -> nx.DiGraph:
        """Memory, barrier, fence and unknown edges only."""
        return memory_graph(self.cfg, self.defuse, self.origins, self.facts)

    @cached_property
    def later(self) -> dict[int, frozenset[int]]:
        """Block -> the blocks reachable from it through at least one edge."""
        return reachable_blocks(self.cfg)

    def memory_edge(self, a: int, b: int) -> str | None:
        """The memory graph's edge kind a -> b (None: no edge), without building the graph:
        a hoist asks about one load's pairs, and each hoist applied makes a new function
        (the whole graph of each was 80% of a PTX search's seeding)."""
        if "memory_graph" in self.__dict__:
            edge = self.memory_graph.get_edge_data(a, b)
            return edge["kind"] if edge else None
        return memory_edge(self.cfg, self.effects, self.origins, self.facts, self.later, a, b)

    @cached_property
    def graph(self) -> nx.DiGraph:
        """The whole dependency graph (reorder.ptx.analyses.graph)."""
        return dependency_graph(self.cfg, self.defuse, self.memory_graph)

    @cached_property
    def unknown(self) -> tuple[tuple[str, str], ...]:
        """(statement ident, opcode) of every instruction the effect table does not know:
        kept in place as a barrier to every memory access."""
        return tuple(
            (s.ident, s.ins.opcode)
            for s, e in zip(self.function.body, self.effects)
            if e is not None and e.kind == "unknown"
        )


@lru_cache(maxsize=8)
def analysis_of(function: Function, noalias: Noalias = False) -> Analysis:
    """The one Analysis of a function under an assumption. Every move kind (peel, reuse,
    hoist, prefetch, the plans) asks about the same function, and a search walks its move
    space from the same module again and again: built once, they stop re-deriving effects
    and dataflow (a 5,648-instruction warp select built 150 analyses to seed its search).
    An Analysis is read-only once built, so sharing it is safe."""
    return Analysis(function, noalias)
