"""The loop moves as a registered kind for the search (reorder.ptx.space.registry): 'loop', stage
'loop moves'.

One decision per loop whose loads can run early: OFF, Prefetch at distance 1..4
('prefetch1' .. 'prefetch4') or UnrollBatch by 2 or 4 ('unroll2', 'unroll4'). Whether a
loop pays, and how far ahead, depends on the launch shape (a prefetch of the next
block of Triton's looped RMSNorm was 0.86x at 16 rows of 4096 and 1.06x at 1024 rows), so
the search measures it per shape rather than a rule choosing it. The distance is part of
the alternative, so it exists only when prefetching is chosen. Early-exit loops (a scan
left on loaded data) are not offered: their loads would run speculatively, which only the
user may allow (`reorder ptx-loops --speculate`).
"""

from __future__ import annotations

from collections.abc import Sequence

from reorder.base.errors import NotApplicable
from reorder.ptx.model.model import Module
from reorder.ptx.moves.prefetch import DISTANCES, Prefetch, movable_loops
from reorder.ptx.moves.unroll import FACTORS, UnrollBatch
from reorder.ptx.space.registry import OFF, STAGES, Instance, MoveKind, MoveOptions, Pick, made_in_turn, register

CHOICES = tuple(f"prefetch{d}" for d in DISTANCES) + tuple(f"unroll{k}" for k in FACTORS)


def loop_instances(module: Module, options: MoveOptions) -> list[Instance]:
    labels = movable_loops(module.function(options.kernel), options.noalias, speculate=False)
    return [Instance("loop", label, (OFF, *CHOICES)) for label in labels[: options.max_instances]]


def loop_move(options: MoveOptions, label: str, choice: str) -> Prefetch | UnrollBatch:
    """The move an alternative names."""
    if choice.startswith("prefetch"):
        return Prefetch(options.kernel, label, int(choice.removeprefix("prefetch")), options.noalias)
    if choice.startswith("unroll"):
        return UnrollBatch(options.kernel, label, int(choice.removeprefix("unroll")), options.noalias)
    raise NotApplicable(f"loop move {choice!r}: expected one of {', '.join(CHOICES)}")


def loop_apply(module: Module, options: MoveOptions, picks: Sequence[Pick]) -> tuple[Module, tuple[str, ...]]:
    """Each picked loop's move, in program order; one an earlier move made impossible is skipped."""
    return made_in_turn(module, (loop_move(options, pick.key, pick.choice) for pick in picks))


LOOP = register(
    MoveKind(
        "loop",
        STAGES["loop moves"],
        "prefetch a loop's loads 1-4 iterations ahead, or unroll it 2 or 4 times with the loads batched",
        loop_instances,
        loop_apply,
    )
)
