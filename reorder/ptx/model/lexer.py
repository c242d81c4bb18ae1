"""Cut PTX text into raw pieces whose concatenation is the text, byte for byte.

A PTX statement is not a line: nvcc writes a `call` over seven lines, Triton's inline
assembly can put two statements on one line, and `.loc`/`.file`/`.version` end at the
line end without a semicolon. So the text is cut at statement boundaries, and each piece
keeps everything around its statement that belongs to it (indentation, a trailing `//`
comment, the newline). A piece that shares its line with another statement is marked,
because a move may carry only whole lines. Whole-line comments and blank lines are pieces
of their own, so moving an instruction never drags a comment along.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Directives that end at the end of their line (no semicolon).
LINE_DIRECTIVES = frozenset(
    {
        ".version",
        ".target",
        ".address_size",
        ".file",
        ".loc",
        ".maxnreg",
        ".maxntid",
        ".reqntid",
        ".minnctapersm",
        ".maxnctapersm",
        ".noreturn",
        ".explicitcluster",
        ".reqnctapercluster",
        ".maxclusterrank",
    }
)
_LABEL = re.compile(r"[A-Za-z_$%][\w$]*:(?!:)")
_DIRECTIVE = re.compile(r"\.[A-Za-z_]\w*")


@dataclass(frozen=True, slots=True)
class Piece:
    """One statement (or one blank/comment line) with the exact text around it.

    kind: 'blank', 'comment', 'label', 'directive', 'instruction', 'open', 'close', 'section'.
    `code` is the statement itself, comments and surrounding whitespace removed.
    `alone` is False when another statement shares one of its lines.
    """

    kind: str
    text: str
    code: str
    alone: bool


def _skip_comment(text: str, i: int) -> int:
    """Index just past a comment starting at i (`//` up to, not including, the newline)."""
    if text.startswith("//", i):
        end = text.find("\n", i)
        return len(text) if end < 0 else end
    end = text.find("*/", i + 2)
    return len(text) if end < 0 else end + 2


def _scan_to(text: str, i: int, stops: str) -> int:
    """Index of the first character in `stops` at or after i, outside comments and strings."""
    n = len(text)
    while i < n:
        c = text[i]
        if c in stops:
            return i
        if c == '"':
            end = text.find('"', i + 1)
            i = n if end < 0 else end + 1
            continue
        if c == "/" and text.startswith(("//", "/*"), i):
            i = _skip_comment(text, i)
            continue
        i += 1
    return n


def _matching_brace(text: str, i: int) -> int:
    """Index just past the `}` matching the `{` at i (comments and strings skipped)."""
    depth = 0
    while i < len(text):
        i = _scan_to(text, i, "{}")
        if i >= len(text):
            return len(text)
        depth += 1 if text[i] == "{" else -1
        i += 1
        if depth == 0:
            return i
    return len(text)


def statement_end(text: str, i: int, module_level: bool) -> tuple[str, int]:
    """(kind, end) of the statement starting at i (end is just past its last code character)."""
    c = text[i]
    if c in "{}":
        return ("open" if c == "{" else "close"), i + 1
    label = _LABEL.match(text, i)
    if label:
        return "label", label.end()
    directive = _DIRECTIVE.match(text, i)
    if directive and directive.group(0) in LINE_DIRECTIVES:
        return "directive", _code_line_end(text, i)
    if directive and directive.group(0) == ".section":
        brace = _next_code(text, _scan_to(text, i, "{;\n"))
        if brace < len(text) and text[brace] == "{":  # debug data, on this line or the next ones
            return "section", _matching_brace(text, brace)
        return "directive", _code_line_end(text, i)
    if module_level:
        return _module_statement_end(text, i)
    end = _scan_to(text, i, ";")
    return ("directive" if directive else "instruction"), min(end + 1, len(text))


def _next_code(text: str, i: int) -> int:
    """Index of the first character at or after i that is neither blank nor in a comment."""
    while i < len(text):
        if text[i] in " \t\r\n":
            i += 1
        elif text.startswith(("//", "/*"), i):
            i = _skip_comment(text, i)
        else:
            return i
    return i


def _module_statement_end(text: str, i: int) -> tuple[str, int]:
    """A module-level statement: a declaration ending in `;` or a function header ending before `{`."""
    depth, j, assigned = 0, i, False
    while j < len(text):
        j = _scan_to(text, j, "();{=")
        if j >= len(text):
            return "directive", len(text)
        c = text[j]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "=":
            assigned = True
        elif c == ";" and depth <= 0:
            return "directive", j + 1
        elif c == "{" and depth <= 0:
            if assigned:  # an initializer: `.global .b8 x[3] = {1, 2, 3};`
                j = _matching_brace(text, j)
                continue
            return "header", j
        j += 1
    return "directive", len(text)


def _code_line_end(text: str, i: int) -> int:
    """End of the code on the line starting at i: before a trailing comment and trailing blanks."""
    end = text.find("\n", i)
    line = text[i : len(text) if end < 0 else end]
    cut = _comment_start(line)
    stop = i + (len(line) if cut is None else cut)
    while stop > i and text[stop - 1] in " \t\r":
        stop -= 1
    return stop


def _comment_start(line: str) -> int | None:
    """Offset of a `//` comment in one line, outside strings."""
    in_string = False
    for k, c in enumerate(line):
        if c == '"':
            in_string = not in_string
        elif not in_string and line.startswith("//", k):
            return k
    return None


def _trailer(text: str, end: int) -> tuple[int, bool]:
    """Extend a statement ending at `end` over blanks, a trailing comment and the newline.

    Returns (new end, whether the line ended there); when another statement follows on the
    same line, only the blanks are taken.
    """
    j = end
    while j < len(text) and text[j] in " \t\r":
        j += 1
    if text.startswith(("//", "/*"), j):
        k = _skip_comment(text, j)
        if text.startswith("/*", j) and "\n" not in text[j:k]:
            rest = k
            while rest < len(text) and text[rest] in " \t\r":
                rest += 1
            if rest < len(text) and text[rest] != "\n":
                return k, False
            j = rest
        else:
            j = k
    if j >= len(text):
        return j, True
    if text[j] == "\n":
        return j + 1, True
    return j, False


def pieces(text: str, module_level: bool = False) -> list[Piece]:
    """Every piece of `text` in order; "".join(p.text for p in pieces(t)) == t.

    At module level lexing stops at a function header, returned as kind 'header' ending
    just before its `{`; the caller cuts the function out and lexes on after it.
    """
    out: list[Piece] = []
    i, line_start = 0, True
    while i < len(text):
        j = i
        while j < len(text) and text[j] in " \t\r":
            j += 1
        if j >= len(text) or text[j] == "\n":
            end = min(j + 1, len(text))
            out.append(Piece("blank", text[i:end], "", line_start))
            i, line_start = end, True
            continue
        if text.startswith(("//", "/*"), j):
            end, ended = _trailer(text, _skip_comment(text, j))
            out.append(Piece("comment", text[i:end], "", line_start and ended))
            i, line_start = end, ended
            continue
        kind, code_end = statement_end(text, j, module_level)
        if kind == "header":  # the caller parses the function and lexes on after it
            out.append(Piece("header", text[i:code_end], text[j:code_end].strip(), line_start))
            break
        end, ended = _trailer(text, code_end)
        out.append(Piece(kind, text[i:end], text[j:code_end], line_start and ended))
        i, line_start = end, ended
    return out


def matching_close(text: str, i: int) -> int:
    """Index just past the `}` that closes the body whose `{` is at i."""
    return _matching_brace(text, i)
