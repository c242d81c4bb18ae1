"""UnrollBatch(loop, k): the body laid out k times, the k iterations' loads batched at the top.

At the top of each round (the header) the loads of iterations i .. i + k - 1 are issued
into k sets of fresh registers, iteration i + j's under "iteration i + j runs" (the chain of
reorder.ptx.moves.prefetch: no exit of iterations i .. i + j - 1 taken, each exit predicate
computed for its iteration) and its own guard; copy j then takes set j where its load was.
The copies keep every exit (reorder.ptx.moves.expand), so they are their own remainder: a round
the loop leaves part-way issued only the loads of the iterations that run, and the
iterations run and exit exactly as the original's, for any trip count. Loads issued k at a
time let the memory system overlap them where the original waited for each before the
next iteration's.

Legality is Prefetch's (reorder.ptx.moves.loopload): a load of iteration i + j moves above the
stores, barriers and fences of iterations i .. i + j - 1, so none of the loop's may
conflict with it (the no-alias rule for stores to other parameters).
"""

from __future__ import annotations

from dataclasses import dataclass

from reorder.base.errors import NotApplicable
from reorder.ptx.analyses.counted import CountedLoop
from reorder.ptx.analyses.memory import Noalias
from reorder.ptx.model.model import Function, Statement
from reorder.ptx.moves.expand import Layout, expand
from reorder.ptx.moves.fresh import Fresh
from reorder.ptx.moves.layout import from_header
from reorder.ptx.moves.prefetch import (
    LoopMove,
    buffers_for,
    checked_loop,
    consume,
    load_code,
    own_guard,
    stay_literals,
)
from reorder.ptx.moves.shift import Site

FACTORS = (2, 4)


@dataclass(frozen=True, slots=True)
class UnrollBatch(LoopMove):
    """Unroll the loop headed by `header` `amount` times, its loads batched at the top of each round."""

    name = "unroll"
    AMOUNTS = FACTORS

    def moved(self, function: Function) -> Function:
        return unroll_batch(function, self.header, self.amount, self.noalias, self.speculate)


def unroll_batch(
    function: Function, header: str, factor: int, noalias: Noalias = False, speculate: bool = False
) -> Function:
    """The function with the loop headed by `header` unrolled `factor` times, loads batched."""
    if not 2 <= factor <= 8:
        raise NotApplicable(f"unroll factor {factor}: expected 2 to 8")
    function = from_header(function, header)
    analysis, loop, loads = checked_loop(function, header, noalias, speculate)
    fresh = Fresh(function)
    buffers = [{load: buffers_for(analysis, fresh, load) for load in loads} for _ in range(factor)]
    top = _batch(analysis, loop, fresh, loads, buffers)

    def emit(j: int, i: int, s: Statement) -> list[Statement]:
        return consume(fresh, analysis, i, s, buffers[j][i]) if i in buffers[j] else [s]

    return fresh.declare(expand(function, loop, Layout(factor, (), (top,), emit)))


def _batch(analysis, loop: CountedLoop, fresh: Fresh, loads, buffers) -> tuple[Statement, ...]:
    """The loads of iterations i .. i + k - 1, each under "it runs" and its own guard."""
    site = Site(analysis, loop, fresh, loop.start, f"{analysis.function.body[loop.start].ident}.batch")
    runs: str | None = None
    for j in range(len(buffers)):
        if j:
            runs = site.conjoin(([(runs, True)] if runs else []) + stay_literals(site, loop, j - 1), positive=True)
        for load in loads:
            guard = site.conjoin(([(runs, True)] if runs else []) + own_guard(site, load, j))
            site.emit(load_code(analysis, load, buffers[j][load], site.operands(load, j), guard))
    return tuple(site.out)
