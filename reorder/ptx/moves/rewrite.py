"""The PTX text of a hoist: the group moved, the load predicated and writing fresh registers.

Registers are declared, never renamed in place: a move adds `.reg TYPE %hTYPE_<N>;` lines
(and `.reg .pred %hp<N>;` for the guards it combines) after the function's own
declarations, growing them on the next move, so every name it introduces is new to the
function. Moved statements keep their text; the load's text changes only in its guard and
destination operand.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from reorder.base.errors import NotApplicable
from reorder.ptx.analyses.analysis import Analysis
from reorder.ptx.analyses.legality import Plan
from reorder.ptx.model.instruction import with_guard
from reorder.ptx.model.lexer import Piece
from reorder.ptx.model.model import Function, Statement, make_statement, new_instruction
from reorder.ptx.model.registers import depth_of, function_declarations

PREDICATE_STEM = "%hp"  # predicates a move declares for the guards it builds
_MOV_TYPE = {".f16": ".b16", ".bf16": ".b16", ".f16x2": ".b32", ".bf16x2": ".b32"}  # mov has no such types


def rewrite(function: Function, plan: Plan, analysis: Analysis) -> Function:
    """The function with the plan's group moved before `plan.at`.

    The moved load writes fresh registers, and a `mov` at its old place (under its old
    guard, if it had one) copies them to the registers the rest of the kernel reads: the
    value is still delivered where and when the original delivered it, so the load's own
    destinations impose nothing on the move, and liveness stays exact (ptxas folds the
    copies away).
    """
    body = function.body
    load = body[plan.load]
    needs, fresh, declarations = _fresh_destinations(function, load)
    temps, declaration = _allocate(function, ".pred", PREDICATE_STEM, _temporaries_needed(plan, analysis))
    declarations.append(declaration)
    combine, guard = _guard(plan, analysis, temps)
    group = [body[i] for i in plan.members[:-1]] + combine + [_guarded(_renamed(load, fresh), guard)]
    copies = [_copy(load, kind, reg, fresh[reg]) for kind, regs in needs.items() for reg in regs]
    gone = set(plan.members)
    out: list[Statement] = []
    for i, s in enumerate(body):
        if i == plan.at:
            out += group
        if i == plan.load:
            out += copies
        elif i not in gone:
            out.append(s)
    return _declare(function.with_body(out), [d for d in declarations if d])


def _fresh_destinations(function: Function, load: Statement):
    """The load's destinations by type, a fresh register for each, and their declarations."""
    declared = function_declarations(function)
    needs: dict[str, list[str]] = {}
    for reg in _destinations(load):
        needs.setdefault(declared.type_of(reg) or "", []).append(reg)
    if "" in needs:
        raise NotApplicable(f"{function.name}: line {load.ident} writes a register with no declared type")
    fresh: dict[str, str] = {}
    declarations = []
    for kind, regs in needs.items():
        names, declaration = _allocate(function, kind, _stem(kind), len(regs))
        fresh.update(zip(regs, names))
        declarations.append(declaration)
    return needs, fresh, declarations


def _destinations(load: Statement) -> list[str]:
    """The registers a load writes (`{%f1, %f2}` or `%r3`), in operand order."""
    return re.findall(r"[%A-Za-z_$][\w$]*", load.ins.operands[0])


def _stem(kind: str) -> str:
    """The family name of fresh registers of one type: %hf32_0, %hb64_3 ..."""
    return f"%h{kind.lstrip('.')}_"


def _verbatim(text: str) -> Callable[[re.Match[str]], str]:
    """A re.sub replacement that inserts `text` as it is (no backslash or group escapes)."""
    return lambda _: text


def _renamed(load: Statement, fresh: dict[str, str]) -> Statement:
    """The load writing fresh registers (only its destination operand is rewritten)."""
    cut = load.text.index("[")
    head = load.text[:cut]
    for old, new in fresh.items():
        head = re.sub(rf"(?<![\w$]){re.escape(old)}(?![\w$])", _verbatim(new), head)
    return load.retext(head + load.text[cut:])


def _copy(load: Statement, kind: str, reg: str, fresh: str) -> Statement:
    """`mov.TYPE reg, fresh;` at the load's old place, under the load's own guard."""
    guard = f"@{load.ins.guard} " if load.ins.guard else ""
    code = f"{guard}mov{_MOV_TYPE.get(kind, kind)} \t{reg}, {fresh};"
    return new_instruction(code, f"{load.ident}c{reg}")


