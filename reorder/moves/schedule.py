"""Control codes for a new order of a block: the fewest stall cycles the tables allow,
wait masks that cover every variable-latency dependency, legal yield encodings.

The schedule is built by walking the block with the verifier's state machine in repair
mode: every instruction starts at one cycle (barriers and variable-latency ops keep the
compiler's stall, which also covers their own minimum-wait needs); where a consumer
would issue before its producer's latency has passed, the stall before it grows; where
it reads a result still on a scoreboard, it waits on that scoreboard (and the stall
before it grows until a fresh scoreboard has had its extra cycle). A reuse flag keeps an
operand for the instruction issued next. A stall cut (`keep_reuse`: the words are the
compiler's, the order is theirs) keeps every flag whose successor is unchanged, so it
costs no register-bank conflicts; any other new order or renamed block has its flags
cleared, since a flag may name an operand the new successor no longer reads. After
the block, the whole kernel is verified again and the block's tail is lengthened while a
successor block still sees a violation. Callers run `legality.verify` on every result
(over the whole written kernel); it shares this walk's state machine, so it is a check of
the result, not a second model of the hardware (reorder/moves/__init__.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from legality.barriers import load_rules
from legality.latency import LatencyTable, load_table
from legality.verify import (
    FRESH_SCOREBOARD_CYCLES,
    State,
    Violation,
    block_entry_states,
    original_violations,
    step,
    verify_instructions,
)
from reorder.sass.control import ControlCode
from reorder.base.errors import LegalityError
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
    table = load_table(arch)
    into_barrier = _into_kept_barrier(instructions, new_order, end, arch)
    order = [
        _initial(instructions[i], keep_stalls or k in into_barrier, keep_reuse and _same_successor(new_order, k, end))
        for k, i in enumerate(new_order)
    ]
    entry = block_entry_states(instructions, arch)[start]
    state = entry
    states, stepped = [entry], []  # states[k]: before position k, having stepped stepped[:k]
    for j in range(len(order)):
        short = _fresh_wait_shortfall(state, order[j])
        if short and j == 0:
            raise _EntryShortfall(short)
        if short:
            _bump(order, j - 1, short, 0)
            state = _replayed(states, stepped, order, j, table)
        for _ in range(64):
            found: list[Violation] = []
            step(state, order[j], table, found)
            if not found:
                break
            if j == 0 and all(isinstance(v.required, int) and isinstance(v.provided, int) for v in found):
                raise _EntryShortfall(max(v.required - v.provided for v in found))
            if not _repair(order, j, found, state):
                raise LegalityError(f"cannot schedule instruction at {order[j].offset:#x}", tuple(found))
            state = _replayed(states, stepped, order, j, table)  # stalls or scoreboards before j may have changed
        state = step(state, order[j], table, [])
        states.append(state)
        stepped.append(order[j])
    kernel = list(instructions)
    kernel[start:end] = order
    return _fix_tail(tuple(kernel), start, end, arch, instructions)


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


def _fresh_wait_shortfall(state: State, ins: Instruction) -> int:
    """Cycles missing before `ins` for each of its waits to see the scoreboards it waits on:
    a wait issued less than FRESH_SCOREBOARD_CYCLES after a producer does not cover it."""
    mask = ins.ctrl.wait
    elapsed = [
        p.elapsed
        for table in (state.writes, state.reads)
        for pend in table.values()
        for p in pend
        if p.sb >= 0 and mask >> p.sb & 1
    ]
    return max([FRESH_SCOREBOARD_CYCLES - e for e in elapsed if e < FRESH_SCOREBOARD_CYCLES], default=0)


def _replayed(
    states: list[State], stepped: list[Instruction], order: list[Instruction], j: int, table: LatencyTable
) -> State:
    """The state before position j of `order`, stepped again only from the first position
    whose instruction a repair replaced (the states before it are still those of `order`)."""
    k = next((i for i in range(j) if stepped[i] is not order[i]), j)
    del states[k + 1 :]
    del stepped[k:]
    for i in range(k, j):
        states.append(step(states[i], order[i], table, []))
        stepped.append(order[i])
    return states[j]


def _repair(order: list[Instruction], j: int, found: list[Violation], state: State) -> bool:
    """Fix what the step before `order[j]` found. Every missing distance is counted from the
    same issue cycle, j's, so the stall before j grows once, by the largest shortfall (adding
    them up over-stalled: two producers 2 and 3 cycles short cost 5 cycles, not 3)."""
    ins = order[j]
    changed = False
    fresh_short = distance_short = 0
    for v in found:
        if v.kind == "encoding":
            order[j] = ins.with_ctrl(_legal(ins.ctrl))
            changed = True
        elif v.kind == "scoreboard" and v.scoreboard is not None:
            sb = v.scoreboard
            order[j] = order[j].with_ctrl(order[j].ctrl.with_(wait=order[j].ctrl.wait | 1 << sb))
            elapsed = _elapsed(state, v.resource, sb)
            if elapsed is not None and elapsed < FRESH_SCOREBOARD_CYCLES and j > 0:
                fresh_short = max(fresh_short, FRESH_SCOREBOARD_CYCLES - elapsed)
            changed = True
        elif v.kind == "untracked":
            changed |= _track(order, j, v.producer_offset)
        elif isinstance(v.required, int) and isinstance(v.provided, int) and j > 0:
            distance_short = max(distance_short, v.required - v.provided)
    if fresh_short or distance_short:  # (a fresh shortfall comes with a wait already added: changed)
        changed |= _bump(order, j - 1, max(fresh_short, distance_short), 0)
    return changed


def _track(order: list[Instruction], j: int, producer_offset: int) -> bool:
    """Give a variable-latency producer that had no scoreboard one, so its consumer can wait.

    The compiler left it untracked because a later op of the same queue covered it; the
    new order broke that. Counters make sharing a scoreboard safe (a wait on it then also
    waits for this op: only slower), so the consumer's own first waited scoreboard, or SB5,
    is taken.
    """
    k = next((i for i in range(j) if order[i].offset == producer_offset), None)
    if k is None or order[k].ctrl.wbar != 7:
        return False
    waited = [b for b in range(6) if order[j].ctrl.waits_on(b)]
    order[k] = order[k].with_ctrl(order[k].ctrl.with_(wbar=waited[0] if waited else 5))
    return True


def _elapsed(state: State, resource: str, sb: int) -> int | None:
    for table in (state.writes, state.reads):
        for p in table.get(resource, ()):
            if p.sb == sb:
                return p.elapsed
    return None


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
        if not _bump(order, end - 1, max(v.required - v.provided for v in bad), start):
            break
        kernel = tuple(order)
    return kernel
