"""The PTX dependency graph of one function, in NetworkX: b depends on a when an edge a -> b.

Nodes are statement indices of instructions. Edge kinds:

- 'raw': a defines a register b reads (over reaching definitions, so across blocks);
- 'memory', 'barrier', 'fence', 'unknown': memory order (reorder.ptx.analyses.memory), drawn from a
  to b whenever a can run before b (on some path, loops included);
- 'control': a is the branch that decides whether b's block runs.

Register anti- and output dependences are not drawn: registers are virtual here, and a move
checks them against liveness instead (reorder.ptx.moves.hoist).
"""

from __future__ import annotations

from collections.abc import Sequence

import networkx as nx

from reorder.ptx.analyses.cfg import EXIT, Cfg
from reorder.ptx.analyses.dataflow import DefUse
from reorder.ptx.analyses.memory import MEMORY_KINDS, MemoryFacts, conflict
from reorder.ptx.analyses.provenance import UNKNOWN, Origins
from reorder.ptx.model.effects import Effect


def memory_graph(cfg: Cfg, defuse: DefUse, origins: dict[int, Origins], facts: MemoryFacts) -> nx.DiGraph:
    """The memory-order edges alone (what a load's move asks about)."""
    graph = nx.DiGraph()
    for block in cfg.blocks:
        graph.add_nodes_from(block.instructions, block=block.index)
    _memory_edges(graph, cfg, defuse, origins, facts)
    return graph


def dependency_graph(cfg: Cfg, defuse: DefUse, memory: nx.DiGraph) -> nx.DiGraph:
    """Every edge: the memory graph's, register def-use and control dependence."""
    graph = memory.copy()
    _register_edges(graph, cfg, defuse)
    _control_edges(graph, cfg)
    return graph


def _register_edges(graph: nx.DiGraph, cfg: Cfg, defuse: DefUse) -> None:
    for block in cfg.blocks:
        defs: dict[str, frozenset[int]] = {}  # reaching here, for each register met in the block so far
        for i in block.instructions:
            effect = defuse.effects[i]
            for reg in effect.uses:
                for d in _current(defs, defuse, block.index, reg):
                    graph.add_edge(d, i, kind="raw", register=reg)
            for reg in effect.defs:
                guarded = cfg.function.body[i].ins.guard
                kept = _current(defs, defuse, block.index, reg) if guarded else frozenset()
                defs[reg] = kept | {i}


def _current(defs: dict[str, frozenset[int]], defuse: DefUse, b: int, reg: str) -> frozenset[int]:
    """The definitions of `reg` reaching here: the block's own so far, else its entry's (read
    from the analysis once per register and block)."""
    if reg not in defs:
        defs[reg] = defuse.entry_defs(b, reg)
    return defs[reg]


def _memory_edges(graph: nx.DiGraph, cfg: Cfg, defuse: DefUse, origins: dict[int, Origins], facts: MemoryFacts) -> None:
    effects = defuse.effects
    ordered = [i for b in cfg.blocks for i in b.instructions if effects[i].kind in MEMORY_KINDS]
    # two plain reads (no fence, barrier, unknown or write) never conflict: a read is paired
    # with the others only (every pair of an unrolled kernel's loads was tried before: quadratic)
    others = [i for i in ordered if not _plain_read(effects[i])]
    later = reachable_blocks(cfg)
    for a in ordered:
        for b in others if _plain_read(effects[a]) else ordered:
            kind = memory_edge(cfg, effects, origins, facts, later, a, b)
            if kind and not graph.has_edge(a, b):
                graph.add_edge(a, b, kind=kind)


def memory_edge(
    cfg: Cfg,
    effects: Sequence[Effect | None],
    origins: dict[int, Origins],
    facts: MemoryFacts,
    later: dict[int, frozenset[int]],
    a: int,
    b: int,
) -> str | None:
    """The kind of the memory-order edge a -> b, None where the graph draws none: both access
    memory, they are not two plain reads, a can run before b (later: reachable_blocks), and
    the rules of reorder.ptx.analyses.memory say they conflict. The graph is made of these
    pairs; a move that asks about one load asks for its pairs alone."""
    ea, eb = effects[a], effects[b]
    if ea is None or eb is None or ea.kind not in MEMORY_KINDS or eb.kind not in MEMORY_KINDS:
        return None
    if _plain_read(ea) and _plain_read(eb):
        return None
    ba, bb = cfg.block_of[a], cfg.block_of[b]
    if a == b and ba not in later[ba]:
        return None
    if not ((ba == bb and a < b) or bb in later[ba]):
        return None
    kind = conflict(ea, origins.get(a, frozenset({UNKNOWN})), eb, origins.get(b, frozenset({UNKNOWN})), facts, (a, b))
    return kind or None


def _plain_read(effect: Effect) -> bool:
    """An access `conflict` pairs with no other plain read: not unknown, ordered or a barrier,
    and writing no memory."""
    return effect.kind not in ("unknown", "barrier") and not effect.ordered and not effect.writes_memory


def reachable_blocks(cfg: Cfg) -> dict[int, frozenset[int]]:
    """Blocks reachable from each block through at least one edge."""
    out = {}
    for block in cfg.blocks:
        seen: set[int] = set()
        work = [s for s in cfg.graph.successors(block.index) if s != EXIT]
        while work:
            n = work.pop()
            if n not in seen:
                seen.add(n)
                work += [s for s in cfg.graph.successors(n) if s != EXIT]
        out[block.index] = frozenset(seen)
    return out


def control_dependences(cfg: Cfg) -> dict[int, set[tuple[int, int, bool | None]]]:
    """block -> {(deciding block, branch statement, guard held)} (Ferrante et al.: walk the
    post-dominator tree from an edge's target up to the source's post-dominator)."""
    out: dict[int, set] = {b.index: set() for b in cfg.blocks}
    ipdom = cfg.ipdom
    for a, s, data in cfg.graph.edges(data=True):
        if data["cond"] is None or a not in ipdom:
            continue
        stop, node = ipdom[a], s
        while node != stop and node != EXIT and node in ipdom:
            out[node].add((a, data["cond"][0], data["cond"][1]))
            node = ipdom[node]
    return out


def _control_edges(graph: nx.DiGraph, cfg: Cfg) -> None:
    for block, deciders in control_dependences(cfg).items():
        for _, branch, _ in deciders:
            for i in cfg.blocks[block].instructions:
                if not graph.has_edge(branch, i):
                    graph.add_edge(branch, i, kind="control")
