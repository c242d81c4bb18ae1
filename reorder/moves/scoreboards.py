"""Own scoreboards for a batch of loads: each first use waits for its own load, not for all.

ptxas gives the loads of one chunk of work one scoreboard and waits on it once per chunk. When a
move hoists the loads of several chunks together (SliceBatch), they keep the compiler's
scoreboards, so loads that shared one still share it and the first use of the first chunk waits
for every chunk's load. Here the batch's results are spread over the scoreboards free across the
batch's range: a scoreboard no op outside the batch holds anywhere from the batch's first load to
the block's end (on any path into the block: the verifier's entry states). Loads are grouped by
first use, in order, one group per free scoreboard (with fewer scoreboards than loads, loads used
next to each other share one: an x and a w load of one chunk). The block's waits on those
scoreboards are then placed again by the scheduler from the new assignment
(reorder.moves.schedule; what was in flight at the block's entry is learnt from the verdict), and
the result must pass the verifier, scoreboard reuse included (legality.scoreboards), with no
violation the kept assignment did not have; otherwise the compiler's scoreboards stay.
"""

from __future__ import annotations

from legality.verify import free_scoreboards, reuse_verdict, verify_instructions
from reorder.base.errors import LegalityError
from reorder.moves.schedule import schedule_block
from reorder.sass.model import Instruction

NONE = 7


def spread_scoreboards(
    kernel: tuple[Instruction, ...], start: int, end: int, batch: frozenset[int], arch: int
) -> tuple[tuple[Instruction, ...], str]:
    """The kernel with the loads at offsets `batch` of block [start, end) on scoreboards of their
    own where some are free, and a note saying what was done (or why not)."""
    block = kernel[start:end]
    loads = [k for k, ins in enumerate(block) if ins.offset in batch and ins.ctrl.wbar != NONE]
    if len(loads) < 2:
        return kernel, ""
    pool = free_scoreboards(kernel, start, end, batch, loads[0], arch)
    if pool is None:
        return kernel, "scoreboards kept: a batch load's result is still pending after its block"
    if len(pool) < 2:
        return kernel, "scoreboards kept: fewer than two free across the batch"
    by_use = sorted(loads, key=lambda k: (_first_use(block, k), k))
    assign = {block[k].offset: pool[g * len(pool) // len(by_use)] for g, k in enumerate(by_use)}
    if all(block[k].ctrl.wbar == assign[block[k].offset] for k in loads):
        return kernel, ""
    placed = list(kernel)
    placed[start:end] = _rewaited(block, loads, assign, sum(1 << b for b in pool))
    try:
        new = schedule_block(tuple(placed), start, end, list(range(start, end)), arch)
    except LegalityError as e:
        return kernel, f"scoreboards kept: {e}"
    before = {v.key for v in verify_instructions(kernel, arch)}
    if any(v.key not in before for v in verify_instructions(new, arch)) or reuse_verdict(new, kernel, arch):
        return kernel, "scoreboards kept: the spread schedule is not legal"
    groups = len(set(assign.values()))
    return new, (
        f"block {block[0].offset:#06x}: {len(loads)} loads spread over {groups} scoreboards "
        f"(SB{', SB'.join(map(str, sorted(set(assign.values()))))}), each first use waits for its own group"
    )


def _rewaited(block: tuple[Instruction, ...], loads: list[int], assign: dict[int, int], mask: int) -> list[Instruction]:
    """The block with the new write scoreboards and, from the first load on, the waits on the
    pool's scoreboards moved to each load's first use (before it they wait for what was in
    flight at entry, and stay). The scheduler then adds what else the new order needs; the
    block's own exit state must already be right, since a loop's entry is its own exit."""
    extra = [0] * len(block)
    for k in loads:
        use = _first_use(block, k)
        if use < len(block):
            extra[use] |= 1 << assign[block[k].offset]
    out = []
    for k, ins in enumerate(block):
        ctrl = ins.ctrl.with_(wbar=assign.get(ins.offset, ins.ctrl.wbar))
        if k >= loads[0] and ins.known and not ins.is_barrier:
            ctrl = ctrl.with_(wait=ctrl.wait & ~mask)
        out.append(ins.with_ctrl(ctrl.with_(wait=ctrl.wait | extra[k])))
    return out


def _first_use(block: tuple[Instruction, ...], k: int) -> int:
    """The first position after k that reads or overwrites what the load at k writes."""
    regs = block[k].access.writes
    return next(
        (j for j in range(k + 1, len(block)) if regs & (block[j].access.reads | block[j].access.writes)), len(block)
    )
