"""One PTX instruction as a value: guard, opcode, operands.

The text a producer wrote is kept by the statement that holds the instruction; this value is
what analyses read. Operands are split at top-level commas only (`{%f1, %f2}` and
`[%rd3+4096]` stay whole) and have their whitespace collapsed, so nvcc's `[%rd3+4096]` and
Triton's `[ %rd1 + 0 ]` read alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reorder.base.errors import InputError

_GUARD = re.compile(r"@(!?)\s*([%\w$]+)\s*")
_OPCODE = re.compile(r"[A-Za-z_][\w.:]*")


@dataclass(frozen=True, slots=True)
class Instruction:
    """`@guard opcode operands;` with the guard as written ('%p1' or '!%p1', None when absent)."""

    guard: str | None
    opcode: str
    operands: tuple[str, ...]

    @property
    def base(self) -> str:
        """The opcode's first part: 'ld' for 'ld.global.v4.f32'."""
        return self.opcode.split(".", 1)[0]

    @property
    def modifiers(self) -> tuple[str, ...]:
        """The opcode's dotted parts after the base, '::' qualifiers kept: ('shared::cta', 'b32')."""
        return tuple(self.opcode.split(".")[1:])

    @property
    def guard_register(self) -> str | None:
        return self.guard.lstrip("!") if self.guard else None

    @property
    def guard_negated(self) -> bool:
        return bool(self.guard and self.guard.startswith("!"))

    def address(self) -> str | None:
        """The first `[...]` operand (a memory address), brackets removed."""
        for operand in self.operands:
            if operand.startswith("[") and operand.endswith("]"):
                return operand[1:-1].strip()
        return None


def split_operands(text: str) -> tuple[str, ...]:
    """Top-level comma-separated operands, each with its whitespace collapsed."""
    out, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "{[(":
            depth += 1
        elif c in "}])":
            depth -= 1
        elif c == "," and depth == 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return tuple(_collapse(o) for o in out if o.strip())


def _collapse(operand: str) -> str:
    return " ".join(operand.split())


def parse_instruction(code: str) -> Instruction:
    """Parse one instruction statement (`@%p1 bra $L__BB0_2;`); one InputError when it is not one."""
    body = code.strip()
    body = body.removesuffix(";")
    guard = None
    match = _GUARD.match(body)
    if match:
        guard = match.group(1) + match.group(2)
        body = body[match.end() :]
    opcode = _OPCODE.match(body)
    if not opcode:
        raise InputError(f"not a PTX instruction: {code.strip()[:60]!r}")
    return Instruction(guard, opcode.group(0), split_operands(body[opcode.end() :]))


def with_guard(text: str, guard: str | None) -> str:
    """The statement text with its guard replaced (None removes it), indentation and comment kept."""
    indent = text[: len(text) - len(text.lstrip(" \t"))]
    rest = text[len(indent) :]
    match = _GUARD.match(rest)
    if match:
        rest = rest[match.end() :]
    return indent + (f"@{guard} " if guard else "") + rest
