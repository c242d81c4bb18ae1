"""PeelLoop: run a loop's first iteration as a copy in front of the loop.

A load in a loop's body reads a different address each iteration, so it cannot leave the
loop; the first iteration's load can, once that iteration is a copy of its own outside the
loop (RMSNorm's normalise pass runs once per 4096 columns: at N = 4096 the copy is the
whole pass). PTX registers are variables, not SSA values, so the copy keeps the loop's
register names; only its labels are renamed. The copy ends where the loop's back edge was
with a branch out of the loop when the loop would stop, and otherwise falls into the loop,
which runs the remaining iterations unchanged.

Taken only for the shape nvcc and Triton emit: the loop's blocks contiguous, the header
first, the one latch last and ending in the back edge, no jump table, no `{ }` scope
crossing the loop's bounds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reorder.base.errors import NotApplicable
from reorder.ptx.analyses.analysis import Analysis, analysis_of
from reorder.ptx.analyses.cfg import Loop
from reorder.ptx.model.instruction import with_guard
from reorder.ptx.model.lexer import Piece
from reorder.ptx.model.model import Function, Module, Statement, make_statement


@dataclass(frozen=True, slots=True)
class PeelLoop:
    """Peel the first iteration of the loop whose header carries `header` (a label)."""

    kernel: str
    header: str
    name = "peel"

    @staticmethod
    def instances(module: Module, kernel: str) -> list[PeelLoop]:
        analysis = analysis_of(module.function(kernel))
        return [
            PeelLoop(kernel, analysis.cfg.blocks[loop.header].labels[0])
            for loop in analysis.cfg.loops
            if _refusal(analysis, loop) is None
        ]

    def apply(self, module: Module) -> Module:
        function = module.function(self.kernel)
        return module.with_function(peel(function, self.header))

    def describe(self) -> str:
        return f"peel:{self.header}"


def peel(function: Function, header: str) -> Function:
    """The function with the loop headed by `header` peeled once (NotApplicable when it cannot be)."""
    analysis = analysis_of(function)
    cfg = analysis.cfg
    loop = next((lp for lp in cfg.loops if header in cfg.blocks[lp.header].labels), None)
    if loop is None:
        raise NotApplicable(f"{function.name}: no loop is headed by {header}")
    refusal = _refusal(analysis, loop)
    if refusal:
        raise NotApplicable(f"{function.name}: loop {header}: {refusal}")
    first, last = cfg.blocks[loop.header], cfg.blocks[max(loop.blocks)]
    body = list(function.body)
    exit_label, body = _exit_label(function, body, last.end)
    inside = {label for b in sorted(loop.blocks) for label in cfg.blocks[b].labels}
    names = _fresh_names(function, inside)
    copy = [_copied(s, names, header) for s in body[first.start : last.end]]
    latch = last.terminator - first.start
    copy[latch] = _leave_when_done(copy[latch], exit_label)
    copy = [s for s in copy if s is not None]
    outside = [
        _retarget(s, header, names[header]) if not first.start <= i < last.end else s for i, s in enumerate(body)
    ]
    return function.with_body(outside[: first.start] + copy + outside[first.start :])


def _refusal(analysis: Analysis, loop: Loop) -> str | None:
    """Why this loop cannot be peeled, or None."""
    cfg = analysis.cfg
    blocks = sorted(loop.blocks)
    if blocks != list(range(blocks[0], blocks[-1] + 1)) or blocks[0] != loop.header:
        return "its blocks are not laid out contiguously from the header"
    if loop.latches != {blocks[-1]}:
        return "it has more than one latch, or the latch is not its last block"
    last = cfg.blocks[blocks[-1]].terminator
    ins = analysis.function.body[last].ins if last is not None else None
    if ins is None or ins.base != "bra" or ins.operands[-1] not in cfg.blocks[loop.header].labels:
        return "its last block does not end with the branch back to the header"
    for b in blocks:
        term = cfg.blocks[b].terminator
        if term is not None and analysis.function.body[term].ins.base == "brx":
            return "it holds a jump table"
    start, end = cfg.blocks[blocks[0]].start, cfg.blocks[blocks[-1]].end
    if (
        analysis.depth[start] != 0
        or any(analysis.depth[i] < 0 for i in range(start, end))
        or sum((s.kind == "open") - (s.kind == "close") for s in analysis.function.body[start:end]) != 0
    ):
        return "a { } scope crosses its bounds"
    return None


def _exit_label(function: Function, body: list[Statement], after: int) -> tuple[str, list[Statement]]:
    """The label of the statement after the loop (one is added when there is none)."""
    for s in body[after:]:
        if s.kind == "label":
            return s.label, body
        if s.kind == "instruction":
            break
    label = _unused(function, "$L__peel_exit")
    new = make_statement(Piece("label", f"{label}:\n", f"{label}:", True), f"{body[after - 1].ident}x")
    return label, body[:after] + [new] + body[after:]


def _fresh_names(function: Function, labels: set[str]) -> dict[str, str]:
    return {label: _unused(function, f"{label}_peel") for label in labels}


def _unused(function: Function, stem: str) -> str:
    """`stem`, or stem with a number, that no label or symbol of the function uses yet."""
    text = function.text
    name, n = stem, 0
    while re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", text):
        n += 1
        name = f"{stem}{n}"
    return name


def _copied(s: Statement, names: dict[str, str], header: str) -> Statement:
    """A statement of the peeled copy: labels renamed, branches inside the copy retargeted
    (a branch to the header stays: it starts the loop's second iteration)."""
    if s.kind == "label":
        text = _rename(s.text, s.label, names[s.label])
        return Statement(s.kind, text, f"{names[s.label]}:", s.alone, s.ident + "p", label=names[s.label])
    if s.kind == "instruction" and s.ins.base == "bra" and s.ins.operands[-1] in names and s.ins.operands[-1] != header:
        target = s.ins.operands[-1]
        return _restamp(s.retext(_rename(s.text, target, names[target])), s.ident + "p")
    return _restamp(s, s.ident + "p")


def _leave_when_done(latch: Statement, exit_label: str) -> Statement | None:
    """The copy's latch: `@p bra HEADER` becomes `@!p bra EXIT` (fall into the loop when p);
    an unconditional back edge is dropped (the copy falls into the loop)."""
    ins = latch.ins
    if ins.guard is None:
        return None
    flipped = ins.guard[1:] if ins.guard_negated else "!" + ins.guard
    text = _rename(with_guard(latch.text, flipped), ins.operands[-1], exit_label)
    return _restamp(latch.retext(text), latch.ident)


def _retarget(s: Statement, old: str, new: str) -> Statement:
    """A branch from outside the loop to its header enters the copy instead."""
    if s.kind == "instruction" and s.ins.base == "bra" and s.ins.operands[-1] == old:
        return _restamp(s.retext(_rename(s.text, old, new)), s.ident)
    return s


def _rename(text: str, old: str, new: str) -> str:
    return re.sub(rf"(?<![\w$]){re.escape(old)}(?![\w$])", lambda _: new, text)


def _restamp(s: Statement, ident: str) -> Statement:
    return Statement(s.kind, s.text, s.code, s.alone, ident, s.ins, s.label)
