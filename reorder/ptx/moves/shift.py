"""A value of a loop iteration still to come: the instructions that compute it, cloned with
the inductions advanced.

Inside a counted loop (reorder.ptx.analyses.counted) a register read by a statement comes from one of
three places: outside the loop (an invariant: the same value on every iteration), an
induction (its value at iteration i + k is the value at i plus k steps, modulo the
register's width exactly as the loop's own adds wrap), or one pure, unguarded instruction of
the same iteration that runs before it (cloned, its own operands resolved the same way).
Anything else (a loaded value, a value carried from the previous iteration, a register
written on some paths only) cannot be named ahead of time: NotApplicable.

A `Site` emits clones at one point (before the loop, or at a statement of the loop) into
fresh registers (reorder.ptx.moves.fresh), each clone once per shift.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reorder.base.errors import NotApplicable
from reorder.ptx.analyses.analysis import Analysis
from reorder.ptx.analyses.counted import CountedLoop, Induction, precedes
from reorder.ptx.model.model import Statement, new_instruction
from reorder.ptx.moves.fresh import Fresh

TOKEN = re.compile(r"(?<![\w$%.])[%A-Za-z_$][\w$]*")
_CLONABLE = frozenset({"pure", "param"})


@dataclass(frozen=True, slots=True)
class Source:
    """Where the value of a register read by one statement comes from."""

    kind: str  # 'invariant', 'induction' or 'member'
    induction: Induction | None = None
    post: bool = False  # an induction read after its update in the same iteration
    member: int | None = None


def source(analysis: Analysis, loop: CountedLoop, use: int, reg: str) -> Source:
    """Where `reg`, read by statement `use` of the loop, comes from (NotApplicable: nowhere nameable)."""
    defs = analysis.defuse.reaching(use, reg)
    inside = {d for d in defs if loop.holds(analysis, d)}
    if not inside:
        return Source("invariant")
    line = analysis.function.body[use].ident
    induction = loop.induction(reg)
    if induction is not None and inside == {induction.update}:
        return Source("induction", induction, post=precedes(analysis, induction.update, use))
    if len(defs) != 1:
        raise NotApplicable(f"{reg} at line {line} is written on several paths or carried from the last iteration")
    (d,) = defs
    s, effect = analysis.function.body[d], analysis.effects[d]
    if effect.kind not in _CLONABLE or s.ins.guard is not None or not s.alone or not precedes(analysis, d, use):
        what = "a load" if effect.kind == "load" else f"line {s.ident} ({s.ins.opcode})"
        raise NotApplicable(f"{reg} at line {line} comes from {what}, not from the loop's inductions")
    return Source("member", member=d)


def induction_posts(analysis: Analysis, loop: CountedLoop, at: int | None) -> dict[str, bool]:
    """For each induction: does its register hold the updated value at statement `at` (None:
    before the loop, where it holds iteration 0's value)?"""
    return {x.register: at is not None and precedes(analysis, x.update, at) for x in loop.inductions}


class Site:
    """Clones emitted at one point: `at` a loop statement they go before (or None: before the loop)."""

    def __init__(self, analysis: Analysis, loop: CountedLoop, fresh: Fresh, at: int | None, tag: str) -> None:
        self.analysis, self.loop, self.fresh, self.tag = analysis, loop, fresh, tag
        self.posts = induction_posts(analysis, loop, at)
        self.out: list[Statement] = []
        self._clones: dict[tuple[int, int], dict[str, str]] = {}
        self._advanced: dict[tuple[str, int], str] = {}

    def emit(self, code: str) -> None:
        self.out.append(new_instruction(code, f"{self.tag}.{len(self.out)}"))

    def register(self, use: int, reg: str, shift: int) -> str:
        """The name holding the value `reg` has, as statement `use` reads it, `shift` iterations on."""
        found = source(self.analysis, self.loop, use, reg)
        if found.kind == "invariant":
            return reg
        if found.kind == "induction":
            return self._advance(found.induction, shift + found.post - self.posts[reg])
        return self._clone(found.member, shift)[reg]

    def _advance(self, x: Induction, steps: int) -> str:
        if steps == 0:
            return x.register
        key = (x.register, steps)
        if key not in self._advanced:
            kind = self.type_of(x.register)
            name = self.fresh.take(kind)
            if x.immediate is not None:
                delta = x.immediate * steps
                if abs(delta) >= 2**31:
                    raise NotApplicable(f"{x.register}: {steps} steps of {x.step} do not fit an immediate")
                self.emit(f"add.{x.opcode.split('.', 1)[1]} \t{name}, {x.register}, {delta};")
            else:
                scaled = self.fresh.take(kind)
                sign = -steps if x.negated else steps
                self.emit(f"mul.lo.{x.opcode.split('.', 1)[1]} \t{scaled}, {x.step}, {sign};")
                self.emit(f"add.{x.opcode.split('.', 1)[1]} \t{name}, {x.register}, {scaled};")
            self._advanced[key] = name
        return self._advanced[key]

    def _clone(self, member: int, shift: int) -> dict[str, str]:
        key = (member, shift)
        if key not in self._clones:
            effect = self.analysis.effects[member]
            sources = {reg: self.register(member, reg, shift) for reg in sorted(effect.uses)}
            dests = {reg: self.fresh.take(self.type_of(reg)) for reg in sorted(effect.defs)}
            self.emit(renamed_code(self.analysis.function.body[member].ins, dests, sources))
            self._clones[key] = dests
        return self._clones[key]

    def type_of(self, reg: str) -> str:
        kind = self.fresh.declared.type_of(reg)
        if kind is None:
            raise NotApplicable(f"{reg} has no declared type at the function's scope")
        return kind

    def operands(self, use: int, shift: int) -> dict[str, str]:
        """Every register statement `use` reads, mapped to its value `shift` iterations on."""
        return {reg: self.register(use, reg, shift) for reg in sorted(self.analysis.effects[use].uses)}

    def literal(self, use: int, shift: int) -> tuple[str, bool]:
        """The guard of statement `use`, `shift` iterations on: (predicate, holds when it is true)."""
        ins = self.analysis.function.body[use].ins
        return self.register(use, ins.guard_register, shift), not ins.guard_negated

    def conjoin(self, literals: list[tuple[str, bool]], positive: bool = False) -> str | None:
        """One guard for the conjunction of literals ('%p', '!%p', or None for always);
        `positive`: a predicate register that holds it (never '!%p')."""
        if not literals:
            return None
        if len(literals) == 1 and (literals[0][1] or not positive):
            reg, holds = literals[0]
            return reg if holds else "!" + reg
        regs = []
        for reg, holds in literals:
            if not holds:
                temp = self.fresh.take(".pred")
                self.emit(f"not.pred \t{temp}, {reg};")
                reg = temp
            regs.append(reg)
        current = regs[0]
        for reg in regs[1:]:
            temp = self.fresh.take(".pred")
            self.emit(f"and.pred \t{temp}, {current}, {reg};")
            current = temp
        return current


def renamed_code(ins, dests: dict[str, str], sources: dict[str, str], guard: str | None = None) -> str:
    """An instruction's code with its destination operand's registers renamed by `dests` and
    every other operand's by `sources`, under `guard` (None: unguarded)."""
    operands = (
        [_rename(ins.operands[0], dests)] + [_rename(o, sources) for o in ins.operands[1:]]
        if dests
        else [_rename(o, sources) for o in ins.operands]
    )
    head = f"@{guard} " if guard else ""
    return f"{head}{ins.opcode} \t{', '.join(operands)};"


def _rename(text: str, names: dict[str, str]) -> str:
    return TOKEN.sub(lambda m: names.get(m.group(0), m.group(0)), text)


def bound_predicate(analysis: Analysis, loop: CountedLoop, branch: int) -> bool:
    """The branch's guard can be computed for a later iteration (a bound exit)."""
    try:
        Site(analysis, loop, Fresh(analysis.function), None, "probe").literal(branch, 1)
    except NotApplicable:
        return False
    return True
