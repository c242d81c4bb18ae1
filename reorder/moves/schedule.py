"""Control codes for a new order of a block: the fewest stall cycles the tables allow,
wait masks that cover every variable-latency dependency, legal yield encodings.

Every instruction starts at one cycle (barriers and variable-latency ops keep the
compiler's stall, which also covers their own minimum-wait needs). The scheduler's own model
(reorder.moves.distances) then places stalls and waits, first position first, from the latency
tables and the instructions' read and write sets: where a consumer would issue before its
producer's latency has passed, the stall before it grows; where it reads a result still on a
scoreboard, it waits on that scoreboard. The verifier is asked for a verdict on the block so
placed (legality.verify.block_violations, Violation values, never message text); what it faults
at the first faulted position is learnt as a need of that position, and the block is planned
again, until the verdict is clean. A reuse flag keeps an operand for the instruction issued
next. A stall cut (`keep_reuse`: the words are the compiler's, the order is theirs) keeps every
flag whose successor is unchanged, so it costs no register-bank conflicts; any other new order
or renamed block has its flags cleared, since a flag may name an operand the new successor no
longer reads. After the block, the whole kernel is verified again and the block's tail is
lengthened while a successor block still sees a violation. Callers run `legality.verify` on
every result, over the whole written kernel (reorder/moves/__init__.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from legality.barriers import load_rules
from legality.latency import FRESH_SCOREBOARD_CYCLES, load_table
from legality.verify import Violation, block_violations, original_violations, verify_instructions
from reorder.base.errors import LegalityError
from reorder.moves.distances import Need, plan
from reorder.sass.control import ControlCode
from reorder.sass.model import Instruction


def _legal(ctrl: ControlCode) -> ControlCode:
    """Make stall/yield/reuse a legal usched_info combination without lowering the stall."""
    if ctrl.stall >= 12:
        return ctrl.with_(yield_bit=0, reuse=0)
    if ctrl.stall == 0:
        return ctrl.with_(yield_bit=0, reuse=0)
    return ctrl


def _initial(ins: Instruction, keep_stall: bool, keep_reuse: bool) -> Instruction:
    c = ins.ctrl if keep_reuse else ins.ctrl.with_(reuse=0)
    if not keep_stall and ins.known and not ins.is_barrier and not ins.is_variable_latency:
        c = c.with_(stall=1, yield_bit=c.yield_bit if c.stall else 1)
    return ins.with_ctrl(_legal(c))


def _shortfall(v: Violation) -> int:
    """The cycles a distance violation is short by (its required and provided are cycle counts)."""
    assert isinstance(v.required, int) and isinstance(v.provided, int), v.line()
    return v.required - v.provided


def _bump(order: list[Instruction], index: int, cycles: int, floor: int) -> bool:
    """Add `cycles` of stall before position index+1, spilling backwards past 15."""
    k = index
    while cycles > 0 and k >= floor:
        c = order[k].ctrl
        room = 15 - c.stall
        take = min(room, cycles)
        if take:
            order[k] = order[k].with_ctrl(_legal(c.with_(stall=c.stall + take)))
            cycles -= take
        k -= 1
    return cycles == 0


class _EntryShortfall(Exception):
    """The block's first instructions need more cycles than the predecessors leave."""

    def __init__(self, cycles: int) -> None:
        super().__init__(cycles)
        self.cycles = cycles


def schedule_block(
    instructions: tuple[Instruction, ...],
    start: int,
    end: int,
    new_order: Sequence[int],
    arch: int,
    keep_stalls: bool = False,
    keep_reuse: bool = False,
) -> tuple[Instruction, ...]:
    """Kernel instructions with block [start, end) replaced by `new_order` (indices into
    the block's original instructions, absolute) and its control codes recomputed.

    When an instruction moved to the top of the block needs more distance from a producer
    in a predecessor block, the predecessors' last stalls grow (an over-stall there, only
    slower) and the block is scheduled again.
    """
    for _ in range(8):
        try:
            return _schedule_once(instructions, start, end, new_order, arch, keep_stalls, keep_reuse)
        except _EntryShortfall as short:
            instructions = _lengthen_predecessors(instructions, start, short.cycles)
    raise LegalityError(f"cannot schedule block at {instructions[start].offset:#x}: predecessors too short")


