"""When two memory operations, or a memory operation and a barrier, must keep their order.

The rules, by state space and by provenance (reorder.ptx.analyses.provenance):

- Two accesses conflict when one writes, their spaces can overlap and their addresses are
  not known to be in different objects. Two different kernel pointer parameters are
  different objects only under `--assume-noalias` (for the parameters it names); the same
  parameter never is; two named variables are, unless both are `.shared` (every
  `extern .shared` array starts at the same address).
- `bar.sync`/`barrier.sync`/`bar.red` order every shared access and every global write. A
  global (or constant) read crosses one only when no thread of the block can have written
  its buffer on the other side: its parameter is declared no-alias and no write to it (nor
  one of unknown address, a call or an unknown instruction) can run before the barrier, for
  a read rising above it, or after it, for a read sinking below it. For an aligned barrier
  (`bar.sync`, `bar.red`, `barrier.sync.aligned`: every thread waits at the same
  instruction) that is a question of which writes reach it in the control-flow graph
  (reorder.ptx.analyses.phases); for any other barrier, of whether the kernel writes the
  buffer at all.
- Fences, atomics, ordered accesses (`.volatile`, `.acquire` ...), calls, asynchronous
  copies and unknown instructions are kept in order with every access and barrier.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from reorder.ptx.analyses.provenance import UNKNOWN, Origins
from reorder.ptx.model.effects import Effect

Noalias = bool | tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Writes:
    """What some global or generic writes may touch: their origins, and whether one of them
    (or a call, or an unknown instruction) writes where no origin says."""

    origins: Origins
    unknown: bool


@dataclass(frozen=True, slots=True)
class Sides:
    """The writes some thread may make before arriving at one aligned barrier, and after
    leaving it (reorder.ptx.analyses.phases)."""

    before: Writes
    after: Writes


@dataclass(frozen=True, slots=True)
class MemoryFacts:
    """What the whole kernel writes, what may be written on each side of each aligned barrier,
    and which parameters the user declared not to alias."""

    noalias: Noalias
    written: Origins  # every origin a global or generic write may touch
    writes_unknown: bool  # a write of unknown address, a call or an unknown instruction
    sides: Mapping[int, Sides] = field(default_factory=dict, compare=False, hash=False)

    @property
    def declared(self) -> frozenset[int] | None:
        """Parameters declared no-alias: None means every pointer parameter."""
        return None if self.noalias is True else frozenset(self.noalias or ())

    def writes_beside(self, barrier: int | None, above: bool) -> Writes:
        """The writes that matter to a read crossing `barrier` (rising above it, or sinking
        below it): that side's for an aligned barrier, the whole kernel's otherwise."""
        sides = self.sides.get(barrier) if barrier is not None else None
        if sides is None:
            return Writes(self.written, self.writes_unknown)
        return sides.before if above else sides.after


def writes_of(effects: tuple[Effect | None, ...], origins: dict[int, Origins], statements: Iterable[int]) -> Writes:
    """What the global and generic writes among `statements` may touch."""
    written: set = set()
    unknown = False
    for i in statements:
        e = effects[i]
        if e is None:
            continue
        if e.kind in ("full", "unknown"):
            unknown = True
        elif e.writes_memory and e.space in ("global", "generic"):
            written |= origins.get(i, frozenset({UNKNOWN}))
    return Writes(frozenset(written), unknown or UNKNOWN in written)


def kernel_facts(
    effects: tuple[Effect | None, ...],
    origins: dict[int, Origins],
    noalias: Noalias,
    sides: Mapping[int, Sides] | None = None,
) -> MemoryFacts:
    """Collect what the kernel writes (global and generic space) for the barrier rule."""
    whole = writes_of(effects, origins, range(len(effects)))
    return MemoryFacts(noalias, whole.origins, whole.unknown, dict(sides or {}))


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


def crosses_barrier(
    e: Effect, origins: Origins, facts: MemoryFacts, barrier: int | None = None, above: bool = True
) -> bool:
    """An access that a CTA barrier does not order (see the module docstring): `barrier` is
    the barrier's statement when known, `above` whether the access would rise above it."""
    if e.space == "local" or (e.space == "const" and not e.writes_memory):
        return True  # thread-private, or never written
    if e.kind != "load" or not _global_like(e, origins) or facts.noalias is False:
        return False
    params = {x for x in origins if isinstance(x, int)}
    writes = facts.writes_beside(barrier, above)
    if not params or params != set(origins) or writes.unknown or params & writes.origins:
        return False
    return facts.declared is None or params <= facts.declared


def conflict(
    a: Effect, oa: Origins, b: Effect, ob: Origins, facts: MemoryFacts, at: tuple[int, int] | None = None
) -> str | None:
    """Why b must stay after a ('unknown', 'fence', 'barrier', 'memory'), or None; `at` are
    their statements when known (a barrier's own sides then decide, see the module docstring)."""
    if a.kind == "unknown" or b.kind == "unknown":
        return "unknown"
    if a.ordered or b.ordered:
        return "fence"
    if a.kind == "barrier" and b.kind == "barrier":
        return "barrier"
    if a.kind == "barrier" or b.kind == "barrier":
        above = a.kind == "barrier"  # the access comes after the barrier: it would rise above it
        access, origins = (b, ob) if above else (a, oa)
        barrier = None if at is None else at[0] if above else at[1]
        return None if crosses_barrier(access, origins, facts, barrier, above) else "barrier"
    if not (a.writes_memory or b.writes_memory) or not _overlap(a, oa, b, ob):
        return None
    if distinct(oa, ob, facts, both_shared=a.space == "shared" and b.space == "shared"):
        return None
    return "memory"


MEMORY_KINDS = frozenset({"load", "store", "atomic", "barrier", "fence", "full", "unknown"})
