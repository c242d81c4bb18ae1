"""A counted loop's body laid out n times in a row, each copy still checking every exit.

Copy j runs iteration i + j of a round that starts at the header: copies 0 .. n-2 end, where
the back edge was, with a branch out of the loop when the loop would stop (and fall into the
next copy otherwise); the last copy keeps the back edge. Every exit of the original stays
in every copy, in its place, so the iterations that run, and the order in which their exit
conditions are evaluated, are the original's for any trip count: no remainder loop is
needed, and no trip count is assumed. (A copy without exits between would need the trip
count divided by n, with a remainder loop: the exits are what keeps this form exact when
the count is unknown.)

Copies keep the loop's register names (PTX registers are variables); labels of copies 1 ..
n-1 get fresh names and their branches inside the loop follow them. A `Layout` says what
goes before the loop (a prologue), at the top of each copy, and what each copy's statements
become (a load replaced by the copy of a prefetched value).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from reorder.ptx.analyses.counted import CountedLoop
from reorder.ptx.model.instruction import with_guard
from reorder.ptx.model.lexer import Piece
from reorder.ptx.model.model import Function, Statement, make_statement

Emit = Callable[[int, int, Statement], list[Statement]]  # (copy, original statement index, its copy) -> statements


@dataclass(frozen=True)
class Layout:
    copies: int
    prologue: tuple[Statement, ...] = ()
    tops: tuple[tuple[Statement, ...], ...] = ()
    emit: Emit | None = field(default=None)


def expand(function: Function, loop: CountedLoop, layout: Layout) -> Function:
    """The function with the loop replaced by `layout.copies` copies of its body (see above)."""
    body = list(function.body)
    exit_label, after = _exit_label(function, body, loop.end) if layout.copies > 1 else (None, [])
    inside = {s.label for s in body[loop.start : loop.end] if s.kind == "label"}
    top_at = _top(body, loop)
    out: list[Statement] = []
    for j in range(layout.copies):
        names = {label: _unused(function, f"{label}_x{j}") for label in inside} if j else {}
        for i in range(loop.start, loop.end):
            if i == top_at and j < len(layout.tops):
                out += layout.tops[j]
            s = _relabelled(body[i], names, loop.label, j)
            if i == loop.latch_branch and j < layout.copies - 1:
                s = _leave_when_done(s, exit_label)
            out += layout.emit(j, i, s) if layout.emit else [s]
    return function.with_body(body[: loop.start] + list(layout.prologue) + out + after + body[loop.end :])


def _top(body: list[Statement], loop: CountedLoop) -> int:
    """The header's first statement after its labels (where a copy's top goes)."""
    i = loop.start
    while i < loop.end and body[i].kind in ("label", "blank", "comment"):
        i += 1
    return i


def _exit_label(function: Function, body: list[Statement], end: int) -> tuple[str, list[Statement]]:
    """The label right after the loop, and a label statement to add when there is none."""
    for s in body[end:]:
        if s.kind == "label":
            return s.label, []
        if s.kind in ("instruction", "directive", "open", "close"):
            break
    label = _unused(function, "$L__loop_exit")
    return label, [make_statement(Piece("label", f"{label}:\n", f"{label}:", True), f"{body[end - 1].ident}x")]


def _relabelled(s: Statement, names: dict[str, str], header: str, j: int) -> Statement:
    """Statement s in copy j: its labels renamed, branches inside the loop following them
    (a branch to the header, the back edge, keeps its target)."""
    if j == 0:
        return s
    ident = f"{s.ident}x{j}"
    if s.kind == "label":
        new = names[s.label]
        return Statement(s.kind, _rename(s.text, s.label, new), f"{new}:", s.alone, ident, label=new)
    if s.kind == "instruction" and s.ins.base == "bra" and s.ins.operands[-1] in names and s.ins.operands[-1] != header:
        target = s.ins.operands[-1]
        s = s.retext(_rename(s.text, target, names[target]))
    return Statement(s.kind, s.text, s.code, s.alone, ident, s.ins, s.label)


def _leave_when_done(latch: Statement, exit_label: str) -> Statement:
    """`@p bra HEADER` becomes `@!p bra EXIT`: fall into the next copy when the loop goes on."""
    ins = latch.ins
    flipped = ins.guard[1:] if ins.guard_negated else "!" + ins.guard
    text = _rename(with_guard(latch.text, flipped), ins.operands[-1], exit_label)
    new = latch.retext(text)
    return Statement(new.kind, new.text, new.code, new.alone, latch.ident, new.ins, new.label)


def _unused(function: Function, stem: str) -> str:
    text = function.text
    name, n = stem, 0
    while re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", text):
        n += 1
        name = f"{stem}{n}"
    return name


def _rename(text: str, old: str, new: str) -> str:
    return re.sub(rf"(?<![\w$]){re.escape(old)}(?![\w$])", lambda _: new, text)
