"""Which kernel parameter (or named variable) a memory address derives from.

A forward may-analysis over the CFG: a 64-bit `ld.param` of parameter k carries {k}; a
`mov` of a variable's name carries that variable; any computation carries the union of
what its operands carry (pointer arithmetic stays inside the object it started from, as in
C); a loaded value carries nothing. An address that carries nothing may point anywhere
(UNKNOWN). Used by the dependency graph to tell two buffers apart, and only under an
explicit no-alias assumption for parameters (two different pointer parameters may point
into one buffer unless the user says they do not).
"""

from __future__ import annotations

import re

from reorder.ptx.analyses.cfg import Cfg
from reorder.ptx.model.effects import Effect

UNKNOWN = "unknown"
Origins = frozenset  # of int (parameter index) and str ('sym:NAME', UNKNOWN)
_POINTER_TYPES = ("u64", "b64", "s64")
_NAME = re.compile(r"[A-Za-z_$][\w$]*")


def address_origins(cfg: Cfg, effects: tuple[Effect | None, ...]) -> dict[int, Origins]:
    """statement index of each memory access -> what its address may derive from
    ({UNKNOWN} when nothing is known). Iterated in reverse postorder to a fixed point."""
    function = cfg.function
    exit_: dict[int, dict[str, Origins]] = {}
    out: dict[int, Origins] = {}
    changed = True
    while changed:
        changed = False
        for b in cfg.reverse_postorder:
            carries: dict[str, Origins] = {}
            for p in cfg.graph.predecessors(b):
                for reg, origins in exit_.get(p, {}).items():
                    carries[reg] = carries.get(reg, frozenset()) | origins
            for i in cfg.blocks[b].instructions:
                effect = effects[i]
                if effect.kind in ("load", "store", "atomic"):
                    out[i] = _address(effect, carries, function)
                _transfer(function.body[i].ins, effect, carries, function)
            if carries != exit_.get(b):
                exit_[b] = carries
                changed = True
    return out


def _address(effect: Effect, carries: dict[str, Origins], function) -> Origins:
    found: set = set()
    for reg in effect.address:
        found |= carries.get(reg, frozenset())
    if effect.symbol is not None:
        index = function.param_index(effect.symbol)
        found.add(index if index is not None else f"sym:{effect.symbol}")
    return frozenset(found) if found else frozenset({UNKNOWN})


def _transfer(ins, effect: Effect, carries: dict[str, Origins], function) -> None:
    """Update what each register written by `ins` carries."""
    if not effect.defs:
        return
    incoming: set = set()
    if effect.kind == "param":
        index = function.param_index(effect.symbol)
        if index is not None and any(m in _POINTER_TYPES for m in ins.modifiers):
            incoming.add(index)
    elif effect.kind == "pure":
        for reg in effect.uses:
            incoming |= carries.get(reg, frozenset())
        if ins.base in ("mov", "cvta"):
            incoming |= {f"sym:{name}" for o in ins.operands[1:] if (name := _symbol(o))}
    for reg in effect.defs:  # only registers that carry something are kept: most carry nothing
        value = frozenset(incoming) | (carries.get(reg, frozenset()) if ins.guard else frozenset())
        if value:
            carries[reg] = value
        else:
            carries.pop(reg, None)


def _symbol(operand: str) -> str | None:
    """The variable an operand names (`slots`, `slots+16`), None for registers and numbers."""
    name = operand.split("+", 1)[0].strip()
    return name if _NAME.fullmatch(name) else None
