"""May a load, with the instructions computing its address and guard, move up to a point?

The point `at` is a statement in a block T that dominates the load's block S; the moved
group is inserted just before it. What lies between is the *region*: every statement on
some path from `at` to the moved instruction (a path that comes back to `at` is not
counted: it runs the moved group again). The rules, each a reason in a refusal:

- Registers (virtual, not SSA): an operand written in the region is either written by one
  movable instruction, which joins the group (the *slice*), or the move is refused (a
  loop-variant address is refused this way). A register the group writes must not be live
  at `at` (someone would read the new value too early) nor written by anyone else in the
  region. Slice members are pure unguarded computations or kernel-parameter reads.
- Memory: no instruction in the region may have a memory, barrier, fence or unknown edge
  to the load in the dependency graph (reorder.ptx.analyses.graph; rules in reorder.ptx.analyses.memory).
- Control: from T the group runs under the condition that leads to S (reorder.ptx.analyses.guards),
  as a predicate on the load; its predicates join the slice like address operands. A
  condition that is not one conjunction is refused: never a speculative load.
- T may not lie in a loop S is not in (a load is never moved into a loop).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import networkx as nx

from reorder.ptx.analyses.analysis import Analysis
from reorder.ptx.analyses.cfg import EXIT
from reorder.ptx.analyses.guards import Guard, reach_condition

MEMORY_EDGES = frozenset({"memory", "barrier", "fence", "unknown"})


@dataclass(frozen=True, slots=True)
class Plan:
    """A legal hoist: the group (slice members in execution order, the load last), where it
    goes, the guard it runs under and what it moves across ('barrier', 'store', 'branch', 'loop')."""

    load: int
    at: int
    members: tuple[int, ...]
    guard: Guard
    crosses: frozenset[str]


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a load cannot move to a block: the rule, and the statement in the way (if one).
    `final`: a block further up cannot do better (its region holds this one's)."""

    reason: str
    blocker: int | None = None
    final: bool = True


class Regions:
    """Statements between a point and each instruction, cached per function analysis.

    Reachability avoiding the target block is a plain search over successor lists: a
    hoist's legality asks for thousands of regions, and NetworkX views cost more than the
    search itself."""

    def __init__(self, analysis: Analysis) -> None:
        self.analysis = analysis
        graph = analysis.cfg.graph
        self._succ = {n: [s for s in graph.successors(n) if s != EXIT] for n in graph if n != EXIT}
        self._pred = {n: list(graph.predecessors(n)) for n in graph if n != EXIT}
        self._forward: dict[int, frozenset[int]] = {}
        self._backward: dict[tuple[int, int], frozenset[int]] = {}
        self._between: dict[tuple[int, int], tuple[int, ...]] = {}

    def _search(self, starts, edges, avoid: int) -> frozenset[int]:
        seen, work = set(), [s for s in starts if s != avoid]
        while work:
            n = work.pop()
            if n not in seen:
                seen.add(n)
                work += [m for m in edges[n] if m != avoid and m not in seen]
        return frozenset(seen)

    def forward(self, top: int) -> frozenset[int]:
        """Blocks reachable from `top`'s successors without passing `top` again."""
        if top not in self._forward:
            self._forward[top] = self._search(self._succ[top], self._succ, top)
        return self._forward[top]

    def backward(self, top: int, low: int) -> frozenset[int]:
        """Blocks from which `low` is reached through at least one edge, without passing `top`."""
        key = (top, low)
        if key not in self._backward:
            self._backward[key] = self._search(self._pred[low], self._pred, top)
        return self._backward[key]

    def between(self, at: int, target: int) -> tuple[int, ...]:
        """Instruction statements on some path from `at` (included) to `target` (excluded,
        unless it can run again before reaching itself: then it is in its own region)."""
        key = (at, target)
        if key not in self._between:
            self._between[key] = self._compute(at, target)
        return self._between[key]

    def _compute(self, at: int, target: int) -> tuple[int, ...]:
        cfg = self.analysis.cfg
        top, low = cfg.block_of[at], cfg.block_of[target]
        if top == low and at <= target:
            return tuple(i for i in cfg.blocks[top].instructions if at <= i < target)
        forward, back = self.forward(top), self.backward(top, low)
        out = [i for i in cfg.blocks[top].instructions if i >= at]
        for b in sorted((forward & back) - {top, low}):
            out += cfg.blocks[b].instructions
        again = low in back and low in forward  # low reaches itself without passing top
        out += [i for i in cfg.blocks[low].instructions if i < target or again]
        return tuple(out)


