"""The PTX move registry and the walk over it: kinds run in stage order, a walk rebuilds from
its picks to the same text, the search's space holds the placements measured on the H200
(RMSNorm's 'barrier' and 'top' plans), and a kind registered from outside takes part."""

from __future__ import annotations

from pathlib import Path

import pytest

from reorder.base.errors import NotApplicable
from reorder.build.ptxcandidate import read_ptx
from reorder.ptx.space import registry
from reorder.ptx.space.plans import plan
from reorder.ptx.space.registry import OFF, Instance, MoveKind, MoveOptions, Pick, register, registered
from reorder.ptx.space.searchspace import first_stage, from_params, rebuild, walk

ROOT = Path(__file__).resolve().parent.parent
RMSNORM_PTX = ROOT / "benchmarks/kernels/ptx_candidates/source/rmsnorm.ptx"
KERNEL = "rmsnorm_triton_style"
PEELED = ("506p", "523p", "540p", "557p")  # the normalise pass's load groups once its loop is peeled


@pytest.fixture(scope="module")
def module():
    return read_ptx(RMSNORM_PTX)


@pytest.fixture
def clean_registry(monkeypatch):
    monkeypatch.setattr(registry, "_KINDS", dict(registry._KINDS))


def test_instances_start_with_off_and_are_distinct():
    with pytest.raises(ValueError):
        Instance("hoist", "1", ("top", OFF))
    with pytest.raises(ValueError):
        Instance("hoist", "1", (OFF, "top", "top"))
    assert Instance("hoist", "12", (OFF, "top")).param == "ptx.hoist.12=off|top"


def test_builtin_kinds_run_in_stage_order():
    names = [k.name for k in registered()]
    assert names.index("peel") < names.index("hoist")
    assert [k.stage for k in registered()] == sorted(k.stage for k in registered())


def test_a_taken_name_is_refused(clean_registry):
    peel = next(k for k in registered() if k.name == "peel")
    assert register(peel) is peel  # the same value again: a no-op
    with pytest.raises(ValueError):
        register(MoveKind("peel", 5, "another", lambda m, o: [], lambda m, o, p: (m, ())))


def _plan_picks(module, to: str, fallback: str) -> list[Pick]:
    options = MoveOptions(KERNEL, True)
    peeled = walk(module, options, lambda inst: "on" if inst.key == "$L__BB1_37" else OFF)
    groups = [i for i in peeled.offered if i.kind == "hoist" and i.key in PEELED]
    assert len(groups) == len(PEELED)
    return [Pick("peel", "$L__BB1_37", "on")] + [
        Pick("hoist", g.key, to if to in g.choices else fallback) for g in groups
    ]


@pytest.mark.parametrize("to,fallback", [("barrier", "store"), ("top", "top")])
def test_the_space_holds_the_measured_plans(module, to, fallback):
    """RMSNorm's normalise-pass loads above the block reduction ('barrier') or as far up as
    legal ('top'): the two candidates measured on the H200 are points of the space."""
    options = MoveOptions(KERNEL, True)
    made = rebuild(module, options, _plan_picks(module, to, fallback))
    planned, moves = plan(module, KERNEL, True, to)
    assert made.module.text == planned.text
    assert len(made.applied) == len(moves) == 9


def test_a_walk_rebuilds_from_its_parameters(module):
    options = MoveOptions(KERNEL, True)
    sampled = walk(module, options, lambda inst: inst.choices[-1])  # every decision at its last alternative
    assert sampled.picks and sampled.applied
    params = {}
    for inst in sampled.offered:
        pick = next((p for p in sampled.picks if (p.kind, p.key) == (inst.kind, inst.key)), None)
        params[inst.param] = pick.choice if pick else OFF
    again = from_params(module, options, params)
    assert again.module.text == sampled.module.text
    assert rebuild(module, options, sampled.picks).module.text == sampled.module.text


def test_a_pick_not_offered_is_refused(module):
    options = MoveOptions(KERNEL, True)
    with pytest.raises(NotApplicable):
        rebuild(module, options, [Pick("hoist", "1", "top")])
    with pytest.raises(NotApplicable):  # the peeled copy's loads exist only once the loop is peeled
        rebuild(module, options, [Pick("hoist", "523p", "barrier")])


def test_without_noalias_no_load_crosses_the_barrier(module):
    offered = first_stage(module, MoveOptions(KERNEL, False))
    assert not any("barrier" in i.choices for i in offered)


def test_an_outside_kind_takes_part_after_earlier_stages(module, clean_registry):
    """A kind registered by another module sees the module the earlier kinds left."""
    seen = []

    def instances(m, options):
        seen.append("$L__BB1_37_peel" in m.function(options.kernel).text)
        return [Instance("mark", "k", (OFF, "on"))]

    def apply(m, options, picks):
        return m, tuple(p.describe() for p in picks)

    register(MoveKind("mark", 95, "test kind", instances, apply))
    done = walk(
        module, MoveOptions(KERNEL, True), lambda inst: "on" if inst.kind == "mark" or inst.key == "$L__BB1_37" else OFF
    )
    assert seen == [True]
    assert done.applied[-1] == "mark:k@on"
