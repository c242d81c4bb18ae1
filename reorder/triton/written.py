"""Which pointer arguments a Triton kernel's source may write through.

The aliasing guard (reorder.triton.aliasing) refuses a noalias twin's launch when two
tensors share memory; two *read-only* arguments given the same tensor (attention called as
`attn(x, x, x, out)`) break no promise a move relies on: a move only reorders a load with a
store. So when tensors overlap, the guard asks this module whether one of them is written.

From the kernel's own source (a JITFunction's `src`): every name is tainted by the
arguments it is computed from (assignments, augmented assignments, loop targets, to a fixed
point); `tl.store` and the `tl.atomic_*` calls write through their pointer operand's taint,
a method `.store(...)` (a tensor descriptor, a block pointer) through its receiver's. Any
call the module does not know that receives a tainted value (a helper `@triton.jit`
function, inline assembly) makes the answer unknown (None), and the guard then treats every
argument as written. The taint over-approximates (a value loaded through a pointer carries
that pointer's taint), which only makes the guard refuse more.
"""

from __future__ import annotations

import ast
import textwrap
from functools import lru_cache

STORES = frozenset(
    {
        "store",
        "atomic_add",
        "atomic_and",
        "atomic_cas",
        "atomic_max",
        "atomic_min",
        "atomic_or",
        "atomic_xchg",
        "atomic_xor",
    }
)
HARMLESS = frozenset({"range", "static_range", "min", "max", "len", "int", "float", "bool", "print", "static_print"})


@lru_cache(maxsize=256)
def written_args(src: str, arg_names: tuple[str, ...]) -> frozenset[str] | None:
    """Which of `arg_names` (the launch's tensor arguments: the taint's sources) the kernel
    may store through; None when that cannot be told."""
    try:
        tree = ast.parse(textwrap.dedent(src))
    except SyntaxError:
        return None
    taint: dict[str, frozenset[str]] = {a: frozenset({a}) for a in arg_names}
    flows = [f for node in ast.walk(tree) for f in _flows(node)]
    for _ in range(16):
        changed = False
        for targets, value in flows:
            t = _taint_of(value, taint)
            for name in targets:
                if not t <= taint.get(name, frozenset()):
                    taint[name] = taint.get(name, frozenset()) | t
                    changed = True
        if not changed:
            break
    written: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        found = _call_writes(node, taint)
        if found is None:
            return None
        written |= found
    return frozenset(written & set(arg_names))


def _flows(node: ast.AST) -> list[tuple[list[str], ast.AST]]:
    """(names written, the expression they come from) for an assignment-like node."""
    if isinstance(node, ast.Assign):
        return [(_names(t), node.value) for t in node.targets]
    if isinstance(node, ast.AugAssign):
        return [(_names(node.target), ast.BinOp(node.target, node.op, node.value))]
    if isinstance(node, ast.AnnAssign) and node.value is not None:
        return [(_names(node.target), node.value)]
    if isinstance(node, ast.NamedExpr):
        return [(_names(node.target), node.value)]
    if isinstance(node, ast.For):
        return [(_names(node.target), node.iter)]
    if isinstance(node, ast.With):
        return [(_names(i.optional_vars), i.context_expr) for i in node.items if i.optional_vars is not None]
    return []


def _names(target: ast.AST | None) -> list[str]:
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)] if target is not None else []


def _taint_of(expr: ast.AST, taint: dict[str, frozenset[str]]) -> frozenset[str]:
    out: frozenset[str] = frozenset()
    for n in ast.walk(expr):
        if isinstance(n, ast.Name):
            out |= taint.get(n.id, frozenset())
    return out


def _call_writes(call: ast.Call, taint: dict[str, frozenset[str]]) -> frozenset[str] | None:
    """What one call may write: a store's pointer taint, nothing for a known pure call, None
    for an unknown call given a tainted value."""
    func = call.func
    operands = [*call.args, *(k.value for k in call.keywords)]
    if isinstance(func, ast.Attribute):
        receiver = _taint_of(func.value, taint)
        if func.attr in STORES:
            pointer = (
                call.args[0]
                if call.args
                else next((k.value for k in call.keywords if k.arg in ("pointer", "ptr")), None)
            )
            return receiver | (_taint_of(pointer, taint) if pointer is not None else frozenset())
        if "inline_asm" in func.attr:
            return None
        return frozenset()  # tl.load, tl.where, x.to(...), tl.math.*: no memory written
    if isinstance(func, ast.Name) and func.id in HARMLESS:
        return frozenset()
    if any(_taint_of(x, taint) for x in operands):
        return None  # a helper function given a pointer (or a value derived from one)
    return frozenset()
