"""Register liveness over the CFG: which registers may still be read after each block.

Standard backward dataflow over the read/write sets. An unknown instruction, a call or a
return is taken to read every register (nothing it might need is considered dead).
"""

from __future__ import annotations

from reorder.analysis.cfg import basic_blocks, control_flow_graph
from reorder.sass.model import Instruction

_ALL = frozenset(f"R{i}" for i in range(255))


def _block_use_def(instructions, block) -> tuple[frozenset[str], frozenset[str]]:
    use: set[str] = set()
    defined: set[str] = set()
    for i in block.indices():
        ins = instructions[i]
        reads = _ALL if (not ins.known or ins.base in ("CALL", "RET", "BRX", "JMX")) else ins.access.reads
        use |= set(reads) - defined
        if not ins.guard:
            defined |= ins.access.writes
    return frozenset(use), frozenset(defined)


def live_out(instructions: tuple[Instruction, ...]) -> dict[int, frozenset[str]]:
    """block start index -> registers live at the block's end."""
    use_def = {b.start: _block_use_def(instructions, b) for b in basic_blocks(instructions)}
    return solve_live_out(instructions, use_def)


def solve_live_out(
    instructions: tuple[Instruction, ...], use_def: dict[int, tuple[frozenset[str], frozenset[str]]]
) -> dict[int, frozenset[str]]:
    """Backward liveness to a fixed point over the CFG, from each block's (upward-exposed
    reads, definitions): block start index -> names live at the block's end."""
    blocks = basic_blocks(instructions)
    cfg = control_flow_graph(instructions)
    live_in: dict[int, frozenset[str]] = {b.start: frozenset() for b in blocks}
    out: dict[int, frozenset[str]] = {b.start: frozenset() for b in blocks}
    changed = True
    while changed:
        changed = False
        for b in reversed(blocks):
            new_out = frozenset().union(*(live_in[s] for s in cfg.successors(b.start)))
            use, defined = use_def[b.start]
            new_in = use | (new_out - defined)
            if new_out != out[b.start] or new_in != live_in[b.start]:
                out[b.start], live_in[b.start] = new_out, new_in
                changed = True
    return out
