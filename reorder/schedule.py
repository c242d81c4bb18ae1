"""Control codes for a new order of a block: the fewest stall cycles the tables allow,
wait masks that cover every variable-latency dependency, legal yield encodings.

The schedule is built by walking the block with the verifier's state machine in repair
mode: every instruction starts at one cycle (barriers and variable-latency ops keep the
compiler's stall, which also covers their own minimum-wait needs); where a consumer
would issue before its producer's latency has passed, the stall before it grows; where
it reads a result still on a scoreboard, it waits on that scoreboard (and the stall
before it grows until a fresh scoreboard has had its extra cycle). Reuse flags are
cleared in a rescheduled block (they name the previous instruction's operands). After
the block, the whole kernel is verified again and the block's tail is lengthened while a
successor block still sees a violation. The independent check is `legality.verify`,
run by the callers on every result.
"""

from __future__ import annotations

from collections.abc import Sequence

from legality.latency import LatencyTable, load_table
from legality.verify import FRESH_SCOREBOARD_CYCLES, State, Violation, block_entry_states, step, verify_instructions
from reorder.control import ControlCode
from reorder.errors import LegalityError
from reorder.sass import Instruction


def _legal(ctrl: ControlCode) -> ControlCode:
    """Make stall/yield/reuse a legal usched_info combination without lowering the stall."""
    if ctrl.stall >= 12:
        return ctrl.with_(yield_bit=0, reuse=0)
    if ctrl.stall == 0:
        return ctrl.with_(yield_bit=0, reuse=0)
    return ctrl


def _initial(ins: Instruction, keep_stall: bool) -> Instruction:
    c = ins.ctrl.with_(reuse=0)
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


def schedule_block(instructions: tuple[Instruction, ...], start: int, end: int, new_order: Sequence[int],
                   arch: int, keep_stalls: bool = False) -> tuple[Instruction, ...]:
    """Kernel instructions with block [start, end) replaced by `new_order` (indices into
    the block's original instructions, absolute) and its control codes recomputed."""
    table = load_table(arch)
    order = [_initial(instructions[i], keep_stalls) for i in new_order]
    entry = block_entry_states(instructions, arch)[start]
    state = entry
    for j in range(len(order)):
        for _ in range(64):
            found: list[Violation] = []
            step(state, order[j], table, found)
            if not found:
                break
            if not _repair(order, j, found, state):
                raise LegalityError(f"cannot schedule instruction at {order[j].offset:#x}", tuple(found))
            state = _replay(entry, order[:j], table)  # stalls before j may have grown
        state = step(state, order[j], table, [])
    kernel = list(instructions)
    kernel[start:end] = order
    return _fix_tail(tuple(kernel), start, end, arch)


def _replay(entry: State, prefix: list[Instruction], table: LatencyTable) -> State:
    state = entry
    for ins in prefix:
        state = step(state, ins, table, [])
    return state


def _repair(order: list[Instruction], j: int, found: list[Violation], state: State) -> bool:
    ins = order[j]
    changed = False
    for v in found:
        if v.kind == "encoding":
            order[j] = ins.with_ctrl(_legal(ins.ctrl))
            changed = True
        elif v.kind in ("scoreboard",) and isinstance(v.required, str) and v.required.startswith("wait on SB"):
            sb = int(v.required[len("wait on SB"):])
            order[j] = order[j].with_ctrl(order[j].ctrl.with_(wait=order[j].ctrl.wait | 1 << sb))
            elapsed = _elapsed(state, v.resource, sb)
            if elapsed is not None and elapsed < FRESH_SCOREBOARD_CYCLES and j > 0:
                _bump(order, j - 1, FRESH_SCOREBOARD_CYCLES - elapsed, 0)
            changed = True
        elif isinstance(v.required, int) and isinstance(v.provided, int) and j > 0:
            changed |= _bump(order, j - 1, v.required - v.provided, 0)
    return changed


def _elapsed(state: State, resource: str, sb: int) -> int | None:
    for table in (state.writes, state.reads):
        for p in table.get(resource, ()):
            if p.sb == sb:
                return p.elapsed
    return None


def _fix_tail(kernel: tuple[Instruction, ...], start: int, end: int, arch: int) -> tuple[Instruction, ...]:
    """Lengthen the block's last stalls while instructions after it see a violation
    caused by a producer inside the block."""
    inside = {ins.offset for ins in kernel[start:end]}
    for _ in range(32):
        bad = [v for v in verify_instructions(kernel, arch)
               if v.producer_offset in inside and v.consumer_offset not in inside
               and isinstance(v.required, int) and isinstance(v.provided, int)]
        if not bad:
            return kernel
        order = list(kernel)
        if not _bump(order, end - 1, max(v.required - v.provided for v in bad), start):
            break
        kernel = tuple(order)
    return kernel