class Planner:
    """Plans hoists of one function's loads (one analysis, its regions cached)."""

    def __init__(self, analysis: Analysis) -> None:
        self.analysis = analysis
        self.regions = Regions(analysis)

    @cached_property
    def _depth(self) -> dict[int, int]:
        cfg, out = self.analysis.cfg, {}
        for b in cfg.idom:
            out[b] = len(cfg.dominators(b))
        return out

    def movable(self, i: int) -> bool:
        """A statement that may join a slice: a pure or parameter read, unguarded, on its own
        line(s), in the function's own scope."""
        s, effect = self.analysis.function.body[i], self.analysis.effects[i]
        return (
            effect is not None
            and effect.kind in ("pure", "param")
            and s.ins.guard is None
            and s.alone
            and self.analysis.depth[i] == 0
        )

    def hoistable_load(self, i: int) -> bool:
        """A global or constant load (or a generic one through kernel parameters) that owns its line."""
        a = self.analysis
        effect = a.effects[i]
        if effect is None or effect.kind != "load" or not a.function.body[i].alone or a.depth[i] != 0:
            return False
        if effect.space in ("global", "const"):
            return True
        origins = a.origins.get(i, frozenset())
        return effect.space == "generic" and bool(origins) and all(isinstance(x, int) for x in origins)

    def plan(self, load: int, top: int) -> Plan | Refusal:
        """The hoist of `load` into block `top` (a dominator of its block), as early in `top`
        as the rules allow."""
        cfg = self.analysis.cfg
        low = cfg.block_of[load]
        if not cfg.loops_of(top) <= cfg.loops_of(low):
            return Refusal("the target is inside a loop the load is not in", final=False)
        guard = reach_condition(cfg, top, low)
        if guard is None:
            return Refusal(
                "it would run speculatively: the way to it is not one conjunction of branch "
                "decisions readable at the target",
                final=False,
            )
        depth = self.analysis.depth  # never into a { } scope: its declarations could shadow the group's registers
        candidates = [i for i in cfg.blocks[top].instructions if (top != low or i < load) and depth[i] == 0]
        position = 0
        outcome: Plan | Refusal = Refusal("the target block has no instruction to go before")
        while position < len(candidates):
            at = candidates[position]
            outcome = self._try(load, at, guard)
            if isinstance(outcome, Plan):
                return outcome
            if outcome.blocker is None or outcome.blocker not in candidates[position:]:
                return outcome
            position = candidates.index(outcome.blocker) + 1
        return outcome

    def _try(self, load: int, at: int, guard: Guard) -> Plan | Refusal:
        members = self._slice(load, at, guard)
        if isinstance(members, Refusal):
            return members
        refusal = self._blockers(load, at, members)
        if refusal is not None:
            return refusal
        ordered = tuple(sorted(members, key=lambda i: (self._depth[self.analysis.cfg.block_of[i]], i)))
        ordered = tuple(i for i in ordered if i != load) + (load,)
        return Plan(load, at, ordered, guard, self._crossed(load, at))

    def _slice(self, load: int, at: int, guard: Guard) -> frozenset[int] | Refusal:
        """The load and every instruction that must move with it (address and guard operands)."""
        a = self.analysis
        members: set[int] = {load}
        wanted = [(load, reg) for reg in a.effects[load].uses]
        wanted += [(branch, reg) for branch, _ in guard.literals for reg in a.effects[branch].uses]
        feeds = nx.DiGraph()  # writer -> reader among the group: must stay acyclic (no loop-carried value)
        done: set[tuple[int, str]] = set()
        while wanted:
            consumer, reg = wanted.pop()
            if (consumer, reg) in done:
                continue
            done.add((consumer, reg))
            region = set(self.regions.between(at, consumer))
            writers = [d for d in a.defuse.definitions.get(reg, ()) if d in region]
            if not writers:
                continue
            if len(writers) > 1 or not self.movable(writers[0]):
                return Refusal(f"{reg} is written on the way (line {a.function.body[writers[0]].ident})", writers[-1])
            writer = writers[0]
            if consumer in members:
                feeds.add_edge(writer, consumer)
            if writer not in members:
                members.add(writer)
                wanted += [(writer, r) for r in a.effects[writer].uses]
        if not nx.is_directed_acyclic_graph(feeds):
            return Refusal("its address changes from one loop iteration to the next", None)
        return frozenset(members)

    def _blockers(self, load: int, at: int, members: frozenset[int]) -> Refusal | None:
        """The first rule the group breaks at `at`, naming the statement in the way."""
        a = self.analysis
        live = a.defuse.live_before(at)
        # the load itself writes fresh registers (reorder.ptx.moves.hoist copies them back in place)
        written = frozenset().union(*(a.effects[m].defs for m in members if m != load))
        for reg in sorted(written & live):
            top = a.cfg.blocks[a.cfg.block_of[at]]
            readers = [x for x in top.instructions if x >= at and x not in members and reg in a.effects[x].uses]
            return Refusal(f"{reg} is live at the target", readers[-1] if readers else None)
        for m in members:
            for x in self.regions.between(at, m):
                if x in members:
                    continue
                clash = a.effects[x].defs & (written | a.effects[m].uses)
                if m == load:
                    clash = a.effects[x].defs & a.effects[m].uses
                if clash:
                    return Refusal(f"{min(clash)} is written on the way (line {a.function.body[x].ident})", x)
        for x in self.regions.between(at, load):
            kind = a.memory_edge(x, load)
            if kind in MEMORY_EDGES:
                s = a.function.body[x]
                return Refusal(f"{kind} dependence on line {s.ident} ({s.ins.opcode})", x)
        return None

    def _crossed(self, load: int, at: int) -> frozenset[str]:
        a = self.analysis
        kinds = {a.effects[x].kind for x in self.regions.between(at, load)}
        out = {"barrier"} & kinds | ({"store"} if kinds & {"store", "atomic"} else set())
        top, low = a.cfg.block_of[at], a.cfg.block_of[load]
        if top != low:
            out.add("branch")
        if a.cfg.loops_of(low) - a.cfg.loops_of(top):
            out.add("loop")
        return frozenset(out)
