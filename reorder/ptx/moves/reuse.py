"""ReuseLoad: a load of an address already loaded on every path to it takes the earlier value.

The later load L becomes `mov`s of the registers the earlier load E wrote, when:

- E runs on every path to L: E's block dominates L's (or E is earlier in L's block), and E
  is unguarded; both are plain loads (no `.volatile`/`.acquire`: those are fences here) of
  one state space, type and vector width (cache hints aside: they do not change the value);
- the two addresses are the same value, plus the same constant offset: the same register,
  written neither by E nor on any path from E to L; or, where neither load nor any
  definition involved is in a loop (so each runs at most once), registers computed by the
  same pure instructions from the same values (a small value numbering over unique reaching
  definitions; special registers such as %tid.x, immediates and kernel parameters are the
  same everywhere);
- nothing between them may have changed that memory: no instruction on a path from E to
  L has a memory, barrier, fence or unknown edge to L in the dependency graph
  (reorder.ptx.analyses.memory: a store through another parameter is independent only under
  --assume-noalias, through the same parameter never; a barrier separates them unless no
  thread can have written the buffer);
- E's destination registers still hold its value at L (nothing on the way writes them).

The cost is registers held live from E to L, which ptxas allocates and the search weighs
by measuring (its 'reuse' kind, reorder.ptx.space.kinds). L's guard stays on its movs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from reorder.base.errors import NotApplicable
from reorder.ptx.analyses.analysis import Analysis, analysis_of
from reorder.ptx.analyses.legality import MEMORY_EDGES, Planner
from reorder.ptx.model.model import Function, Module, new_instruction
from reorder.ptx.model.registers import function_declarations

CACHE_HINTS = re.compile(r"^(ca|cg|cs|lu|cv|nc|L1::\w+|L2::\w+)$")
MOV_TYPE = {".f16": ".b16", ".bf16": ".b16", ".f16x2": ".b32", ".bf16x2": ".b32"}  # mov has no such types
_DEPTH = 8  # value-numbering depth: address arithmetic is a few instructions deep


@dataclass(frozen=True, slots=True)
class ReuseLoad:
    """Replace the load at statement `load` (its ident) of `kernel` by its earlier twin's value."""

    kernel: str
    load: str
    noalias: bool | tuple[int, ...] = False
    name = "reuse"

    @staticmethod
    def instances(module: Module, kernel: str, noalias: bool | tuple[int, ...] = False) -> list[ReuseLoad]:
        """One per load that has an earlier twin, in program order."""
        analysis = analysis_of(module.function(kernel), noalias)
        finder = Twins(analysis)
        return [
            ReuseLoad(kernel, analysis.function.body[i].ident, noalias)
            for i in finder.loads
            if finder.earlier(i) is not None
        ]

    def apply(self, module: Module) -> Module:
        function = module.function(self.kernel)
        analysis = analysis_of(function, self.noalias)
        index = next((i for i, s in enumerate(function.body) if s.ident == self.load and s.kind == "instruction"), None)
        finder = Twins(analysis)
        if index is None or index not in finder.loads:
            raise NotApplicable(f"{self.kernel}: line {self.load} is not a load that can reuse a value")
        earlier = finder.earlier(index)
        if earlier is None:
            raise NotApplicable(
                f"{self.kernel}: the load at line {self.load} has no earlier load of its address "
                "on every path with nothing in between that may write it"
            )
        return module.with_function(reuse(function, earlier, index))

    def describe(self) -> str:
        return f"reuse:{self.load}"


def _shape(opcode: str) -> tuple[str, ...]:
    """The opcode without cache hints: what decides the value a load returns."""
    return tuple(m for m in opcode.split(".") if not CACHE_HINTS.match(m))


def destinations(operand: str) -> list[str]:
    return re.findall(r"[%A-Za-z_$][\w$]*", operand)


