"""What integer values a register can hold at each block's entry: an interval analysis over the
CFG for the few forms thread indices are built with.

A thread index, a lane or a block index is never negative and has a known bound (CUDA's limits);
shifts, scaled copies and sums of such values keep a bound. That is what lets a check prove that
`col < n` cannot hold once `n < 1` is known (legality.prefetch). Anything else is unknown: an op
outside the few below, a guarded write merged with an unknown value, a loop that keeps growing a
value (after `ROUNDS` visits of a block, a register whose range still changes there is unknown).
"""

from __future__ import annotations

import re
from functools import lru_cache

from reorder.analysis.cfg import basic_blocks, control_flow_graph
from reorder.sass.model import Instruction

INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
ROUNDS = 4
# CUDA's limits: 1024 threads per block, 64 in z; grid x up to 2^31 - 1, y and z up to 65535.
SPECIAL_RANGES = {
    "SR_TID.X": (0, 1023),
    "SR_TID.Y": (0, 1023),
    "SR_TID.Z": (0, 63),
    "SR_CTAID.X": (0, INT_MAX),
    "SR_CTAID.Y": (0, 65535),
    "SR_CTAID.Z": (0, 65535),
    "SR_LANEID": (0, 31),
}

Range = tuple[int, int]


def combine(opcode: str, r: list[Range]) -> Range | None:
    """The range of an op's result from its sources' ranges, for the forms it knows."""
    out: Range | None = None
    if opcode == "MOV" and len(r) == 1:
        out = r[0]
    elif (opcode == "IADD3" and len(r) == 3) or (opcode == "VIADD" and len(r) == 2):
        out = (sum(x[0] for x in r), sum(x[1] for x in r))
    elif opcode in ("SHF.L.U32", "IMAD.SHL.U32") and len(r) == 3 and r[1][0] == r[1][1] and r[2] == (0, 0):
        k = r[1][0]
        factor = (1 << k) if opcode == "SHF.L.U32" and 0 <= k < 32 else k if opcode == "IMAD.SHL.U32" else -1
        if r[0][0] >= 0 and factor >= 0:
            out = (r[0][0] * factor, r[0][1] * factor)
    if out is None or out[0] < INT_MIN or out[1] > INT_MAX:
        return None
    return out


def constant(token: str) -> int | None:
    """An integer immediate (or RZ), else None."""
    if token == "RZ":
        return 0
    try:
        return int(token, 0)
    except ValueError:
        return None


def _source_range(token: str, regs: dict[str, Range]) -> Range | None:
    k = constant(token)
    if k is not None:
        return k, k
    if token in SPECIAL_RANGES:
        return SPECIAL_RANGES[token]
    return regs.get(token)


def call_clobbers(instructions: tuple[Instruction, ...]) -> frozenset[str]:
    """Registers a call may change: every register written from the first callee's entry on (the
    kernel's subroutines sit after its own code; the graph does not follow a call into them)."""
    from reorder.sass.grow import pc_target

    entries = [
        t // 16 for ins in instructions if ins.base == "CALL" for t in [pc_target(ins, ins.arch)] if t is not None
    ]
    if not entries:
        return frozenset()
    first = min(entries)
    return frozenset(w for ins in instructions[first:] for w in ins.access.writes) | {"R1"}


def step(ins: Instruction, regs: dict[str, Range]) -> None:
    """`regs` after `ins`: a known form writes its range; any other write makes its registers unknown."""
    written = [w for w in ins.access.writes if w.startswith("R") and w[1:].isdigit()]
    if not written:
        return
    result: Range | None = None
    tokens = [t.replace(".reuse", "") for t in ins.operands]
    if ins.known and len(written) == 1 and tokens and tokens[0] == written[0]:
        if ins.base == "S2R" and len(tokens) == 2:
            result = SPECIAL_RANGES.get(tokens[1])
        else:
            sources = [_source_range(t, regs) for t in tokens[1:]]
            if sources and all(s is not None for s in sources):
                result = combine(ins.opcode, sources)  # type: ignore[arg-type]
    for w in written:
        old = regs.get(w)
        if result is None or (ins.guard and old is None):
            regs.pop(w, None)
        elif ins.guard:
            regs[w] = (min(old[0], result[0]), max(old[1], result[1]))  # type: ignore[index]
        else:
            regs[w] = result