def _lengthen_predecessors(instructions: tuple[Instruction, ...], start: int, cycles: int) -> tuple[Instruction, ...]:
    from reorder.analysis.cfg import basic_blocks, control_flow_graph

    ends = {b.start: b.end for b in basic_blocks(instructions)}
    out = list(instructions)
    for pred in control_flow_graph(instructions).predecessors(start):
        if not _bump(out, ends[pred] - 1, cycles, pred):
            raise LegalityError(f"cannot lengthen the block before {instructions[start].offset:#x}")
    return tuple(out)


def _schedule_once(
    instructions: tuple[Instruction, ...],
    start: int,
    end: int,
    new_order: Sequence[int],
    arch: int,
    keep_stalls: bool,
    keep_reuse: bool,
) -> tuple[Instruction, ...]:
    into_barrier = _into_kept_barrier(instructions, new_order, end, arch)
    base = [
        _initial(instructions[i], keep_stalls or k in into_barrier, keep_reuse and _same_successor(new_order, k, end))
        for k, i in enumerate(new_order)
    ]
    kernel = list(instructions)
    kernel[start:end] = _settled(base, instructions, start, arch)
    return _fix_tail(tuple(kernel), start, end, arch, instructions)


def _settled(
    base: list[Instruction], instructions: tuple[Instruction, ...], start: int, arch: int
) -> list[Instruction]:
    """Plan the block (reorder.moves.distances), ask the verifier for its verdict on it, learn
    what it faults at the first faulted position, plan again; until the verdict is clean. The
    plan places stalls first position first with every need it knows, so what is learnt late
    is placed as if it had been known from the start."""
    table = load_table(arch)
    position = {ins.offset: k for k, ins in enumerate(base)}
    learnt: dict[int, tuple[Need, ...]] = {}
    for _ in range(64 * len(base)):
        order = list(base)
        plan(order, table, lambda o, index, cycles: _bump(o, index, cycles, 0), learnt)
        found = block_violations(tuple(order), start, instructions, arch)
        if not found:
            return order
        j = min(position[v.consumer_offset] for v in found)
        first = [v for v in found if position[v.consumer_offset] == j]
        if j == 0 and all(isinstance(v.required, int) and isinstance(v.provided, int) for v in first):
            raise _EntryShortfall(max(_shortfall(v) for v in first))
        if not _learn(base, order, j, first, position, learnt):
            raise LegalityError(f"cannot schedule instruction at {order[j].offset:#x}", tuple(first))
    raise LegalityError(f"cannot schedule block at {base[0].offset:#x}: the verdicts did not settle")


def _into_kept_barrier(
    instructions: tuple[Instruction, ...], new_order: Sequence[int], end: int, arch: int
) -> set[int]:
    """Positions of the new order followed by a barrier that keeps its compiler-placed
    neighbours (legality.barriers): their stall, the cycles into the barrier, is kept."""
    rules = load_rules(arch)
    following = [instructions[i] for i in new_order[1:]] + ([instructions[end]] if end < len(instructions) else [])
    return {k for k, nxt in enumerate(following) if rules.keeps_neighbours(nxt)}


def _same_successor(new_order: Sequence[int], k: int, end: int) -> bool:
    """Whether the instruction at position k of the new order is followed by the same
    instruction as in the original (the block's last one by the next block's first)."""
    following = new_order[k + 1] if k + 1 < len(new_order) else end
    return following == new_order[k] + 1


