"""A symbolic evaluator of straight-line SASS, for tests: two versions of a block are
equivalent when every value live after the block and every store (in order) is the same
expression over the block's inputs.

Values are hash-consed expression ids. A write under a guard g is `ite(g, value, old)`; a
read under guard g simplifies `ite(g, v, old)` to v (the read happens only when g holds),
which is what makes renamed guarded loads compare equal to the originals. Register
numbers are erased from the operand text (the values stand for them), so renaming does
not change an expression. Memory is taken as unchanged by the block's stores (the
no-alias assumption the moves under test make explicit).
"""

from __future__ import annotations

import re

from reorder.sass.operands import operand_names

_NUMBERED = re.compile(r"(?<![A-Za-z0-9])(U?R|U?P)\d+")


class Expressions:
    """Hash-consing table shared by the evaluations being compared."""

    def __init__(self) -> None:
        self.ids: dict[tuple, int] = {}
        self.nodes: list[tuple] = []

    def make(self, *node) -> int:
        if node not in self.ids:
            self.ids[node] = len(self.nodes)
            self.nodes.append(node)
        return self.ids[node]

    def ite(self, guard: int, new: int, old: int) -> int:
        """ite(g, new, ite(g, x, y)) is ite(g, new, y): the inner value is dead when g holds."""
        while self.nodes[old][0] == "ite" and self.nodes[old][1] == guard:
            old = self.nodes[old][3]
        return self.make("ite", guard, new, old)

    def under(self, value: int, guard: int | None) -> int:
        while guard is not None and self.nodes[value][0] == "ite" and self.nodes[value][1] == guard:
            value = self.nodes[value][2]
        return value


def evaluate(instructions, table: Expressions) -> tuple[dict[str, int], list[int]] | None:
    """(final state: name -> expression id, store expression ids in order), or None when an
    instruction is not modelled (unknown, or an implicit read/write)."""
    state: dict[str, int] = {}
    stores: list[int] = []

    def value(name: str) -> int:
        return state[name] if name in state else table.make("in", name)

    for ins in instructions:
        if not ins.known or ins.base in ("P2R", "R2P", "CALL", "RET", "BSSY", "BSYNC", "BREAK"):
            return None
        guard = None
        if ins.guard and ins.guard.lstrip("@!") != "PT":
            guard = table.make("guard", ins.guard.startswith("@!"), value(ins.guard.lstrip("@!")))
        dsts, srcs = operand_names(ins.opcode, ins.operands)
        reads = tuple(table.under(value(n), guard) for _, names in srcs for n in names)
        text = tuple(_NUMBERED.sub(r"\1", o.replace(".reuse", "")) for o in ins.operands)
        expr = table.make("op", ins.opcode, text, reads)
        for k, names in dsts:  # destinations come first: k is also their position
            for j, n in enumerate(names):
                new = table.make("out", expr, k, j)
                state[n] = table.ite(guard, new, value(n)) if guard is not None else new
        if ins.access.mem_writes:
            stores.append(table.make("store", guard, expr))
    return state, stores


def equivalent(before, after, live_after: frozenset[str], registers_used: int = 255) -> bool:
    """Same stores in the same order, and the same value in every live R/P register and
    every other written resource (uniform registers, ...), which are never renamed.
    Registers at or above `registers_used` (named by no original instruction, so read by
    none) are not compared."""
    table = Expressions()
    a, b = evaluate(before, table), evaluate(after, table)
    if a is None or b is None:
        return True  # not modelled: the verifier's word stands
    (sa, ta), (sb, tb) = a, b
    names = {n for n in set(sa) | set(sb) if not re.fullmatch(r"[RP]\d+", n)}
    names |= {n for n in live_after if not (n[0] == "R" and int(n[1:]) >= registers_used)}
    same = all(
        (sa[n] if n in sa else table.make("in", n)) == (sb[n] if n in sb else table.make("in", n)) for n in names
    )
    return same and ta == tb