def _join(a: dict[str, Range], b: dict[str, Range]) -> dict[str, Range]:
    return {k: (min(a[k][0], b[k][0]), max(a[k][1], b[k][1])) for k in a.keys() & b.keys()}


def _forward(instructions: tuple[Instruction, ...], step_into, join, widen: bool) -> dict[int, dict]:
    """block start index -> what `step_into` (one instruction's effect on a register -> fact dict)
    knows at the block's entry, merged over predecessors by `join`, a call forgetting what its
    callee may write. With `widen`, after ROUNDS visits of a block a fact that still changes there
    is dropped (an interval growing round a loop)."""
    blocks = {b.start: b for b in basic_blocks(instructions)}
    cfg = control_flow_graph(instructions)
    entry: dict[int, dict | None] = dict.fromkeys(blocks)
    entry[0] = {}
    visits = dict.fromkeys(blocks, 0)
    work = [0]
    clobbers = call_clobbers(instructions)
    while work:
        start = work.pop(0)
        visits[start] += 1
        regs = dict(entry[start] or {})
        for i in blocks[start].indices():
            if instructions[i].base == "CALL":
                for r in clobbers or list(regs):
                    regs.pop(r, None)
            else:
                step_into(instructions[i], regs)
        for nxt in cfg.successors(start) if start in cfg else ():
            before = entry[nxt]
            merged = regs if before is None else join(before, regs)
            if widen and visits[nxt] >= ROUNDS and before is not None:
                merged = {k: v for k, v in merged.items() if before.get(k) == v}
            if merged != before:
                entry[nxt] = merged
                if nxt not in work:
                    work.append(nxt)
    return {s: dict(v or {}) for s, v in entry.items()}


@lru_cache(maxsize=16)
def entry_ranges(instructions: tuple[Instruction, ...]) -> dict[int, dict[str, Range]]:
    """block start index -> {register: (low, high)} known at the block's entry (absent: unknown)."""
    return _forward(instructions, step, _join, widen=True)


@lru_cache(maxsize=16)
def entry_constants(instructions: tuple[Instruction, ...]) -> dict[int, dict[str, tuple[str, int]]]:
    """block start index -> {register: (constant-bank operand, word)} that the register surely
    holds at the block's entry: loaded by an LDC / ULDC of a fixed address, or copied from one
    that was, on every path (a must-analysis: paths that disagree know nothing)."""
    return _forward(instructions, _constant_step, lambda a, b: {k: v for k, v in a.items() if b.get(k) == v}, False)


def constant_operand(ins: Instruction) -> str | None:
    """The constant-bank word an `LDC` / `ULDC` of a fixed address reads (`c[0x0][0x228]`; a
    zero register index read as address 0), else None."""
    tokens = [t.replace(".reuse", "") for t in ins.operands]
    if ins.base not in ("LDC", "ULDC") or len(tokens) != 2 or not re.fullmatch(r"U?R\d+", tokens[0]):
        return None
    bank = tokens[1].replace("][RZ]", "][0x0]")
    return bank if re.fullmatch(r"c\[0x[0-9a-f]+\]\[0x[0-9a-f]+\]", bank) else None


def _constant_step(ins: Instruction, regs: dict[str, tuple[str, int]]) -> None:
    tokens = [t.replace(".reuse", "") for t in ins.operands]
    known: dict[str, tuple[str, int]] = {}
    bank = constant_operand(ins) if ins.known and not ins.guard else None
    if bank is not None:
        prefix = "UR" if tokens[0].startswith("UR") else "R"
        base = int(tokens[0][len(prefix) :])
        known = {w: (bank, int(w[len(prefix) :]) - base) for w in ins.access.writes if w.startswith(prefix)}
    elif ins.known and not ins.guard and ins.opcode == "MOV" and len(tokens) == 2 and tokens[1] in regs:
        known[tokens[0]] = regs[tokens[1]]
    for w in ins.access.writes:
        regs.pop(w, None)
    regs.update(known)
