"""Static cost model: predicted issue cycles of one warp walking each basic block once.

Fixed-latency work costs its stall counts. A wait on a scoreboard costs the time until
the producer's result is assumed back (per-opcode latency guesses below, from the
reference's pointer-chase measurements on an H200: L2 hit ~290 cycles, shared ~29,
MUFU ~17). Loads issued together overlap; that is what makes load batching show up here.
Every figure from this model is a prediction, never a measurement, and is labelled so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from reorder.analysis.cfg import basic_blocks, control_flow_graph
from reorder.analysis.loops import loop_bodies
from reorder.sass.model import Instruction

NOTIONAL_TRIPS = 8  # original iterations a loop is assumed to run, for loop_aware_cycles

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
    return _issue(instructions, range(start, end), _State(), 0)


@dataclass
class _State:
    """What one pass leaves the next: scoreboard -> cycle when every op on it is back, and
    (with tensor-core ops modelled) when each pending HGMMA group completes and when the
    tensor core is free again."""

    ready_at: dict[int, int] = field(default_factory=dict)
    groups: list[int] = field(default_factory=list)
    pipe_free: int = 0


# Warpgroup MMA (sm_90), assumed like the load latencies above: a 64x64x16 fp16 HGMMA keeps the
# SM's tensor cores busy ~32 cycles (one warpgroup: 131 kFLOP at ~4 kFLOP/cycle/SM, the H200's
# dense fp16 rate over 132 SMs at 1.98 GHz), scaled by its N and K; its result is back 96 cycles
# after it starts. `WARPGROUP.DEPBAR.LE gsb0, N` waits until at most N groups are pending.
GMMA_CYCLES_64X64X16 = 32
GMMA_LATENCY = 96
_GMMA_SHAPE = re.compile(r"GMMA\.(\d+)x(\d+)x(\d+)")
_GMMA_WAIT = re.compile(r"WARPGROUP\.DEPBAR\.LE\s+gsb0,\s*(0x[0-9a-fA-F]+|\d+)")


def _tensor_core(ins: Instruction, state: _State, t: int) -> int:
    """The issue cycle after modelling `ins` on the tensor core (HGMMA, its waits); `t` unchanged
    for any other instruction."""
    shape = _GMMA_SHAPE.search(ins.text) if "GMMA" in ins.base else None
    if shape is not None:
        m, n, k = (int(x) for x in shape.groups())
        start = max(t, state.pipe_free)
        state.pipe_free = start + GMMA_CYCLES_64X64X16 * m * n * k // (64 * 64 * 16)
        state.groups.append(state.pipe_free + GMMA_LATENCY)
        return t
    wait = _GMMA_WAIT.search(ins.text) if ins.base == "WARPGROUP" else None
    if wait is not None:
        keep = int(wait.group(1), 0)
        state.groups.sort()
        while len(state.groups) > keep:
            t = max(t, state.groups.pop(0))
    return t


def _issue(
    instructions: tuple[Instruction, ...], indices: Iterable[int], state: _State, t: int, tensor: bool = False
) -> int:
    """Issue `indices` in order from cycle `t`; `state` is updated in place, so a caller can
    carry it from one pass to the next; `tensor` models the tensor-core ops too."""
    ready_at = state.ready_at
    for i in indices:
        ins = instructions[i]
        c = ins.ctrl
        if tensor:
            t = _tensor_core(ins, state, t)
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


def loop_aware_cycles(instructions: tuple[Instruction, ...], per_trip: int = 1, trips: int = NOTIONAL_TRIPS) -> float:
    """Predicted cycles of one warp when every loop runs `trips` original iterations: blocks
    outside loops once, each loop's body at its steady state (issued twice in a row with the
    scoreboards carried over, the second pass counted), `trips / per_trip` times, where a
    trip of the loop covers `per_trip` original iterations (a loop laid out k times by an
    unroll or a prefetch of distance k). Why: kernel_cycles counts a loop body once, so a
    move that lays a body out four times looks four times slower to it, and a load issued
    one trip ahead looks free; carried over a trip, the wait it causes is what remains of
    the load's latency. A prediction for ranking builds of one kernel, never a time."""
    blocks = basic_blocks(instructions)
    if not blocks:
        return 0.0
    graph = control_flow_graph(instructions)
    loops = loop_bodies(graph)
    in_loops = set().union(*loops.values()) if loops else set()
    outside = (b for b in blocks if b.start not in in_loops)
    total = float(sum(_issue(instructions, b.indices(), _State(), 0, tensor=True) for b in outside))
    for body in loops.values():
        order = [i for start in sorted(body) for i in graph.nodes[start]["block"].indices()]
        state = _State()
        first = _issue(instructions, order, state, 0, tensor=True)
        second = _issue(instructions, order, state, first, tensor=True) - first
        total += second * trips / max(per_trip, 1)
    return total