class Twins:
    """Finds, for a load, the latest earlier load of the same value (see the module docstring)."""

    def __init__(self, analysis: Analysis) -> None:
        self.analysis = analysis
        self.planner = Planner(analysis)
        body = analysis.function.body
        self.loads = [i for i in range(len(body)) if self.planner.hoistable_load(i) or self._plain_shared(i)]

    def _plain_shared(self, i: int) -> bool:
        effect, s = self.analysis.effects[i], self.analysis.function.body[i]
        return (
            effect is not None
            and effect.kind == "load"
            and effect.space == "shared"
            and s.alone
            and self.analysis.depth[i] == 0
            and s.ins.base == "ld"
        )

    def earlier(self, load: int) -> int | None:
        """The latest earlier twin the load may take its value from, or None. Only loads that
        could pass `_same_address` are tried (`_candidates`)."""
        a = self.analysis
        cfg, body = a.cfg, a.function.body
        for e in self._candidates(load):
            if body[e].ins.guard is not None or _shape(body[e].ins.opcode) != _shape(body[load].ins.opcode):
                continue
            be, bl = cfg.block_of[e], cfg.block_of[load]
            if not ((be == bl and e < load) or (be != bl and cfg.dominates(be, bl))):
                continue
            if self._same_address(e, load) and self._clear(e, load):
                return e
        return None

    def _candidates(self, load: int) -> list[int]:
        """The other loads, latest first, that agree with `load` in what `_same_address`
        requires: state space, symbol, offset and number of address terms, and for the first
        term the same register (`_unchanged`) or the same value number (`_same_value`).
        Trying every earlier load made the twin search quadratic in the loads, times the
        cost of each comparison (a 1,000-statement kernel took minutes)."""
        group, reg, value = self._address_key(load)
        by_group, by_register, by_value = self._indexes
        if value is UNNUMBERED:
            found = by_group.get(group, set())
        else:
            found = (
                by_register.get((group, reg), set())
                | by_value.get((group, value), set())
                | by_value.get((group, UNNUMBERED), set())
            )
        return sorted(found - {load}, reverse=True)

    def _address_key(self, i: int) -> tuple[tuple, str | None, object]:
        """(space, symbol, offset, term count), the first term's register and value number."""
        effect = self.analysis.effects[i]
        terms = _terms(self.analysis.function.body[i].ins.address())
        group = (effect.space, effect.symbol, effect.offset, len(terms))
        if not terms:
            return group, None, None
        return group, self._register(terms[0], i), self._numbers.of(terms[0], i)

    @cached_property
    def _indexes(self) -> tuple[dict, dict, dict]:
        """The loads by group, by (group, first register), by (group, first value number)."""
        by_group: dict[tuple, set[int]] = {}
        by_register: dict[tuple, set[int]] = {}
        by_value: dict[tuple, set[int]] = {}
        for i in self.loads:
            group, reg, value = self._address_key(i)
            by_group.setdefault(group, set()).add(i)
            by_register.setdefault((group, reg), set()).add(i)
            by_value.setdefault((group, value), set()).add(i)
        return by_group, by_register, by_value

    @cached_property
    def _numbers(self) -> ValueNumbers:
        return ValueNumbers(self.analysis, self._register)

    def _same_address(self, e: int, load: int) -> bool:
        a = self.analysis
        fe, fl = a.effects[e], a.effects[load]
        if (fe.space, fe.symbol, fe.offset) != (fl.space, fl.symbol, fl.offset):
            return False
        te = _terms(a.function.body[e].ins.address())
        tl = _terms(a.function.body[load].ins.address())
        if len(te) != len(tl):
            return False
        loop_free = not (a.cfg.loops_of(a.cfg.block_of[e]) or a.cfg.loops_of(a.cfg.block_of[load]))
        return all(
            self._unchanged(x, e, load) or (loop_free and self._same_value(x, e, y, load, _DEPTH))
            for x, y in zip(te, tl)
        )

    def _unchanged(self, token: str, e: int, load: int) -> bool:
        """The same register, written by neither e nor anything on a path from e to the load."""
        reg = self._register(token, e)
        if reg is None or reg != self._register(token, load) or reg in self.analysis.effects[e].defs:
            return False
        return not any(reg in self.analysis.effects[x].defs for x in self.planner.regions.between(e, load))

    def _same_value(self, x: str, at_x: int, y: str, at_y: int, depth: int) -> bool:
        """Operand x read at statement at_x holds the value operand y holds at at_y. Asked only
        where no block involved is in a loop, so each definition runs at most once."""
        a = self.analysis
        rx, ry = self._register(x, at_x), self._register(y, at_y)
        if rx is None or ry is None:
            return rx is None and ry is None and x == y  # immediates, special registers, symbols
        dx, dy = a.defuse.reaching(at_x, rx), a.defuse.reaching(at_y, ry)
        if depth == 0 or len(dx) != 1 or len(dy) != 1:
            return False
        (ix,), (iy,) = dx, dy
        sx, sy = a.function.body[ix].ins, a.function.body[iy].ins
        if sx.guard or sy.guard or a.cfg.loops_of(a.cfg.block_of[ix]) or a.cfg.loops_of(a.cfg.block_of[iy]):
            return False
        if ix == iy:
            return True  # one definition, run once, reaching both
        if sx.opcode != sy.opcode or len(sx.operands) != len(sy.operands) or len(a.effects[ix].defs) != 1:
            return False
        if a.effects[ix].kind == "param":
            return sx.operands[1:] == sy.operands[1:]  # kernel parameters are read-only
        if a.effects[ix].kind != "pure":
            return False
        return all(self._same_value(p, ix, q, iy, depth - 1) for p, q in zip(sx.operands[1:], sy.operands[1:]))

    def _register(self, token: str, at: int) -> str | None:
        effect = self.analysis.effects[at]
        names = effect.uses | effect.defs
        return token if token in names else next((n for n in names if n.split("#")[0] == token), None)

    def _clear(self, e: int, load: int) -> bool:
        """Nothing between e and the load writes its memory, its address or e's destinations."""
        a = self.analysis
        region = [x for x in self.planner.regions.between(e, load) if x != e]
        kept = a.effects[e].defs
        for x in region:
            if a.memory_edge(x, load) in MEMORY_EDGES:
                return False
            if a.effects[x].defs & kept:
                return False
        return True


