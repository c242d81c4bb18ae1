"""The PTX moves the search may make, as a registry of move kinds.

`reorder optimize` with PTX at hand searches PTX moves and SASS moves together. Its PTX part
is not a fixed list of moves: it is whatever kinds are registered here. A kind is a frozen
value with

- `name`: short, stable ('hoist', 'peel', 'reuse'); it prefixes the Optuna parameters;
- `stage`: when it runs relative to the other kinds (lower first; see STAGES);
- `instances(module, options)`: the decisions this kind offers on `module` (the module the
  earlier stages left), each an `Instance` with a stable `key` and its alternatives, OFF
  first. Only legal, distinct alternatives belong there: every one the search picks is
  built, compiled by the producer's ptxas and checked;
- `apply(module, options, picks)`: the module with the picked alternatives made (picks of
  this kind only, OFF never among them), and one description per move made, for the
  report. A pick an earlier one made impossible is skipped, not an error: the
  descriptions say what was made. Raise reorder.base.errors.NotApplicable only when nothing
  sensible is left to build.

Both functions must be pure and deterministic: a candidate is rebuilt from its picks alone
in another process (the search's build workers, the finalists, pruning), by walking the
kinds again (reorder.ptx.space.searchspace.walk). Because a later kind enumerates its instances
on the module the earlier ones left, its parameters are conditional in Optuna's sense
(define-by-run): a hoist of a peeled loop's first-iteration load exists only in trials that
peeled the loop.

To add a kind (a loop move, say): write `KIND = MoveKind(...)` beside the move, call
`register(KIND)`, and import that module from reorder/ptx/space/kinds.py, which the search imports
to see every kind. Test that each of its alternatives builds and verifies on a real PTX.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from reorder.base.errors import InputError, NotApplicable
from reorder.ptx.analyses.memory import Noalias
from reorder.ptx.model.model import Module

OFF = "off"  # every instance's first alternative: the move is not made
MAX_INSTANCES = 12  # per kind and stage: each instance is one Optuna parameter, and a study runs ~100 trials

# Conventional stages (gaps left for kinds not thought of yet).
STAGES = {
    "loop shape": 10,  # peeling: changes which loads exist, so it comes first
    "loop moves": 20,  # prefetch, unroll-and-batch
    "hoist": 30,  # loads up across stores, barriers, branches, out of loops
    "reuse": 40,  # loads that take an earlier load's value
    "async": 50,  # waits only (reorder.ptx.moves.wgmma): nothing moves, so it sees every other move's result
}


@dataclass(frozen=True, slots=True)
class MoveOptions:
    """What every kind is told: the kernel, the no-alias assumption, the instance cap."""

    kernel: str
    noalias: Noalias = False
    max_instances: int = MAX_INSTANCES


@dataclass(frozen=True, slots=True)
class Instance:
    """One decision: a kind, a key stable across rebuilds of the same module (a load's line,
    a loop's label), and the alternatives (OFF first)."""

    kind: str
    key: str
    choices: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.choices or self.choices[0] != OFF or len(set(self.choices)) != len(self.choices):
            raise ValueError(f"{self.kind}:{self.key}: choices must start with {OFF!r} and be distinct")

    @property
    def param(self) -> str:
        """The Optuna parameter name. The alternatives are part of it: Optuna requires one
        parameter name to keep one set of choices, and an instance's alternatives can
        differ with what earlier stages did."""
        return f"ptx.{self.kind}.{self.key}={'|'.join(self.choices)}"


@dataclass(frozen=True, slots=True)
class Pick:
    """An instance's chosen alternative (never OFF)."""

    kind: str
    key: str
    choice: str

    def describe(self) -> str:
        return f"{self.kind}:{self.key}@{self.choice}"


@dataclass(frozen=True, slots=True)
class MoveKind:
    """A registered kind of PTX move (see the module docstring)."""

    name: str
    stage: int
    summary: str
    instances: Callable[[Module, MoveOptions], Sequence[Instance]]
    apply: Callable[[Module, MoveOptions, Sequence[Pick]], tuple[Module, tuple[str, ...]]]


_KINDS: dict[str, MoveKind] = {}


class PtxMove(Protocol):
    def apply(self, module: Module) -> Module: ...
    def describe(self) -> str: ...


def made_in_turn(module: Module, moves: Iterable[PtxMove]) -> tuple[Module, tuple[str, ...]]:
    """The module after each move in turn and the descriptions of those made: a move an
    earlier one made impossible (NotApplicable) is skipped, as a kind's `apply` must."""
    current, done = module, []
    for move in moves:
        try:
            current = move.apply(current)
        except NotApplicable:
            continue
        done.append(move.describe())
    return current, tuple(done)


def register(kind: MoveKind) -> MoveKind:
    """Add a kind (re-registering the same value is a no-op; another under a taken name is refused)."""
    if not kind.name.isidentifier():
        raise ValueError(f"move kind name {kind.name!r}: letters, digits and _ only")
    have = _KINDS.get(kind.name)
    if have is not None and have != kind:
        raise ValueError(f"a PTX move kind named {kind.name!r} is already registered")
    _KINDS[kind.name] = kind
    return kind


def registered() -> tuple[MoveKind, ...]:
    """Every kind, in the order the search applies them (stage, then name)."""
    return tuple(sorted(_KINDS.values(), key=lambda k: (k.stage, k.name)))


def kind_named(name: str) -> MoveKind:
    if name not in _KINDS:
        raise InputError(f"no PTX move kind {name!r} (known: {', '.join(k.name for k in registered())})")
    return _KINDS[name]
