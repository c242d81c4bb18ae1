"""The built-in PTX move kinds, registered for the search (reorder.ptx.space.registry).

- 'peel' (stage 10): peel a loop's first iteration, offered only for loops whose peeled
  copy holds a load that can then move up (otherwise peeling only grows the code).
- 'reuse' (stage 40): one on/off decision per load whose address was loaded earlier on
  every path with nothing in between that may write it (reorder.ptx.moves.reuse); it comes last,
  since peeling and hoisting are what put such pairs side by side.
- 'wgmma' (stage 50, reorder.ptx.space.wgmmakind): one on/off decision per loop-exit wgmma wait
  whose move lets ptxas keep the loop's tensor-core ops asynchronous (reorder.ptx.moves.wgmma).
- 'hoist' (stage 30): one decision per *load group*, the hoistable loads of one block,
  whose alternatives are where the group goes: 'near' (each load to its nearest legal
  destination), 'store' (above a store), 'barrier' (above a CTA barrier), 'top' (as far as
  legal). Alternatives that put every load of the group in the same place are offered
  once. A group rather than a load per parameter: the loads of one block are one unit of
  work in the kernel (RMSNorm's normalise pass), and a per-load choice would multiply the
  space without adding placements anyone measured to matter. A placement that coincides
  with an earlier one of ('barrier', 'top', 'store', 'near') goes by the earlier name.

Importing this module registers the kinds; kinds written elsewhere are imported at the
bottom, so that `import reorder.ptx.space.kinds` is all the search needs to see every kind.
"""

from __future__ import annotations

from collections.abc import Sequence

from reorder.base.errors import NotApplicable
from reorder.ptx.analyses.analysis import analysis_of
from reorder.ptx.analyses.legality import Planner
from reorder.ptx.model.model import Module
from reorder.ptx.moves.hoist import GlobalHoist, choose, targets
from reorder.ptx.moves.peel import PeelLoop
from reorder.ptx.moves.reuse import ReuseLoad
from reorder.ptx.space.plans import loads_reaching
from reorder.ptx.space.registry import OFF, STAGES, Instance, MoveKind, MoveOptions, Pick, made_in_turn, register

PLACEMENTS = ("barrier", "top", "store", "near")  # one equal to an earlier one goes by the earlier name


def _load_groups(module: Module, options: MoveOptions) -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    """(key, load idents, placements) per block holding hoistable loads, in program order;
    placements that coincide for every load of the group are listed once."""
    planner = Planner(analysis_of(module.function(options.kernel), options.noalias))
    body, cfg = planner.analysis.function.body, planner.analysis.cfg
    by_block: dict[int, list[tuple[str, list]]] = {}
    for i, s in enumerate(body):
        if planner.hoistable_load(i):
            found, _ = targets(planner, i)
            if found:
                by_block.setdefault(cfg.block_of[i], []).append((s.ident, found))
    groups = []
    for block in sorted(by_block):
        loads = by_block[block]
        seen, placements = set(), []
        for name in PLACEMENTS:
            where = tuple((t.block, t.plan.at) if (t := choose(found, name)) else None for _, found in loads)
            if any(where) and where not in seen:
                seen.add(where)
                placements.append(name)
        groups.append((loads[0][0], tuple(ident for ident, _ in loads), tuple(placements)))
    return groups


def _rank(group: tuple[str, tuple[str, ...], tuple[str, ...]]) -> tuple:
    """Groups that can cross a barrier first, then a store, then the rest (for the cap)."""
    placements = group[2]
    return ("barrier" not in placements, "store" not in placements)


def hoist_instances(module: Module, options: MoveOptions) -> list[Instance]:
    groups = _load_groups(module, options)
    kept = sorted(sorted(range(len(groups)), key=lambda k: _rank(groups[k]))[: options.max_instances])
    return [Instance("hoist", groups[k][0], (OFF, *groups[k][2])) for k in kept]


def hoist_apply(module: Module, options: MoveOptions, picks: Sequence[Pick]) -> tuple[Module, tuple[str, ...]]:
    """Every load of each picked group to its placement, last load first (so loads that
    share a destination keep their program order); a hoist an earlier one made impossible
    is left out."""
    wanted = {p.key: p.choice for p in picks}
    moves = [
        (ident, wanted[key]) for key, idents, _ in _load_groups(module, options) if key in wanted for ident in idents
    ]
    return made_in_turn(
        module, (GlobalHoist(options.kernel, ident, to, options.noalias) for ident, to in reversed(moves))
    )


def peel_instances(module: Module, options: MoveOptions) -> list[Instance]:
    out = []
    before = {s.ident for s in module.function(options.kernel).body}
    for peel in PeelLoop.instances(module, options.kernel):
        try:
            after = peel.apply(module)
        except NotApplicable:
            continue
        copied = {s.ident for s in after.function(options.kernel).body} - before
        if loads_reaching(after, options.kernel, options.noalias, "top", only=copied):
            out.append(Instance("peel", peel.header, (OFF, "on")))
    return out[: options.max_instances]


def peel_apply(module: Module, options: MoveOptions, picks: Sequence[Pick]) -> tuple[Module, tuple[str, ...]]:
    return made_in_turn(module, (PeelLoop(options.kernel, pick.key) for pick in picks))


def reuse_instances(module: Module, options: MoveOptions) -> list[Instance]:
    found = ReuseLoad.instances(module, options.kernel, options.noalias)
    return [Instance("reuse", r.load, (OFF, "on")) for r in found[: options.max_instances]]


def reuse_apply(module: Module, options: MoveOptions, picks: Sequence[Pick]) -> tuple[Module, tuple[str, ...]]:
    return made_in_turn(module, (ReuseLoad(options.kernel, pick.key, options.noalias) for pick in picks))


PEEL = register(
    MoveKind(
        "peel", STAGES["loop shape"], "peel a loop's first iteration so its loads can move", peel_instances, peel_apply
    )
)
HOIST = register(
    MoveKind(
        "hoist",
        STAGES["hoist"],
        "move a block's loads up (near, above a store, above a barrier, or as far as legal)",
        hoist_instances,
        hoist_apply,
    )
)
REUSE = register(
    MoveKind(
        "reuse",
        STAGES["reuse"],
        "take an earlier load's value instead of loading the same address again",
        reuse_instances,
        reuse_apply,
    )
)

import reorder.ptx.space.loopkinds  # noqa: E402 - registers 'loop' (Prefetch, UnrollBatch) after the kinds above
import reorder.ptx.space.wgmmakind  # noqa: E402, F401 - registers 'wgmma' (WgmmaAsync) after the kinds above
