"""Which global writes may run on each side of an aligned CTA barrier.

A read placed after a barrier is guaranteed to see every write another thread of the block
made before arriving there; moved above the barrier, it loses that guarantee for exactly
those writes. For an *aligned* barrier (`bar.sync`, `bar.red`, `barrier.sync.aligned`,
`barrier.red.aligned`: PTX requires every thread to execute the same barrier instruction)
the writes some thread may make before arriving at it are the writes from which the
barrier can be reached in the control-flow graph, and the writes it may make after leaving
it are those reachable from it. A buffer no such write touches is one no thread changes
across that barrier, so a read of it may cross (reorder.ptx.analyses.memory.crosses_barrier).

Example: a cross-entropy kernel that reads a row of logits in a first loop (a block
reduction, so a barrier, every iteration) and overwrites it with gradients in a later loop:
no write to the logits reaches the first loop's barrier, so the first loop's reads may be
issued an iteration early; the kernel writing the buffer somewhere no longer forbids it.

An arriving-only barrier (`bar.arrive`) or an unaligned `barrier.sync` is left to the whole
kernel's rule (does the kernel write the buffer at all)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from reorder.ptx.analyses.cfg import Cfg
from reorder.ptx.analyses.memory import Sides, writes_of
from reorder.ptx.analyses.provenance import Origins
from reorder.ptx.model.effects import Effect
from reorder.ptx.model.model import Function

WAITS = frozenset({"sync", "red"})  # a barrier that waits for the block (not `arrive`)


def aligned_wait(function: Function, i: int) -> bool:
    """Statement i is a CTA barrier every thread waits at by the same instruction."""
    ins = function.body[i].ins
    mods = [m for m in ins.modifiers if m != "cta"]
    if not mods or mods[0] not in WAITS:
        return False
    return ins.base == "bar" or (ins.base == "barrier" and "aligned" in mods)


def barrier_sides(
    function: Function,
    cfg: Cfg,
    effects: Sequence[Effect | None],
    origins: dict[int, Origins],
    later: Mapping[int, frozenset[int]],
) -> dict[int, Sides]:
    """Per aligned barrier statement: the writes that may run before it and after it.

    `later` is each block's set of blocks reachable through at least one edge
    (reorder.ptx.analyses.graph.reachable_blocks), so a write in the same loop as the
    barrier counts on both sides."""
    effects = tuple(effects)
    writers = [i for i, e in enumerate(effects) if e is not None and (e.writes_memory or e.kind in ("full", "unknown"))]
    out = {}
    for b, e in enumerate(effects):
        if e is None or e.kind != "barrier" or not aligned_wait(function, b):
            continue
        before = [w for w in writers if _runs_before(cfg, later, w, b)]
        after = [w for w in writers if _runs_before(cfg, later, b, w)]
        out[b] = Sides(writes_of(effects, origins, before), writes_of(effects, origins, after))
    return out


def _runs_before(cfg: Cfg, later: Mapping[int, frozenset[int]], x: int, y: int) -> bool:
    """Some path runs statement x and then statement y."""
    bx, by = cfg.block_of[x], cfg.block_of[y]
    return (bx == by and x < y) or by in later[bx]
