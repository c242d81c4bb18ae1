"""A PTX module as immutable values that print back to the exact text they came from.

`parse_module(text).text == text` for every PTX nvcc and Triton write: each statement
keeps its raw text, and only a statement a pass builds or rewrites gets new text. Moves
therefore produce a diff that touches only the lines they move, and a module nothing was
done to is the input, byte for byte (the round-trip tests check every PTX in the
repository and every PTX nvcc makes of its sources).

Module-level pieces (directives, globals, `.section` debug data, comments) are kept raw;
functions (`.entry`, `.func`) are parsed into a head, parameters and body statements.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from reorder.base.errors import InputError
from reorder.ptx.model.instruction import Instruction, parse_instruction
from reorder.ptx.model.lexer import Piece, matching_close, pieces

_FUNC_HEAD = re.compile(r"\.(entry|func)\s*(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)\s*(?:\(([^)]*)\))?", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Statement:
    """One body statement with its raw text.

    kind: 'instruction', 'label', 'directive', 'open', 'close', 'blank' or 'comment'.
    `ident` names it stably across moves (the line it started on in the parsed text; a
    copy made by a pass gets a suffix). `ins` is set for instructions, `label` for labels.
    """

    kind: str
    text: str
    code: str
    alone: bool
    ident: str
    ins: Instruction | None = None
    label: str | None = None

    def retext(self, text: str) -> Statement:
        """The same statement with new raw text (its parsed fields re-read from it)."""
        return make_statement(Piece(self.kind, text, _code_of(text), self.alone), self.ident)


@dataclass(frozen=True, slots=True)
class Param:
    """A function parameter: its name, its type ('.u64') and whether Triton marked it `.ptr`."""

    name: str
    type: str
    pointer: bool


@dataclass(frozen=True, slots=True)
class Function:
    """An `.entry` or `.func`: the raw head through its opening brace, the body, the closing brace."""

    head: str
    name: str
    entry: bool
    params: tuple[Param, ...]
    body: tuple[Statement, ...]
    tail: str

    @property
    def text(self) -> str:
        return self.head + "".join(s.text for s in self.body) + self.tail

    def with_body(self, body: Iterable[Statement]) -> Function:
        return replace(self, body=tuple(body))

    def param_index(self, name: str) -> int | None:
        for i, p in enumerate(self.params):
            if p.name == name:
                return i
        return None


@dataclass(frozen=True, slots=True)
class Module:
    """A PTX file: raw module-level pieces and parsed functions, in their order."""

    items: tuple[Piece | Function, ...]

    @property
    def text(self) -> str:
        return "".join(i.text for i in self.items)

    @property
    def functions(self) -> tuple[Function, ...]:
        return tuple(i for i in self.items if isinstance(i, Function))

    @property
    def kernels(self) -> tuple[Function, ...]:
        return tuple(f for f in self.functions if f.entry)

    def function(self, name: str) -> Function:
        for f in self.functions:
            if f.name == name:
                return f
        names = ", ".join(f.name for f in self.kernels) or "none"
        raise InputError(f"no function {name!r} in this PTX (kernels: {names})")

    def with_function(self, new: Function) -> Module:
        """The module with the function of the same name replaced (the same module when equal)."""
        items = tuple(new if isinstance(i, Function) and i.name == new.name else i for i in self.items)
        return self if items == self.items else Module(items)


def _code_of(text: str) -> str:
    found = pieces(text)
    return next((p.code for p in found if p.code), "")


def make_statement(piece: Piece, ident: str) -> Statement:
    """A body statement from a lexer piece."""
    if piece.kind == "instruction":
        return Statement("instruction", piece.text, piece.code, piece.alone, ident, parse_instruction(piece.code))
    if piece.kind == "label":
        return Statement("label", piece.text, piece.code, piece.alone, ident, label=piece.code[:-1])
    kind = "directive" if piece.kind == "section" else piece.kind
    return Statement(kind, piece.text, piece.code, piece.alone, ident)


def new_instruction(code: str, ident: str) -> Statement:
    """An instruction statement a pass writes: `code` on a line of its own, tab-indented."""
    return make_statement(Piece("instruction", f"\t{code}\n", code, True), ident)


def parse_module(text: str) -> Module:
    """Parse PTX text; `parse_module(t).text == t`."""
    items: list[Piece | Function] = []
    i, line = 0, 1
    while i < len(text):
        rest = pieces(text[i:], module_level=True)
        consumed = 0
        for piece in rest:
            if piece.kind != "header":
                items.append(piece)
                consumed += len(piece.text)
                continue
            function, length = _parse_function(text, i + consumed, piece, line + text.count("\n", i, i + consumed))
            items.append(function)
            consumed += length
            break
        line += text.count("\n", i, i + consumed)
        i += consumed
    return Module(tuple(items))


def _parse_function(text: str, start: int, header: Piece, line: int) -> tuple[Function, int]:
    """The function whose header piece starts at `start`; returns it and how many characters it spans."""
    brace = start + len(header.text)
    close = matching_close(text, brace)
    head_end = _line_end_after(text, brace + 1)
    body_text = text[head_end : close - 1]
    tail_end = _line_end_after(text, close)
    match = _FUNC_HEAD.search(header.code)
    if not match:
        raise InputError(f"line {line}: cannot read this function header: {header.code[:60]!r}")
    head = text[start:head_end]
    body = _parse_body(body_text, line + head.count("\n"))
    params = tuple(_param(p) for p in (match.group(3) or "").split(",") if p.strip())
    function = Function(head, match.group(2), match.group(1) == "entry", params, body, text[close - 1 : tail_end])
    return function, tail_end - start


def _line_end_after(text: str, i: int) -> int:
    """Past the end of the line at i when only blanks or a comment follow; else i."""
    j = i
    while j < len(text) and text[j] in " \t\r":
        j += 1
    if text.startswith("//", j):
        j = text.find("\n", j)
        j = len(text) if j < 0 else j
    if j < len(text) and text[j] == "\n":
        return j + 1
    return j if j >= len(text) else i


def _parse_body(text: str, first_line: int) -> tuple[Statement, ...]:
    out, line = [], first_line
    for piece in pieces(text):
        lead = len(piece.text) - len(piece.text.lstrip(" \t\r\n"))
        out.append(make_statement(piece, str(line + piece.text.count("\n", 0, lead))))
        line += piece.text.count("\n")
    return tuple(out)


def _param(text: str) -> Param:
    words = text.split()
    name = re.sub(r"\[.*$", "", words[-1]) if words else ""
    kinds = [
        w
        for w in words[:-1]
        if w.startswith(".")
        and w not in (".param", ".ptr", ".align")
        and not w.startswith((".global", ".shared", ".const", ".local"))
    ]
    return Param(name, kinds[0] if kinds else "", ".ptr" in words)
