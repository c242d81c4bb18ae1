"""Which loads of a counted loop may run iterations early (Prefetch, UnrollBatch).

A load of iteration i + k issued during iteration i moves up across everything iterations
i .. i + k - 1 do, so the rule is the dependency graph's (reorder.ptx.analyses.memory.conflict)
against every memory instruction of the loop, in either order: no store, atomic, fence,
barrier or unknown instruction in the loop may conflict with it (a store to another
pointer parameter does not under --assume-noalias; bar.sync orders every shared access,
and a global load only when the kernel may have written its buffer). And the load must be
one the loop runs on every iteration, a global or constant load (reorder.ptx.analyses.legality's
`hoistable_load`), whose address, guard and other operands can be computed for a later
iteration (reorder.ptx.moves.shift).

A store to the load's own buffer does not keep it when their addresses are affine in the
loop's inductions and provably apart for every iteration distance a loop move may put
between them, up to `AHEAD` (reorder.ptx.analyses.affine): an in-place loop's load of
iteration n + j never meets the bytes iteration n stores.
"""

from __future__ import annotations

from dataclasses import dataclass

from reorder.base.errors import NotApplicable
from reorder.ptx.analyses.affine import LoopForms, disjoint_ahead
from reorder.ptx.analyses.analysis import Analysis
from reorder.ptx.analyses.counted import CountedLoop
from reorder.ptx.analyses.legality import Planner
from reorder.ptx.analyses.memory import MEMORY_KINDS, conflict
from reorder.ptx.analyses.provenance import UNKNOWN
from reorder.ptx.moves.fresh import Fresh
from reorder.ptx.moves.shift import TOKEN, Site

AHEAD = 8  # iterations a loop move may run a load early, at most: Prefetch 4, UnrollBatch 8 (7 ahead)


@dataclass(frozen=True, slots=True)
class LoopLoads:
    """The loads that may run early (statement indices, program order) and why the others may not."""

    movable: tuple[int, ...]
    refused: tuple[tuple[str, str], ...]  # (line, reason)
    in_place: bool = False  # some movable load crosses a store to its own buffer (the affine proof)


def loop_loads(analysis: Analysis, loop: CountedLoop) -> LoopLoads:
    planner = Planner(analysis)
    body, cfg = analysis.function.body, analysis.cfg
    latch = max(loop.loop.blocks)
    inside = [i for b in sorted(loop.loop.blocks) for i in cfg.blocks[b].instructions]
    movable, refused, in_place = [], [], False
    forms = LoopForms(analysis, loop)  # shared by the loop's loads: computed on demand
    for i in inside:
        effect = analysis.effects[i]
        if effect.kind != "load":
            continue
        reason, proved = None, False
        if not planner.hoistable_load(i):
            reason = f"a {effect.space} load" if effect.space not in ("global", "const") else "not on a line of its own"
        elif not cfg.dominates(cfg.block_of[i], latch):
            reason = "it does not run on every iteration"
        else:
            reason, proved = _memory_refusal(analysis, forms, inside, i)
            reason = reason or _unshiftable(analysis, loop, i)
        if reason:
            refused.append((body[i].ident, reason))
        else:
            movable.append(i)
            in_place = in_place or proved
    return LoopLoads(tuple(movable), tuple(refused), in_place)


def _memory_refusal(analysis: Analysis, forms: LoopForms, inside: list[int], load: int) -> tuple[str | None, bool]:
    """(why the load must stay, None if it may run early; whether a store to its own buffer
    was let through by the affine proof)."""
    effects, origins, facts = analysis.effects, analysis.origins, analysis.facts
    mine = origins.get(load, frozenset({UNKNOWN}))
    proved = False
    for x in inside:
        if x == load or effects[x].kind not in MEMORY_KINDS:
            continue
        theirs = origins.get(x, frozenset({UNKNOWN}))
        kind = conflict(effects[x], theirs, effects[load], mine, facts, (x, load))
        if not kind and effects[x].kind != "barrier":  # a load run early only rises above a barrier
            kind = conflict(effects[load], mine, effects[x], theirs, facts, (load, x))
        if kind == "memory" and effects[x].kind == "store" and disjoint_ahead(forms, load, x, AHEAD):
            proved = True
            continue
        if kind:
            s = analysis.function.body[x]
            return f"{kind} dependence on line {s.ident} ({s.ins.opcode}) in the loop", proved
    return None, proved


def _unshiftable(analysis: Analysis, loop: CountedLoop, load: int) -> str | None:
    site = Site(analysis, loop, Fresh(analysis.function), load, "probe")
    try:
        site.operands(load, 1)
        for reg in destinations(analysis, load):
            site.type_of(reg)
    except NotApplicable as exc:
        return str(exc)
    return None


def destinations(analysis: Analysis, load: int) -> list[str]:
    """The registers a load writes, in operand order."""
    return TOKEN.findall(analysis.function.body[load].ins.operands[0])
