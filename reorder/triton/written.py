"""Which pointer arguments a Triton kernel's source may write through.

The aliasing guard (reorder.triton.aliasing) refuses a noalias twin's launch when two
tensors share memory; two *read-only* arguments given the same tensor (attention called as
`attn(x, x, x, out)`) break no promise a move relies on: a move only reorders a load with a
store. So when tensors overlap, the guard asks this module whether one of them is written.

From the kernel's own source (a JITFunction's `src`): every name is tainted by the
arguments it is computed from (assignments, augmented assignments, loop targets, to a fixed
point); a value loaded from memory (`tl.load`, a descriptor's `.load`) is data, tainted by
no argument but marked as loaded. `tl.store` and the `tl.atomic_*` calls write through the
arguments their pointer operand is computed from (a loaded value in it is an offset: a
gather's index), a method `.store(...)` (a tensor descriptor, a block pointer) through its
receiver's; a store whose pointer comes from loaded values alone (a pointer read from
memory) makes the answer unknown (None), as does inline assembly, or a call the module
cannot name (another `@triton.jit` function) given an argument-derived value (one given
loaded data alone, `silu(x)`, has no argument to store through). Names bound to
Triton's own functions (`tl`, libdevice's `rsqrt`, `tanh`: `pure`) are calls on data.
Unknown makes the guard treat every argument as written: it only refuses more.
"""

from __future__ import annotations

import ast
import textwrap
from functools import lru_cache

LOADED = "<loaded>"  # the taint of a value read from memory
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
def written_args(src: str, arg_names: tuple[str, ...], pure: frozenset[str] = frozenset()) -> frozenset[str] | None:
    """Which of `arg_names` (the launch's tensor arguments: the taint's sources) the kernel
    may store through; None when that cannot be told. `pure`: the names the kernel's module
    binds to Triton's own functions."""
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
        found = _call_writes(node, taint, pure)
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
    """The arguments `expr` is computed from; LOADED for a value read from memory."""
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "load":
        return frozenset({LOADED})
    if isinstance(expr, ast.Name):
        return taint.get(expr.id, frozenset())
    out: frozenset[str] = frozenset()
    for child in ast.iter_child_nodes(expr):
        out |= _taint_of(child, taint)
    return out


def _call_writes(call: ast.Call, taint: dict[str, frozenset[str]], pure: frozenset[str]) -> frozenset[str] | None:
    """What one call may write: a store's pointer arguments, nothing for a call on data, None
    for a store through a pointer read from memory or an unknown call given tainted values."""
    func = call.func
    operands = [*call.args, *(k.value for k in call.keywords)]
    if isinstance(func, ast.Attribute):
        if func.attr in STORES:
            pointer = (
                call.args[0]
                if call.args
                else next((k.value for k in call.keywords if k.arg in ("pointer", "ptr")), None)
            )
            through = _taint_of(func.value, taint) | (_taint_of(pointer, taint) if pointer is not None else frozenset())
            args = through - {LOADED}
            return None if through == {LOADED} else args  # through a pointer read from memory: unknown
        if "inline_asm" in func.attr:
            return None
        return frozenset()  # tl.load, tl.where, x.to(...), libdevice.tanh: no memory written
    if isinstance(func, ast.Name) and (func.id in HARMLESS or func.id in pure):
        return frozenset()
    if any(_taint_of(x, taint) - {LOADED} for x in operands):
        return None  # a called function given a pointer: it may store through it
    return frozenset()  # a function given data only (silu(x)) has no argument to store through
