"""When does a block run, given that a block dominating it ran? As a predicate, or not at all.

A load may leave its `if` only if it is then executed under exactly the condition that led
to it; anything else is a speculative load the original would not have executed (it may
fault, or read memory another thread is writing). The condition is found by propagating
path conditions forward over the acyclic CFG (back edges removed) from the dominator T to
the load's block: each edge contributes its branch's guard or its negation, paths are
joined with OR, and the result is simplified (x&p | x&!p = x, absorption). It is usable
only when it comes out as one conjunction of branch decisions.

The only exit edge of a loop counts as taken unconditionally (a loop that was entered is
left, or the code after it never runs at all); a decision inside a loop that the load is
not in, or a jump table, cannot be expressed and makes the hoist illegal.
"""

from __future__ import annotations

from dataclasses import dataclass

from reorder.ptx.analyses.cfg import Cfg

Literal = tuple[int, bool]  # (branch statement, its guard held)
Term = frozenset[Literal]


@dataclass(frozen=True, slots=True)
class Guard:
    """A conjunction of branch decisions (empty: always)."""

    literals: frozenset[Literal]


def reach_condition(cfg: Cfg, top: int, block: int) -> Guard | None:
    """The condition under which `block` runs once `top` (which dominates it) has run, or
    None when it is not one conjunction of branch decisions that can be read at `top`."""
    if top == block:
        return Guard(frozenset())
    if not cfg.reducible:
        return None
    dag = cfg.dag
    region = (cfg.dag_descendants(top) | {top}) & (cfg.dag_ancestors(block) | {block})
    conditions: dict[int, set[Term]] = {top: {frozenset()}}
    for node in cfg.dag_order:
        if node == top or node not in region:
            continue
        terms: set[Term] = set()
        for pred in dag.predecessors(node):
            if pred not in region:
                continue
            literal = _edge_literal(cfg, pred, node)
            if isinstance(literal, bool):  # False: a jump table, no literal says it
                return None
            terms |= {t | {literal} if literal else t for t in conditions[pred]}
        conditions[node] = simplify(terms)
    terms = conditions[block]
    if len(terms) != 1:
        return None
    (term,) = terms
    if any(_inside_other_loop(cfg, branch, block) for branch, _ in term):
        return None
    return Guard(term)


def _edge_literal(cfg: Cfg, source: int, target: int) -> Literal | bool | None:
    """The decision an acyclic edge stands for: a literal, None (always taken) or False
    (cannot be expressed: a jump table)."""
    cond = cfg.graph.edges[source, target]["cond"]
    last = cfg.blocks[source].terminator
    if last is not None and cfg.function.body[last].ins.base == "brx":
        return False
    if cond is None:
        return None
    left = [loop for loop in cfg.loops if source in loop.blocks and target not in loop.blocks]
    if left and all(_exit_edges(cfg, loop) == {(source, target)} for loop in left):
        return None  # the only way out of a loop: taken once the loop is done
    return cond


def _exit_edges(cfg: Cfg, loop) -> set[tuple[int, int]]:
    return {(u, v) for u in loop.blocks for v in cfg.graph.successors(u) if v not in loop.blocks}


def _inside_other_loop(cfg: Cfg, branch: int, block: int) -> bool:
    """The decision is made inside a loop that does not contain `block` (its value at the
    block is that of the last iteration, not one that can be read before the loop)."""
    return not cfg.loops_of(cfg.block_of[branch]) <= cfg.loops_of(block)


def simplify(terms: set[Term]) -> set[Term]:
    """Merge x&p | x&!p into x and drop terms implied by others, until nothing changes."""
    current = set(terms)
    changed = True
    while changed:
        changed = False
        for a in list(current):
            for branch, held in a:
                twin = (a - {(branch, held)}) | {(branch, not held)}
                if twin in current:
                    current -= {a, twin}
                    current.add(a - {(branch, held)})
                    changed = True
                    break
            if changed:
                break
        kept = {t for t in current if not any(o < t for o in current)}
        if kept != current:
            current, changed = kept, True
    return current
