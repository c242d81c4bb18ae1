"""The PTX part of a candidate: a walk over the registered move kinds (reorder.ptx.space.registry).

One function, `walk`, both samples a candidate (its `decide` asks the Optuna trial) and
rebuilds one (its `decide` reads the picks or the trial's parameters back): the kinds run
in stage order, each enumerating its instances on the module the earlier ones left, so a
rebuild from the same picks makes the same PTX, byte for byte, in any process.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass

import reorder.ptx.space.kinds  # noqa: F401  (registers the built-in kinds)
from reorder.base.errors import NotApplicable
from reorder.ptx.model.model import Module
from reorder.ptx.space.registry import OFF, Instance, MoveKind, MoveOptions, Pick, registered


@dataclass(frozen=True, slots=True)
class Walk:
    """A walk's result: the moved module, every decision offered on the way, the picks
    taken (not OFF), and one description per move made."""

    module: Module
    offered: tuple[Instance, ...]
    picks: tuple[Pick, ...]
    applied: tuple[str, ...]


Offers = dict[tuple[str, int, MoveOptions], tuple[Module, tuple[Instance, ...]]]


def walk(
    module: Module,
    options: MoveOptions,
    decide: Callable[[Instance], str],
    kinds: Collection[str] | None = None,
    offers: Offers | None = None,
) -> Walk:
    """Run every registered kind in stage order, asking `decide` for each instance.

    `kinds`: only these kinds are walked (a kind left out is one whose every instance would be
    decided OFF: it changes nothing, it is only not listed in `offered`). `offers`: instances
    already enumerated, by kind and module (a caller walking several menus over one module
    enumerates each kind's instances on each module once; the module is held with its entry,
    so its id is not reused)."""
    offered: list[Instance] = []
    picks: list[Pick] = []
    applied: list[str] = []
    current = module
    for kind in registered():
        if kinds is not None and kind.name not in kinds:
            continue
        instances = _instances(kind, current, options, offers)
        offered += instances
        chosen = [Pick(kind.name, inst.key, c) for inst in instances if (c := decide(inst)) != OFF]
        if chosen:
            current, made = kind.apply(current, options, chosen)
            picks += chosen
            applied += made
    return Walk(current, tuple(offered), tuple(picks), tuple(applied))


def _instances(kind: MoveKind, module: Module, options: MoveOptions, offers: Offers | None) -> list[Instance]:
    if offers is None:
        return list(kind.instances(module, options))
    key = (kind.name, id(module), options)
    held = offers.get(key)
    if held is None or held[0] is not module:
        held = (module, tuple(kind.instances(module, options)))
        offers[key] = held
    return list(held[1])


def rebuild(module: Module, options: MoveOptions, picks: Iterable[Pick]) -> Walk:
    """The walk that takes exactly `picks` (NotApplicable when one is not offered any more:
    the candidate cannot be made again as it was)."""
    wanted = {(p.kind, p.key): p.choice for p in picks}

    def decide(inst: Instance) -> str:
        choice = wanted.pop((inst.kind, inst.key), OFF)
        if choice not in inst.choices:
            raise NotApplicable(f"PTX move {inst.kind}:{inst.key}@{choice} is not offered on this kernel")
        return choice

    done = walk(module, options, decide)
    if wanted:
        missing = ", ".join(f"{k}:{key}@{c}" for (k, key), c in wanted.items())
        raise NotApplicable(f"PTX moves not offered on this kernel: {missing}")
    return done


def from_params(module: Module, options: MoveOptions, params: Mapping[str, object]) -> Walk:
    """The walk a finished trial took, from its parameters (absent parameters are OFF)."""
    return walk(module, options, lambda inst: str(params.get(inst.param, OFF)))


def first_stage(module: Module, options: MoveOptions) -> tuple[Instance, ...]:
    """The decisions offered when nothing is picked (what a space summary counts)."""
    return walk(module, options, lambda inst: OFF).offered