UNNUMBERED = ("unnumbered",)  # a value ValueNumbers could not number: compared with every load


class _Cycle(Exception):
    """Definitions that feed each other (ValueNumbers numbers acyclic definitions only)."""


class ValueNumbers:
    """A number per (operand, statement) such that `Twins._same_value` holds only between
    operands of one number: the unique reaching definition's opcode, operand count and the
    numbers of its operands (a kernel parameter read: its operand text); any other value
    (several reaching definitions, a guarded one, one in a loop, an impure one) is numbered
    by its set of definitions. Equal numbers do not prove equal values (no depth limit, no
    check of the definition's destinations): `_same_value` still decides; the numbers only
    rule pairs out. Definitions are numbered without recursion (address chains are
    thousands of definitions deep in an unrolled kernel)."""

    def __init__(self, analysis: Analysis, register) -> None:
        self.analysis = analysis
        self.register = register  # Twins._register: the register an operand token names there
        self.table: dict[tuple, int] = {}
        self.of_def: dict[int, int] = {}

    def of(self, token: str, at: int) -> object:
        """The number of `token` as read at statement `at` (UNNUMBERED where definitions feed
        each other in a cycle outside any loop the CFG knows: then no pair is ruled out)."""
        reg = self.register(token, at)
        if reg is None:
            return ("token", token)
        try:
            return self._of_set(self.analysis.defuse.reaching(at, reg))
        except _Cycle:
            return UNNUMBERED

    def _of_set(self, defs: frozenset[int]) -> int:
        if len(defs) != 1:
            return self._number(("defs", defs))
        (d,) = defs
        if d not in self.of_def:
            self._number_definitions(d)
        return self.of_def[d]

    def _shape(self, d: int) -> tuple | None:
        """How definition d is numbered: None when by its operands (their numbers first)."""
        a = self.analysis
        ins = a.function.body[d].ins
        if ins.guard or a.cfg.loops_of(a.cfg.block_of[d]) or a.effects[d].kind not in ("pure", "param"):
            return ("defs", frozenset({d}))
        if a.effects[d].kind == "param":
            return ("param", ins.opcode, len(ins.operands), tuple(ins.operands[1:]))
        return None

    def _operand_defs(self, d: int) -> list[frozenset[int] | None]:
        """The reaching definitions of each source operand of d (None: not a register)."""
        a = self.analysis
        out: list[frozenset[int] | None] = []
        for token in a.function.body[d].ins.operands[1:]:
            reg = self.register(token, d)
            out.append(None if reg is None else a.defuse.reaching(d, reg))
        return out

    def _number_definitions(self, root: int) -> None:
        """Number `root` and every unique reaching definition below it, operands first (a
        depth-first walk: a definition is numbered on its second visit, its operands' done)."""
        stack, expanded = [root], set()
        while stack:
            d = stack[-1]
            if d in self.of_def:
                stack.pop()
                continue
            shape = self._shape(d)
            if shape is not None:
                self.of_def[d] = self._number(shape)
                stack.pop()
                continue
            operands = self._operand_defs(d)
            below = [next(iter(x)) for x in operands if x is not None and len(x) == 1]
            pending = [x for x in below if x not in self.of_def]
            if d not in expanded:
                expanded.add(d)
                if any(x in expanded for x in pending):
                    raise _Cycle(d)  # an operand's definition is still waiting for this one
                stack += pending
                continue
            if pending:
                raise _Cycle(d)
            ins = self.analysis.function.body[d].ins
            parts = tuple(self._part(token, x) for token, x in zip(ins.operands[1:], operands, strict=True))
            self.of_def[d] = self._number(("op", ins.opcode, len(ins.operands), parts))
            stack.pop()

    def _part(self, token: str, defs: frozenset[int] | None) -> object:
        if defs is None:
            return ("token", token)
        return self._of_set(defs)

    def _number(self, key: tuple) -> int:
        return self.table.setdefault(key, len(self.table))


