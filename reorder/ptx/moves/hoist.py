"""GlobalHoist: move a global or constant load, with its address and guard computation, up
into a dominating block: across stores (under no-alias), across barriers (when no thread
can have written its buffer), out of an `if` (predicated by the condition that led to it),
out of a loop (when its address does not change). Legality: reorder.ptx.analyses.legality.

An instance names the load (its statement ident: the PTX line it started on) and how far
it goes (`to`): 'upN' (the N-th dominating block above the load's own), 'near' (the
nearest legal one), 'barrier' or 'store' (the nearest destination above at least one
barrier, or store) or 'top' (the farthest legal one). The search picks which loads and how far; nothing else about the
kernel changes, and ptxas still allocates registers and schedules. The PTX text is
rewritten by reorder.ptx.moves.rewrite.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reorder.base.errors import NotApplicable
from reorder.ptx.analyses.analysis import analysis_of
from reorder.ptx.analyses.legality import Plan, Planner, Refusal
from reorder.ptx.analyses.memory import Noalias
from reorder.ptx.model.model import Function, Module
from reorder.ptx.moves.rewrite import rewrite


@dataclass(frozen=True, slots=True)
class Target:
    """One legal destination of a load: how many dominators up, and the plan."""

    up: int
    block: int
    plan: Plan


def targets(planner: Planner, load: int) -> tuple[list[Target], Refusal | None]:
    """Every legal destination above the load's own block, nearest first, and why the walk
    stopped (None when it reached the entry)."""
    cfg = planner.analysis.cfg
    chain = cfg.dominators(cfg.block_of[load])
    found: list[Target] = []
    for up, block in enumerate(chain[1:], start=1):
        outcome = planner.plan(load, block)
        if isinstance(outcome, Refusal):
            if outcome.final:
                return found, outcome  # a higher block has all of this one's region, and more
            continue
        found.append(Target(up, block, outcome))
    return found, None


def choose(found: list[Target], to: str) -> Target | None:
    """The destination `to` names among the legal ones."""
    if not found:
        return None
    if to == "top":
        return found[-1]
    if to == "near":
        return found[0]
    if to in ("barrier", "store"):
        return next((t for t in found if to in t.plan.crosses), None)
    match = re.fullmatch(r"up(\d+)", to)
    if match:
        return next((t for t in found if t.up == int(match.group(1))), None)
    raise NotApplicable(f"hoist destination {to!r}: expected near, top, barrier, store or upN")


@dataclass(frozen=True, slots=True)
class GlobalHoist:
    """Hoist the load at statement `load` (its ident) of `kernel` to `to`."""

    kernel: str
    load: str
    to: str
    noalias: Noalias = False
    name = "hoist"

    @staticmethod
    def instances(module: Module, kernel: str, noalias: Noalias = False) -> list[GlobalHoist]:
        """One instance per load and legal destination ('upN'), nearest first."""
        planner = Planner(analysis_of(module.function(kernel), noalias))
        out = []
        for i, s in enumerate(planner.analysis.function.body):
            if planner.hoistable_load(i):
                found, _ = targets(planner, i)
                out += [GlobalHoist(kernel, s.ident, f"up{t.up}", noalias) for t in found]
        return out

    def apply(self, module: Module) -> Module:
        function = module.function(self.kernel)
        planner = Planner(analysis_of(function, self.noalias))
        index = _find(function, self.load)
        if not planner.hoistable_load(index):
            raise NotApplicable(f"{self.kernel}: line {self.load} is not a global or constant load that can move")
        found, stopped = targets(planner, index)
        chosen = choose(found, self.to)
        if chosen is None:
            why = f": {stopped.reason}" if stopped else ""
            raise NotApplicable(f"{self.kernel}: the load at line {self.load} has no legal destination {self.to}{why}")
        return module.with_function(rewrite(function, chosen.plan, planner.analysis))

    def describe(self) -> str:
        return f"hoist:{self.load}@{self.to}"


def _find(function: Function, ident: str) -> int:
    for i, s in enumerate(function.body):
        if s.ident == ident and s.kind == "instruction":
            return i
    raise NotApplicable(f"{function.name}: no instruction at line {ident}")
