"""Fresh virtual registers for a loop move, and the `.reg` lines that declare them.

Every register a loop move introduces belongs to families of one stem per move and type
(`%lp0b32_<12>`), the stem chosen so that no name of the function starts with it: the
names are new to the function, whatever the producer or an earlier move declared. The
declarations go after the function's own `.reg` lines.
"""

from __future__ import annotations

import re

from reorder.ptx.model.lexer import Piece
from reorder.ptx.model.model import Function, make_statement
from reorder.ptx.model.registers import Declarations, depth_of, function_declarations


class Fresh:
    """Hands out new registers by type for one move on one function."""

    def __init__(self, function: Function, prefix: str = "%lp") -> None:
        self.function = function
        self.declared: Declarations = function_declarations(function)
        text = function.text
        n = 0
        while f"{prefix}{n}" in text:
            n += 1
        self.stem = f"{prefix}{n}"
        self.counts: dict[str, int] = {}

    def take(self, kind: str) -> str:
        """A new register of type `kind` ('.b32', '.pred')."""
        count = self.counts.get(kind, 0)
        self.counts[kind] = count + 1
        return f"{self._family(kind)}{count}"

    def _family(self, kind: str) -> str:
        return f"{self.stem}{re.sub(r'[^A-Za-z0-9]', '', kind)}_"

    def declare(self, function: Function) -> Function:
        """`function` with the registers handed out declared after its own `.reg` lines."""
        if not self.counts:
            return function
        body = list(function.body)
        depth = depth_of(function)
        last = max(
            (i for i, s in enumerate(body) if s.kind == "directive" and depth[i] == 0 and s.code.startswith(".reg")),
            default=-1,
        )
        lines = []
        for kind, count in sorted(self.counts.items()):
            code = f".reg {kind} \t{self._family(kind)}<{count}>;"
            lines.append(make_statement(Piece("directive", f"\t{code}\n", code, True), f"decl{self._family(kind)}"))
        return function.with_body(body[: last + 1] + lines + body[last + 1 :])
