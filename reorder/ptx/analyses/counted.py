"""Loops whose iterations can be named ahead of time: the shape the loop moves rewrite.

A loop moves' legality rests on one question: will iteration i + k run, and what address
does its load read? Both are answerable when every way out of the loop is decided by a
predicate computed from *induction variables* (a register whose only write in the loop is
`add x, x, step`, the step an immediate or a register the loop does not write) and from
registers the loop does not write: then iteration k + 1 runs exactly when iteration k ran
and none of its exits was taken, and the exit predicates of iteration i + k are computed
by the same instructions with the inductions advanced k steps (reorder.ptx.moves.shift). A loop
with an exit decided by loaded data (find_index's scan: break on the first match) is
*early-exit*: which iterations run is not known before their loads return, so a move may
only run the next iterations' loads speculatively, predicated by the loop's bound exits
(in bounds), and only when asked to.

Taken only for the shape nvcc and Triton emit: the loop's blocks contiguous, the header
first, one latch last ending in `@p bra HEADER`, entered only by falling into the header
from the block before it, no inner loop, no jump table, no `{ }` scope crossing its bounds,
every exit a guarded `bra` in a block that runs on every iteration.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reorder.ptx.analyses.analysis import Analysis
from reorder.ptx.analyses.cfg import EXIT, Loop

_IMMEDIATE = re.compile(r"-?(0[xX][0-9a-fA-F]+|\d+)")
_STEPPING = frozenset({"add", "sub"})
_INTEGER = frozenset({("s32",), ("u32",), ("s64",), ("u64",)})  # wrapping adds: x + k*s is k adds of s


@dataclass(frozen=True, slots=True)
class Induction:
    """`x = x + step` (or `- step`) once per iteration: the update's statement, its opcode
    ('add.s32'), the step as written (an immediate or an invariant register)."""

    register: str
    update: int
    opcode: str
    step: str
    negated: bool

    @property
    def immediate(self) -> int | None:
        return int(self.step, 0) * (-1 if self.negated else 1) if _IMMEDIATE.fullmatch(self.step) else None


@dataclass(frozen=True, slots=True)
class Exit:
    """A way out: the branch deciding it, whether the loop is left when the branch is taken
    (False for the latch: left by falling through), and whether its predicate is computed
    from inductions and invariants only (a bound exit) or from loaded data."""

    branch: int
    taken_leaves: bool
    bound: bool


@dataclass(frozen=True, slots=True)
class CountedLoop:
    """A loop in the supported shape (see the module docstring); indices are statements."""

    label: str
    loop: Loop
    start: int  # the header block's first statement (the prologue goes before it)
    end: int  # past the latch block's last statement
    latch_branch: int
    inductions: tuple[Induction, ...]
    exits: tuple[Exit, ...]

    @property
    def early_exit(self) -> bool:
        return any(not e.bound for e in self.exits)

    def induction(self, register: str) -> Induction | None:
        return next((x for x in self.inductions if x.register == register), None)

    def holds(self, analysis: Analysis, i: int) -> bool:
        return analysis.cfg.block_of[i] in self.loop.blocks and self.start <= i < self.end


def loop_labels(analysis: Analysis) -> list[str]:
    """The header label of every loop, outermost first."""
    blocks = analysis.cfg.blocks
    return [blocks[lp.header].labels[0] for lp in analysis.cfg.loops if blocks[lp.header].labels]


def shape_refusal(analysis: Analysis, loop: Loop) -> str | None:
    """Why a loop is not in the supported shape, or None."""
    cfg, body = analysis.cfg, analysis.function.body
    blocks = sorted(loop.blocks)
    if blocks != list(range(blocks[0], blocks[-1] + 1)) or blocks[0] != loop.header:
        return "its blocks are not laid out contiguously from the header"
    if any(other.header != loop.header and other.blocks <= loop.blocks for other in cfg.loops):
        return "it holds an inner loop"
    if loop.latches != {blocks[-1]}:
        return "it has more than one latch, or the latch is not its last block"
    last = cfg.blocks[blocks[-1]].terminator
    ins = body[last].ins if last is not None else None
    if ins is None or ins.base != "bra" or ins.guard is None or ins.operands[-1] not in cfg.blocks[loop.header].labels:
        return "its last block does not end with a conditional branch back to the header"
    outside = [p for p in cfg.graph.predecessors(loop.header) if p not in loop.blocks]
    before = loop.header - 1
    if (
        outside != [before]
        or cfg.graph.edges[before, loop.header]["cond"] is not None
        or _branches_to(analysis, before, loop.header)
    ):
        return "it is not entered only by falling into its header from the block before it"
    start, end = cfg.blocks[blocks[0]].start, cfg.blocks[blocks[-1]].end
    if (
        analysis.depth[start] != 0
        or any(analysis.depth[i] != 0 for i in range(start, end))
        or any(s.kind in ("open", "close") for s in body[start:end])
    ):
        return "a { } scope lies in it"
    for b in blocks:
        term = cfg.blocks[b].terminator
        if term is not None and body[term].ins.base in ("brx", "ret", "exit", "trap"):
            return f"it holds a {body[term].ins.base} (line {body[term].ident})"
    for b in blocks:
        for s in cfg.graph.successors(b):
            if s in loop.blocks:
                continue
            if s == EXIT or cfg.graph.edges[b, s]["cond"] is None:
                return f"block {b} leaves it unconditionally"
            if not cfg.dominates(b, blocks[-1]):
                return (
                    f"an exit (line {body[cfg.blocks[b].terminator].ident}) is in a block that does not run "
                    "on every iteration"
                )
    return None


def _branches_to(analysis: Analysis, block: int, target: int) -> bool:
    term = analysis.cfg.blocks[block].terminator
    ins = analysis.function.body[term].ins if term is not None else None
    return ins is not None and ins.base == "bra" and ins.operands[-1] in analysis.cfg.blocks[target].labels


def exit_branches(analysis: Analysis, loop: Loop) -> list[tuple[int, bool]]:
    """(branch statement, taken edge leaves) for every exit edge, in program order."""
    cfg, out = analysis.cfg, []
    for b in sorted(loop.blocks):
        for s in cfg.graph.successors(b):
            if s not in loop.blocks:
                branch, held = cfg.graph.edges[b, s]["cond"]
                out.append((branch, held))
    return sorted(set(out))


def precedes(analysis: Analysis, a: int, b: int) -> bool:
    """Statement a runs before statement b in every iteration that runs b (same loop body)."""
    cfg = analysis.cfg
    ba, bb = cfg.block_of[a], cfg.block_of[b]
    return a < b if ba == bb else cfg.dominates(ba, bb)


def inductions(analysis: Analysis, loop: Loop) -> tuple[Induction, ...]:
    """Registers written once in the loop, by `add x, x, step` on a 32- or 64-bit integer
    (wrapping, so k steps are one add of k * step; not a float add, not `.cc` or `.sat`), in a
    block that runs on every iteration, unguarded, the step an immediate or a register the
    loop does not write. nvcc also steps a pointer through a copy, `add t, x, 16` and later
    `mov x, t` (normalize_weights' unrolled CDF loop): x is then an induction updated at the
    mov, when t is written once, by that add, which runs before the mov in every iteration."""
    cfg, body, effects = analysis.cfg, analysis.function.body, analysis.effects
    latch = max(loop.blocks)
    inside = [i for b in sorted(loop.blocks) for i in cfg.blocks[b].instructions]
    written: dict[str, list[int]] = {}
    for i in inside:
        for reg in effects[i].defs:
            written.setdefault(reg, []).append(i)

    def stepping(i: int, reg: str) -> tuple[str, bool] | None:
        """(step, negated) when statement i is an every-iteration `add ?, reg, step`."""
        ins = body[i].ins
        if (
            ins.base not in _STEPPING
            or ins.modifiers not in _INTEGER
            or ins.guard
            or effects[i].kind != "pure"
            or len(ins.operands) != 3
            or not cfg.dominates(cfg.block_of[i], latch)
        ):
            return None
        a, b = ins.operands[1], ins.operands[2]
        step = b if a == reg else (a if b == reg and ins.base == "add" else None)
        if step is None or not (_IMMEDIATE.fullmatch(step) or (step.startswith("%") and step not in written)):
            return None
        return step, ins.base == "sub"

    out = []
    for reg, writers in sorted(written.items()):
        if len(writers) != 1:
            continue
        i = writers[0]
        ins = body[i].ins
        if ins.operands and ins.operands[0] == reg and (found := stepping(i, reg)) is not None:
            out.append(Induction(reg, i, ins.opcode, found[0], found[1]))
        elif (copied := _copied_step(analysis, i, reg, written, latch, stepping)) is not None:
            out.append(copied)
    return tuple(out)


def _copied_step(analysis: Analysis, i: int, reg: str, written: dict[str, list[int]], latch: int, stepping):
    """`mov reg, t` at statement i, t written once in the loop by `add t, reg, step` before it."""
    cfg, body, effects = analysis.cfg, analysis.function.body, analysis.effects
    ins = body[i].ins
    if (
        ins.base != "mov"
        or ins.guard
        or effects[i].kind != "pure"
        or len(ins.operands) != 2
        or ins.operands[0] != reg
        or not cfg.dominates(cfg.block_of[i], latch)
    ):
        return None
    temp = ins.operands[1]
    adds = written.get(temp, [])
    if len(adds) != 1 or tuple(body[adds[0]].ins.operands[:1]) != (temp,):
        return None
    found = stepping(adds[0], reg)
    same_width = ins.modifiers[-1:] and body[adds[0]].ins.modifiers[-1][1:] == ins.modifiers[-1][1:]
    if found is None or not same_width or not precedes(analysis, adds[0], i):
        return None
    return Induction(reg, i, body[adds[0]].ins.opcode, found[0], found[1])
