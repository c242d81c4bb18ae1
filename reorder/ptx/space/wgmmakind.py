"""WgmmaAsync as a registered kind for the search (reorder.ptx.space.registry): 'wgmma', stage
'async'.

One on/off decision per loop-exit `wgmma.wait_group 0` that reorder.ptx.moves.wgmma can move with
every loop's register rules kept. It runs last: it changes wait counts only, and judges the
loops as the earlier kinds left them.
"""

from __future__ import annotations

from collections.abc import Sequence

from reorder.base.errors import NotApplicable
from reorder.ptx.model.model import Module
from reorder.ptx.moves.wgmma import WgmmaAsync
from reorder.ptx.space.registry import OFF, STAGES, Instance, MoveKind, MoveOptions, Pick, register


def wgmma_instances(module: Module, options: MoveOptions) -> list[Instance]:
    found = WgmmaAsync.instances(module, options.kernel)
    return [Instance("wgmma", w.wait, (OFF, "on")) for w in found[: options.max_instances]]


def wgmma_apply(module: Module, options: MoveOptions, picks: Sequence[Pick]) -> tuple[Module, tuple[str, ...]]:
    current, done = module, []
    for pick in picks:
        move = WgmmaAsync(options.kernel, pick.key)
        try:
            current, lowered = move.made(current)
        except NotApplicable:
            continue
        done.append(" ".join([move.describe(), *lowered]))
    return current, tuple(done)


WGMMA = register(
    MoveKind(
        "wgmma",
        STAGES["async"],
        "move a loop's exit wgmma wait onto the edges that need it and make its register waits exact, "
        "so ptxas keeps the tensor-core ops asynchronous",
        wgmma_instances,
        wgmma_apply,
    )
)