def _literals(plan: Plan, analysis: Analysis) -> list[tuple[str, bool]]:
    """(predicate register, must be true) for every decision on the way, and the load's own guard."""
    out = []
    for branch, held in sorted(plan.guard.literals):
        ins = analysis.function.body[branch].ins
        out.append((ins.guard_register, held != ins.guard_negated))
    own = analysis.function.body[plan.load].ins
    if own.guard:
        out.append((own.guard_register, not own.guard_negated))
    return out


def _temporaries_needed(plan: Plan, analysis: Analysis) -> int:
    literals = _literals(plan, analysis)
    if len(literals) < 2:
        return 0
    if all(positive for _, positive in literals) or not any(positive for _, positive in literals):
        return len(literals) - 1
    return len(literals) - 1 + sum(not positive for _, positive in literals)


def _guard(plan: Plan, analysis: Analysis, names: list[str]) -> tuple[list[Statement], str | None]:
    """The statements combining the decisions into one predicate, and the load's guard."""
    literals = _literals(plan, analysis)
    if not literals:
        return [], None
    if len(literals) == 1:
        reg, positive = literals[0]
        return [], reg if positive else "!" + reg
    ident = analysis.function.body[plan.load].ident
    temps = iter(names)
    out: list[str] = []
    negative = not any(positive for _, positive in literals)
    if negative or all(positive for _, positive in literals):
        op = "or" if negative else "and"
        regs = [r for r, _ in literals]
    else:
        op, regs = "and", []
        for reg, positive in literals:
            if not positive:
                temp = next(temps)
                out.append(f"not.pred \t{temp}, {reg};")
                reg = temp
            regs.append(reg)
    current = regs[0]
    for reg in regs[1:]:
        temp = next(temps)
        out.append(f"{op}.pred \t{temp}, {current}, {reg};")
        current = temp
    statements = [new_instruction(code, f"{ident}g{k}") for k, code in enumerate(out)]
    return statements, ("!" + current if negative else current)


def _guarded(load: Statement, guard: str | None) -> Statement:
    return load if guard == load.ins.guard else load.retext(with_guard(load.text, guard))


def _allocate(function: Function, kind: str, stem: str, count: int) -> tuple[list[str], tuple | None]:
    """`count` fresh registers of one type named stem0, stem1 ... after those a move already
    declared, and the declaration that makes them exist (None when count is 0)."""
    if count == 0:
        return [], None
    have = _declared_count(function, stem)
    if have == 0 and function_declarations(function).declares(f"{stem}0"):
        raise NotApplicable(f"{function.name}: {stem} registers are already declared by the producer")
    return [f"{stem}{k}" for k in range(have, have + count)], (kind, stem, have + count)


def _declaration(stem: str) -> re.Pattern:
    return re.compile(rf"\.reg\s+(\.\w+)\s+{re.escape(stem)}<(\d+)>\s*;")


def _declared_count(function: Function, stem: str) -> int:
    depth = depth_of(function)
    for i, s in enumerate(function.body):
        match = s.kind == "directive" and depth[i] == 0 and _declaration(stem).fullmatch(s.code)
        if match:
            return int(match.group(2))
    return 0


def _declare(function: Function, declarations: list[tuple[str, str, int]]) -> Function:
    """Grow each `.reg TYPE STEM<N>;` a move declared before, or add it after the function's
    own `.reg` lines."""
    body = list(function.body)
    depth = depth_of(function)
    for kind, stem, count in declarations:
        code = f".reg {kind} \t{stem}<{count}>;"
        found = [
            i
            for i, s in enumerate(body)
            if s.kind == "directive" and depth[i] == 0 and _declaration(stem).fullmatch(s.code)
        ]
        if found:
            body[found[0]] = body[found[0]].retext(f"\t{code}\n")
            continue
        last = max(
            (i for i, s in enumerate(body) if s.kind == "directive" and depth[i] == 0 and s.code.startswith(".reg")),
            default=-1,
        )
        body.insert(last + 1, make_statement(Piece("directive", f"\t{code}\n", code, True), f"decl{stem}"))
        depth = depth[: last + 1] + (0,) + depth[last + 1 :]
    return function.with_body(body)
