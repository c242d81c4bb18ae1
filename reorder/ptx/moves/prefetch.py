"""Prefetch(loop, d): iteration i issues the loads of iteration i + d into fresh registers.

The loop is rotated: a prologue before it loads iterations 0 .. d-1 into d sets of fresh
registers; the body is laid out d times (reorder.ptx.moves.expand), copy j consuming set j (a
`mov` into the original destinations, at the load's place and under its guard) and then
refilling it with the load of the iteration d ahead. Each copy keeps every exit, so the
epilogue is the last copies that run: no load is consumed that was not made, whatever the
trip count. The d copies (modulo variable expansion) are what lets a load stay in flight
for d iterations: a single set of registers rotated by `mov`s would make each `mov` wait
for the load behind it.

Never a load the original would not perform: a prefetched load runs under `R && guard`,
where `guard` is the load's own guard computed for iteration i + d (reorder.ptx.moves.shift), and
`R` is the predicate "iteration i + d runs", kept as one predicate register across the
loop: R(k + 1) = R(k) and no exit of iteration k is taken, each exit predicate computed
for iteration k by the loop's own instructions with its inductions advanced. The chain
needs no trip count and no reasoning about overflow (the advanced inductions wrap as the
loop's adds do), so a loop whose trip count is not known keeps this guarded form. An
early-exit loop (an exit decided by loaded data) is taken only with `speculate`: R then
follows its bound exits only, and the next iterations' loads run in bounds, whether or not
the data exit is taken first; the exits are still evaluated in the original order.

Which loads: reorder.ptx.moves.loopload (the memory rules against every store, barrier and fence
of the loop, --assume-noalias for stores to other parameters).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar, TypeVar

from reorder.base.errors import NotApplicable
from reorder.ptx.analyses.analysis import Analysis, analysis_of
from reorder.ptx.analyses.counted import CountedLoop, loop_labels, shape_refusal
from reorder.ptx.analyses.memory import Noalias
from reorder.ptx.model.model import Function, Module, Statement, new_instruction
from reorder.ptx.moves.expand import Layout, expand
from reorder.ptx.moves.fresh import Fresh
from reorder.ptx.moves.layout import from_header
from reorder.ptx.moves.loopfind import find_loop
from reorder.ptx.moves.loopload import LoopLoads, destinations, loop_loads
from reorder.ptx.moves.shift import Site, renamed_code

DISTANCES = (1, 2, 3, 4)
_MOV_TYPE = {".f16": ".b16", ".bf16": ".b16", ".f16x2": ".b32", ".bf16x2": ".b32"}  # mov has no such types


_Move = TypeVar("_Move", bound="LoopMove")


@dataclass(frozen=True, slots=True)
class LoopMove:
    """A move on the loop headed by `header` by an `amount`: Prefetch's distance, UnrollBatch's
    factor. Both take the same loops (movable_loops) and the same assumptions; a kind names
    the amounts it tries and its transform."""

    kernel: str
    header: str
    amount: int
    noalias: Noalias = False
    speculate: bool = False
    name: ClassVar[str]
    AMOUNTS: ClassVar[tuple[int, ...]]

    @classmethod
    def instances(
        cls: type[_Move], module: Module, kernel: str, noalias: Noalias = False, speculate: bool = False
    ) -> list[_Move]:
        return [
            cls(kernel, label, amount, noalias, speculate)
            for label in movable_loops(module.function(kernel), noalias, speculate)
            for amount in cls.AMOUNTS
        ]

    def apply(self, module: Module) -> Module:
        return module.with_function(self.moved(module.function(self.kernel)))

    def moved(self, function: Function) -> Function:
        """The function with this move made on its loop."""
        raise NotImplementedError

    def describe(self) -> str:
        return f"{self.name}:{self.header}@{self.amount}"


@dataclass(frozen=True, slots=True)
class Prefetch(LoopMove):
    """Prefetch the loads of the loop headed by `header` `amount` iterations ahead."""

    name = "prefetch"
    AMOUNTS = DISTANCES

    def moved(self, function: Function) -> Function:
        return prefetch(function, self.header, self.amount, self.noalias, self.speculate)


def movable_loops(function: Function, noalias: Noalias, speculate: bool) -> list[str]:
    """Header labels of the loops a loop move can be made on (some load can run early)."""
    return [
        label
        for label in loop_labels(analysis_of(function, noalias))
        if (loads := _loads_of(function, label, noalias, speculate)) and loads.movable
    ]


@lru_cache(maxsize=8)
def in_place_loops(function: Function, noalias: Noalias) -> frozenset[str]:
    """Header labels of the movable loops whose loads run early past stores to their own
    buffer (an in-place pass: reorder.ptx.analyses.affine let them through). Kept per
    function: every loop menu of a twin list asks it of the same PTX."""
    return frozenset(
        label
        for label in loop_labels(analysis_of(function, noalias))
        if (loads := _loads_of(function, label, noalias, False)) and loads.movable and loads.in_place
    )


def _loads_of(function: Function, label: str, noalias: Noalias, speculate: bool) -> LoopLoads | None:
    """The loads of the loop headed by `label`, laid out from its header; None when no loop
    move can be made on it (not in the supported shape, or left early without `speculate`)."""
    analysis = analysis_of(from_header(function, label), noalias)
    loop = next(lp for lp in analysis.cfg.loops if label in analysis.cfg.blocks[lp.header].labels)
    if shape_refusal(analysis, loop) is not None:
        return None
    counted = find_loop(analysis, label)
    return loop_loads(analysis, counted) if speculate or not counted.early_exit else None


def checked_loop(function: Function, header: str, noalias: Noalias, speculate: bool):
    """The analysis, the loop and its movable loads (NotApplicable when the move cannot be made)."""
    analysis = analysis_of(function, noalias)
    loop = find_loop(analysis, header)
    data = [analysis.function.body[e.branch].ident for e in loop.exits if not e.bound]
    if data and not speculate:
        raise NotApplicable(
            f"{function.name}: loop {header} is left early on loaded data (line {', '.join(data)}): "
            "its next iterations' loads would be speculative (allow with --speculate)"
        )
    if not any(e.bound for e in loop.exits):
        raise NotApplicable(
            f"{function.name}: loop {header}: no exit is decided by its inductions alone: "
            "nothing bounds the iterations a load could run ahead of"
        )
    loads = loop_loads(analysis, loop)
    if not loads.movable:
        why = "; ".join(f"line {line}: {reason}" for line, reason in loads.refused) or "it has no load"
        raise NotApplicable(f"{function.name}: loop {header}: no load can run early ({why})")
    return analysis, loop, loads.movable


def prefetch(
    function: Function, header: str, distance: int, noalias: Noalias = False, speculate: bool = False
) -> Function:
    """The function with the loop headed by `header` prefetching `distance` iterations ahead."""
    if distance not in DISTANCES:
        raise NotApplicable(f"prefetch distance {distance}: expected one of {', '.join(map(str, DISTANCES))}")
    function = from_header(function, header)
    analysis, loop, loads = checked_loop(function, header, noalias, speculate)
    fresh = Fresh(function)
    buffers = [{load: buffers_for(analysis, fresh, load) for load in loads} for _ in range(distance)]
    ahead = fresh.take(".pred")
    prologue = _prologue(analysis, loop, fresh, loads, buffers, ahead)
    tops = tuple(_advance_ahead(analysis, loop, fresh, ahead, distance, j) for j in range(distance))

    def emit(j: int, i: int, s: Statement) -> list[Statement]:
        if i not in buffers[j]:
            return [s]
        site = Site(analysis, loop, fresh, i, f"{s.ident}.pf{j}")
        guard = site.conjoin([(ahead, True)] + own_guard(site, i, distance))
        site.emit(load_code(analysis, i, buffers[j][i], site.operands(i, distance), guard))
        return consume(fresh, analysis, i, s, buffers[j][i]) + site.out

    moved = expand(function, loop, Layout(distance, tuple(prologue), tops, emit))
    return fresh.declare(moved)


def _prologue(analysis: Analysis, loop: CountedLoop, fresh: Fresh, loads, buffers, ahead: str) -> list[Statement]:
    """Loads of iterations 0 .. d-1 before the loop, each under "iteration j runs" and its guard;
    then R = "iteration d-1 runs"."""
    site = Site(analysis, loop, fresh, None, f"{analysis.function.body[loop.start].ident}.pro")
    runs: str | None = None
    for j in range(len(buffers)):
        if j:
            runs = site.conjoin(([(runs, True)] if runs else []) + stay_literals(site, loop, j - 1), positive=True)
        for load in loads:
            guard = site.conjoin(([(runs, True)] if runs else []) + own_guard(site, load, j))
            site.emit(load_code(analysis, load, buffers[j][load], site.operands(load, j), guard))
    site.emit(f"mov.pred \t{ahead}, {runs or 1};")
    return site.out


def _advance_ahead(
    analysis: Analysis, loop: CountedLoop, fresh: Fresh, ahead: str, distance: int, j: int
) -> tuple[Statement, ...]:
    """At the top of copy j (iteration i): R = R and no exit of iteration i + d - 1 is taken."""
    site = Site(analysis, loop, fresh, loop.start, f"{analysis.function.body[loop.start].ident}.ahead{j}")
    combined = site.conjoin([(ahead, True)] + stay_literals(site, loop, distance - 1), positive=True)
    if combined != ahead:
        site.emit(f"mov.pred \t{ahead}, {combined};")
    return tuple(site.out)


def stay_literals(site: Site, loop: CountedLoop, shift: int) -> list[tuple[str, bool]]:
    """For each bound exit: the literal that holds when iteration i + shift does not take it."""
    out = []
    for e in loop.exits:
        if e.bound:
            reg, positive = site.literal(e.branch, shift)
            out.append((reg, positive != e.taken_leaves))
    return out


def own_guard(site: Site, load: int, shift: int) -> list[tuple[str, bool]]:
    return [site.literal(load, shift)] if site.analysis.function.body[load].ins.guard else []


def buffers_for(analysis: Analysis, fresh: Fresh, load: int) -> dict[str, str]:
    declared = fresh.declared
    return {reg: fresh.take(declared.type_of(reg)) for reg in destinations(analysis, load)}


def load_code(
    analysis: Analysis, load: int, buffers: dict[str, str], sources: dict[str, str], guard: str | None
) -> str:
    """The load, writing `buffers`, reading `sources`, under `guard`."""
    return renamed_code(analysis.function.body[load].ins, buffers, sources, guard)


def consume(fresh: Fresh, analysis: Analysis, load: int, s: Statement, buffers: dict[str, str]) -> list[Statement]:
    """The load's place in a copy: its destinations copied from the prefetched registers, under its guard."""
    ins = analysis.function.body[load].ins
    head = f"@{ins.guard} " if ins.guard else ""
    out = []
    for k, (reg, buf) in enumerate(buffers.items()):
        kind = fresh.declared.type_of(reg)
        out.append(new_instruction(f"{head}mov{_MOV_TYPE.get(kind, kind)} \t{reg}, {buf};", f"{s.ident}.use{k}"))
    return out
