"""When two memory operations, or a memory operation and a barrier, must keep their order.

The rules, by state space and by provenance (reorder.ptx.analyses.provenance):

- Two accesses conflict when one writes, their spaces can overlap and their addresses are
  not known to be in different objects. Two different kernel pointer parameters are
  different objects only under `--assume-noalias` (for the parameters it names); the same
  parameter never is; two named variables are, unless both are `.shared` (every
  `extern .shared` array starts at the same address).
- `bar.sync`/`barrier.sync`/`bar.red` order every shared access and every global write. A
  global (or constant) read crosses one only when no thread of the block can have written
  its buffer before the barrier: its parameter is declared no-alias and the kernel writes
  only to other parameters (no write of unknown address, no call, no unknown instruction).
- Fences, atomics, ordered accesses (`.volatile`, `.acquire` ...), calls, asynchronous
  copies and unknown instructions are kept in order with every access and barrier.
"""

from __future__ import annotations

from dataclasses import dataclass

from reorder.ptx.analyses.provenance import UNKNOWN, Origins
from reorder.ptx.model.effects import Effect

Noalias = bool | tuple[int, ...]


@dataclass(frozen=True, slots=True)
class MemoryFacts:
    """What the whole kernel writes, and which parameters the user declared not to alias."""

    noalias: Noalias
    written: Origins  # every origin a global or generic write may touch
    writes_unknown: bool  # a write of unknown address, a call or an unknown instruction

    @property
    def declared(self) -> frozenset[int] | None:
        """Parameters declared no-alias: None means every pointer parameter."""
        return None if self.noalias is True else frozenset(self.noalias or ())


def kernel_facts(effects: tuple[Effect | None, ...], origins: dict[int, Origins], noalias: Noalias) -> MemoryFacts:
    """Collect what the kernel writes (global and generic space) for the barrier rule."""
    written: set = set()
    unknown = False
    for i, e in enumerate(effects):
        if e is None:
            continue
        if e.kind in ("full", "unknown"):
            unknown = True
        elif e.writes_memory and e.space in ("global", "generic"):
            written |= origins.get(i, frozenset({UNKNOWN}))
    return MemoryFacts(noalias, frozenset(written), unknown or UNKNOWN in written)


def distinct(a: Origins, b: Origins, facts: MemoryFacts, both_shared: bool = False) -> bool:
    """The two addresses lie in different objects."""
    if not a or not b or UNKNOWN in a or UNKNOWN in b or a & b:
        return False
    params_a = {x for x in a if isinstance(x, int)}
    params_b = {x for x in b if isinstance(x, int)}
    if not params_a and not params_b:
        return not both_shared
    if facts.noalias is False:
        return False
    declared = facts.declared
    return declared is None or (params_a == a and params_a <= declared) or (params_b == b and params_b <= declared)


def _global_like(e: Effect, origins: Origins) -> bool:
    """A global access, or a generic one through kernel pointer parameters only."""
    return e.space == "global" or (e.space == "generic" and bool(origins) and all(isinstance(x, int) for x in origins))


def _overlap(a: Effect, oa: Origins, b: Effect, ob: Origins) -> bool:
    """The two accesses' state spaces can share addresses."""
    spaces = {("global" if _global_like(e, o) else e.space) for e, o in ((a, oa), (b, ob))}
    if "const" in spaces or "param" in spaces:
        return False
    return len(spaces) == 1 or "generic" in spaces


def crosses_barrier(e: Effect, origins: Origins, facts: MemoryFacts) -> bool:
    """An access that a CTA barrier does not order (see the module docstring)."""
    if e.space == "local" or (e.space == "const" and not e.writes_memory):
        return True  # thread-private, or never written
    if e.kind != "load" or not _global_like(e, origins) or facts.noalias is False:
        return False
    params = {x for x in origins if isinstance(x, int)}
    if not params or params != set(origins) or facts.writes_unknown or params & facts.written:
        return False
    return facts.declared is None or params <= facts.declared


def conflict(a: Effect, oa: Origins, b: Effect, ob: Origins, facts: MemoryFacts) -> str | None:
    """Why b must stay after a ('unknown', 'fence', 'barrier', 'memory'), or None."""
    if a.kind == "unknown" or b.kind == "unknown":
        return "unknown"
    if a.ordered or b.ordered:
        return "fence"
    if a.kind == "barrier" and b.kind == "barrier":
        return "barrier"
    if a.kind == "barrier" or b.kind == "barrier":
        access, origins = (b, ob) if a.kind == "barrier" else (a, oa)
        return None if crosses_barrier(access, origins, facts) else "barrier"
    if not (a.writes_memory or b.writes_memory) or not _overlap(a, oa, b, ob):
        return None
    if distinct(oa, ob, facts, both_shared=a.space == "shared" and b.space == "shared"):
        return None
    return "memory"


MEMORY_KINDS = frozenset({"load", "store", "atomic", "barrier", "fence", "full", "unknown"})
