"""Which names in a function body are virtual registers, and which register each one means.

PTX declares registers with `.reg` (`%r<103>` declares %r0..%r102) at function scope or in
a nested `{ }` scope (nvcc's call sequences, Triton's inline assembly). A name declared in
a nested scope shadows the outer one, so analyses see it qualified with its scope
(`temp_param_reg#3`); every other `%name` (`%tid`, `%ctaid`, `%clock`) is a special
register, read-only and outside def-use.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from reorder.ptx.model.model import Function

_NAME = re.compile(r"[%A-Za-z_$][\w$]*")
_FAMILY = re.compile(r"([%A-Za-z_$][\w$]*?)<(\d+)>")
_NUMBERED = re.compile(r"(.*?)(\d+)")


@dataclass(slots=True)
class Declarations:
    """The registers one scope declares: exact names and numbered families (prefix -> count),
    each with its type ('.f32')."""

    names: dict[str, str] = field(default_factory=dict)
    families: dict[str, tuple[int, str]] = field(default_factory=dict)

    def add(self, directive: str) -> None:
        """Read one `.reg .TYPE a, b<8>;` directive."""
        words = directive.rstrip(";").split(None, 1)
        rest = words[1] if len(words) > 1 else ""
        types = re.match(r"^(\s*\.\w+(::\w+)?\s*)+", rest)
        kind = types.group(0).split()[-1] if types else ""
        for part in rest[types.end() if types else 0 :].split(","):
            part = part.strip()
            family = _FAMILY.fullmatch(part)
            if family:
                count = max(self.families.get(family.group(1), (0, kind))[0], int(family.group(2)))
                self.families[family.group(1)] = (count, kind)
            elif part:
                self.names[part] = kind

    def type_of(self, name: str) -> str | None:
        """The declared type of a register ('.f32'), None when this scope does not declare it."""
        if name in self.names:
            return self.names[name]
        numbered = _NUMBERED.fullmatch(name)
        if numbered and numbered.group(1) in self.families:
            count, kind = self.families[numbered.group(1)]
            return kind if int(numbered.group(2)) < count else None
        return None

    def declares(self, name: str) -> bool:
        return self.type_of(name) is not None


def function_declarations(function: Function) -> Declarations:
    """The registers declared at the function's own scope (depth 0)."""
    top = Declarations()
    depth = 0
    for s in function.body:
        depth += (s.kind == "open") - (s.kind == "close")
        if depth == 0 and s.kind == "directive" and s.code.startswith(".reg"):
            top.add(s.code)
    return top


def tokens(statement) -> list[str]:
    """Every name-like token of an instruction's guard and operands (registers among them)."""
    ins = statement.ins
    found = [ins.guard_register] if ins.guard else []
    for operand in ins.operands:
        found += _NAME.findall(operand)
    return found


def _resolve(name: str, stack: list[tuple[int, Declarations]], top: Declarations) -> str | None:
    for opened, scope in reversed(stack):
        if scope.declares(name):
            return f"{name}#{opened}"
    return name if top.declares(name) else None


def resolver(function: Function):
    """A function mapping (statement index, name) to the register it means there, or None."""
    top = function_declarations(function)
    scopes: list[tuple[tuple[int, Declarations], ...]] = []
    stack: list[tuple[int, Declarations]] = []
    for index, s in enumerate(function.body):
        if s.kind == "open":
            stack.append((index, Declarations()))
        elif s.kind == "close" and stack:
            stack.pop()
        elif s.kind == "directive" and s.code.startswith(".reg") and stack:
            stack[-1][1].add(s.code)
        scopes.append(tuple(stack))

    known: dict[tuple[tuple[int, ...], str], str | None] = {}

    def resolve(index: int, name: str) -> str | None:
        key = (tuple(opened for opened, _ in scopes[index]), name)  # a scope is named by where it opened
        if key not in known:
            known[key] = _resolve(name, list(scopes[index]), top)
        return known[key]

    return resolve


def depth_of(function: Function) -> tuple[int, ...]:
    """The `{ }` nesting depth of every statement (0: the function's own scope)."""
    depth, out = 0, []
    for s in function.body:
        if s.kind == "close":
            depth -= 1
        out.append(depth)
        if s.kind == "open":
            depth += 1
    return tuple(out)