def _terms(address: str | None) -> list[str]:
    """The address's parts: `%rd3+4096` -> ['%rd3'] (the offset is compared apart)."""
    if address is None:
        return []
    parts = [p.strip() for p in address.replace(" ", "").split("+")]
    return [p for p in parts if p and not re.fullmatch(r"-?(0[xX][0-9a-fA-F]+|\d+)", p)]


def reuse(function: Function, earlier: int, load: int) -> Function:
    """The function with statement `load` replaced by movs of `earlier`'s destinations."""
    body = function.body
    old, new = destinations(body[load].ins.operands[0]), destinations(body[earlier].ins.operands[0])
    declared = function_declarations(function)
    if len(old) != len(new):
        raise NotApplicable(f"{function.name}: line {body[load].ident} and line {body[earlier].ident} differ in width")
    guard = f"@{body[load].ins.guard} " if body[load].ins.guard else ""
    movs = []
    for k, (dst, src) in enumerate(zip(old, new)):
        kind = declared.type_of(dst)
        if kind is None or declared.type_of(src) != kind:
            raise NotApplicable(f"{function.name}: line {body[load].ident}: {dst} and {src} differ in declared type")
        code = f"{guard}mov{MOV_TYPE.get(kind, kind)} \t{dst}, {src};"
        movs.append(new_instruction(code, f"{body[load].ident}r{k}"))
    return function.with_body(body[:load] + tuple(movs) + body[load + 1 :])
