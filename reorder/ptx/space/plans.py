"""Which moves to make when the user names none: a plan per destination mode.

- 'barrier': every load that can rise above a CTA barrier goes to the nearest destination
  above one; a loop is peeled first when its first iteration's loads then can (RMSNorm's
  normalise pass above its block reduction, the case DESIGN.md measured by hand).
- 'store': every load that can rise above a store (under no-alias) goes just above it.
- 'top': the loads of the 'barrier' plan, each as far up as it may go.
- 'branch': every load that can leave its block goes as far up as it may (no peeling).

Hoists are applied last load first, so the groups keep their program order at a shared
destination; a hoist that an earlier one made impossible is left out, so the returned
list is exactly what was applied.
"""

from __future__ import annotations

from reorder.base.errors import NotApplicable
from reorder.ptx.analyses.analysis import analysis_of
from reorder.ptx.analyses.legality import Planner
from reorder.ptx.analyses.memory import Noalias
from reorder.ptx.model.model import Module
from reorder.ptx.moves.hoist import GlobalHoist, choose, targets
from reorder.ptx.moves.peel import PeelLoop

# mode -> (which loads: those with this destination; where they go; peel loops for which loads)
_MODES = {
    "barrier": ("barrier", "barrier", "barrier"),
    "store": ("store", "store", "store"),
    "top": ("barrier", "top", "barrier"),
    "branch": ("top", "top", None),
}
MODES = tuple(_MODES)
Move = PeelLoop | GlobalHoist


def loads_reaching(module: Module, kernel: str, noalias: Noalias, to: str, only: set[str] | None = None) -> list[str]:
    """Idents of the loads (among `only`, when given) that have a destination `to`, in program order."""
    planner = Planner(analysis_of(module.function(kernel), noalias))
    out = []
    for i, s in enumerate(planner.analysis.function.body):
        if only is not None and s.ident not in only:
            continue
        if planner.hoistable_load(i) and choose(targets(planner, i)[0], to) is not None:
            out.append(s.ident)
    return out


def plan(module: Module, kernel: str, noalias: Noalias, mode: str = "barrier") -> tuple[Module, list[Move]]:
    """The module after the mode's moves, and the moves (in the order applied)."""
    if mode not in MODES:
        raise NotApplicable(f"mode {mode!r}: expected one of {', '.join(MODES)}")
    which, to, peel_for = _MODES[mode]
    current, moves = _peel_for(module, kernel, noalias, peel_for) if peel_for else (module, [])
    for ident in reversed(loads_reaching(current, kernel, noalias, which)):
        move = GlobalHoist(kernel, ident, to, noalias)
        try:
            current = move.apply(current)
        except NotApplicable:
            continue
        moves.append(move)
    return current, moves


def _peel_for(module: Module, kernel: str, noalias: Noalias, which: str) -> tuple[Module, list[Move]]:
    """Peel the loops whose first-iteration loads could then reach a `which` destination."""
    current = module
    moves: list[Move] = []
    for peel in PeelLoop.instances(module, kernel):
        try:
            trial = peel.apply(current)
        except NotApplicable:
            continue
        copied = {s.ident for s in trial.function(kernel).body} - {s.ident for s in current.function(kernel).body}
        if loads_reaching(trial, kernel, noalias, which, only=copied):
            current = trial
            moves.append(peel)
    return current, moves


def apply_moves(module: Module, moves: list[Move]) -> Module:
    """Apply moves in order (each raises NotApplicable when it cannot be made)."""
    for move in moves:
        module = move.apply(module)
    return module