def _learn(
    base: list[Instruction],
    order: list[Instruction],
    j: int,
    found: list[Violation],
    position: dict[int, int],
    learnt: dict[int, tuple[Need, ...]],
) -> bool:
    """Turn what the verdict faults at position j of the planned `order` into needs of j (or,
    for an untracked producer or an illegal encoding, into a change of `base`); False when
    nothing new was learnt. A producer inside the block gives a distance from its position, one
    before the block a distance from the block's first instruction."""
    issue_j = sum(ins.ctrl.stall for ins in order[:j])
    needs = list(learnt.get(j, ()))
    changed = False
    for v in found:
        inside = position.get(v.producer_offset)
        inside = inside if inside is not None and inside < j else None  # else: through the block's entry
        if v.kind == "encoding":
            fixed = base[j].with_ctrl(_legal(base[j].ctrl))
            changed |= fixed != base[j]
            base[j] = fixed
        elif v.kind == "scoreboard" and v.scoreboard is not None:
            short = FRESH_SCOREBOARD_CYCLES - v.elapsed if v.elapsed is not None else 0
            if inside is not None:
                need = Need(inside, FRESH_SCOREBOARD_CYCLES, 1 << v.scoreboard)
            else:
                need = Need(None, issue_j + max(short, 0), 1 << v.scoreboard)
            if need not in needs:
                needs.append(need)
        elif v.kind == "untracked":
            k = _track(order, j, v.producer_offset)
            if k is not None:
                base[k] = base[k].with_ctrl(base[k].ctrl.with_(wbar=order[k].ctrl.wbar))
                changed = True
        elif isinstance(v.required, int) and isinstance(v.provided, int) and j > 0:
            need = Need(inside, v.required) if inside is not None else Need(None, issue_j + v.required - v.provided)
            if need not in needs:
                needs.append(need)
    if len(needs) > len(learnt.get(j, ())):
        learnt[j] = tuple(needs)
        changed = True
    return changed


def _track(order: list[Instruction], j: int, producer_offset: int) -> int | None:
    """Give a variable-latency producer that had no scoreboard one, so its consumer can wait.

    The compiler left it untracked because a later op of the same queue covered it; the
    new order broke that. Counters make sharing a scoreboard safe (a wait on it then also
    waits for this op: only slower), so the consumer's own first waited scoreboard, or SB5,
    is taken.
    """
    k = next((i for i in range(j) if order[i].offset == producer_offset), None)
    if k is None or order[k].ctrl.wbar != 7:
        return None
    waited = [b for b in range(6) if order[j].ctrl.waits_on(b)]
    order[k] = order[k].with_ctrl(order[k].ctrl.with_(wbar=waited[0] if waited else 5))
    return k


def _fix_tail(
    kernel: tuple[Instruction, ...], start: int, end: int, arch: int, original: tuple[Instruction, ...]
) -> tuple[Instruction, ...]:
    """Lengthen the block's last stalls while instructions after it see a new violation:
    one caused by a producer inside the block, or one whose path runs through the block
    (fewer cycles inside it shorten a dependency from before it to after it)."""
    inside = {ins.offset for ins in kernel[start:end]}
    already = {v.key for v in original_violations(original, arch)}  # not this block's doing
    for _ in range(32):
        bad = [
            v
            for v in verify_instructions(kernel, arch)
            if v.consumer_offset not in inside
            and v.key not in already
            and isinstance(v.required, int)
            and isinstance(v.provided, int)
        ]
        if not bad:
            return kernel
        unfixable = [v for v in bad if v.kind == "untracked"]
        if unfixable:
            raise LegalityError(
                f"cannot schedule block at {kernel[start].offset:#x}: {unfixable[0].line()} (the new order "
                "put the op whose scoreboard covered it first, and no stall makes an untracked result ready)",
                tuple(unfixable),
            )
        order = list(kernel)
        if not _bump(order, end - 1, max(_shortfall(v) for v in bad), start):
            break
        kernel = tuple(order)
    return kernel
