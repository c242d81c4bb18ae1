"""Static cost model: predicted issue cycles of one warp walking each basic block once.

Fixed-latency work costs its stall counts. A wait on a scoreboard costs the time until
the producer's result is assumed back (per-opcode latency guesses below, from the
reference's pointer-chase measurements on an H200: L2 hit ~290 cycles, shared ~29,
MUFU ~17). Loads issued together overlap; that is what makes load batching show up here.
Every figure from this model is a prediction, never a measurement, and is labelled so.
"""

from __future__ import annotations

from reorder.analysis.cfg import basic_blocks
from reorder.sass.model import Instruction

ASSUMED_LATENCY = {
    "LDG": 300,
    "LD": 300,
    "ATOMG": 400,
    "ATOM": 400,
    "LDL": 40,
    "LDS": 30,
    "LDSM": 30,
    "ATOMS": 50,
    "LDC": 20,
    "MUFU": 17,
    "S2R": 20,
    "S2UR": 20,
    "SHFL": 25,
}
DEFAULT_LATENCY = 20


def block_cycles(instructions: tuple[Instruction, ...], start: int, end: int) -> int:
    """Cycles from the block's first issue to the issue after its last instruction."""
    ready_at: dict[int, int] = {}  # scoreboard -> cycle when every op on it is back
    t = 0
    for ins in instructions[start:end]:
        c = ins.ctrl
        for sb in range(6):
            if c.waits_on(sb) and sb in ready_at:
                t = max(t, ready_at.pop(sb))
        if c.wbar != 7:
            latency = ASSUMED_LATENCY.get(ins.base, DEFAULT_LATENCY)
            ready_at[c.wbar] = max(ready_at.get(c.wbar, 0), t + latency)
        t += max(c.stall, 1)
    return t


def kernel_cycles(instructions: tuple[Instruction, ...]) -> int:
    """Sum of predicted block cycles (each block once: a shape measure, not a trip count)."""
    return sum(block_cycles(instructions, b.start, b.end) for b in basic_blocks(instructions))


def stall_cycles(instructions: tuple[Instruction, ...]) -> int:
    return sum(ins.ctrl.stall for ins in instructions)
