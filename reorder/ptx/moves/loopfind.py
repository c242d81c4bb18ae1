"""Find a counted loop by its header label: the shape check and inductions of
`reorder.ptx.analyses.counted`, with each exit classified by `reorder.ptx.moves.shift` (can its guard be
computed for a later iteration?). Its own module because shift builds on CountedLoop: the
two meet here, above both, instead of importing each other."""

from __future__ import annotations

from reorder.base.errors import NotApplicable
from reorder.ptx.analyses.analysis import Analysis
from reorder.ptx.analyses.counted import CountedLoop, Exit, exit_branches, inductions, shape_refusal
from reorder.ptx.moves.shift import bound_predicate


def find_loop(analysis: Analysis, label: str) -> CountedLoop:
    """The loop headed by `label` in the supported shape (NotApplicable saying why not)."""
    cfg = analysis.cfg
    loop = next((lp for lp in cfg.loops if label in cfg.blocks[lp.header].labels), None)
    if loop is None:
        raise NotApplicable(f"{analysis.function.name}: no loop is headed by {label}")
    refusal = shape_refusal(analysis, loop)
    if refusal:
        raise NotApplicable(f"{analysis.function.name}: loop {label}: {refusal}")
    blocks = sorted(loop.blocks)
    first, last = cfg.blocks[blocks[0]], cfg.blocks[blocks[-1]]
    steps = inductions(analysis, loop)
    partial = CountedLoop(label, loop, first.start, last.end, last.terminator, steps, ())
    exits = tuple(
        Exit(branch, taken, bound_predicate(analysis, partial, branch))
        for branch, taken in exit_branches(analysis, loop)
    )
    return CountedLoop(label, loop, first.start, last.end, last.terminator, steps, exits)
