"""GlobalHoist legality on small kernels, one rule each, with the negative cases: a load never
moves past a store to its own buffer, a shared load never past bar.sync, a load never runs
where the original would not have run it, and a load whose address changes never leaves
its loop. Every move that is made prints PTX ptxas compiles."""

from __future__ import annotations

import subprocess

import ptx_sources  # tests/ptx_sources.py
import pytest

from reorder.base.errors import NotApplicable
from reorder.binary.tools import have_tool
from reorder.ptx.analyses.analysis import Analysis
from reorder.ptx.analyses.legality import Planner
from reorder.ptx.model.model import Module, parse_module
from reorder.ptx.moves.hoist import GlobalHoist, choose, targets
from reorder.ptx.moves.peel import PeelLoop

SKIP = """
	setp.ne.s32 	%p1, %r1, 0;
	@%p1 bra 	$L__BB0_2;
"""


def _module(body: str) -> Module:
    return parse_module(ptx_sources.kernel(body))


def _load(module: Module, address: str) -> tuple[Planner, int]:
    """The planner and the statement of the global load from `address` (e.g. '%rd6+8')."""
    planner = Planner(Analysis(module.kernels[0], noalias=getattr(module, "noalias", False)))
    for i, s in enumerate(planner.analysis.function.body):
        if s.kind == "instruction" and s.ins.base == "ld" and s.ins.address() == address:
            return planner, i
    raise AssertionError(address)


def _destinations(body: str, address: str, noalias=False):
    planner = Planner(Analysis(_module(body).kernels[0], noalias=noalias))
    load = next(
        i
        for i, s in enumerate(planner.analysis.function.body)
        if s.kind == "instruction" and s.ins.base == "ld" and s.ins.address() == address
    )
    found, stopped = targets(planner, load)
    return planner, load, found, stopped


def _compiles(text: str, tmp_path) -> None:
    if not have_tool("ptxas"):
        return
    path = tmp_path / "moved.ptx"
    path.write_text(text)
    done = subprocess.run(
        ["ptxas", "-O3", "-arch=sm_90", str(path), "-o", str(tmp_path / "moved.cubin")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def _hoisted(module: Module, address: str, to: str, noalias) -> Module:
    planner = Planner(Analysis(module.kernels[0], noalias))
    ident = next(
        s.ident
        for s in planner.analysis.function.body
        if s.kind == "instruction" and s.ins.base == "ld" and s.ins.address() == address
    )
    return GlobalHoist("k", ident, to, noalias).apply(module)


def _order(module: Module) -> list[str]:
    return [s.code for s in module.kernels[0].body if s.kind == "instruction"]


# ---- stores ------------------------------------------------------------------------------

STORE_THEN_LOAD = (
    """
	ld.global.f32 	%f1, [%rd6];
	st.global.f32 	[%rd{store}+4], %f1;
"""
    + SKIP
    + """
	ld.global.f32 	%f2, [%rd6+8];
	st.global.f32 	[%rd7+8], %f2;
$L__BB0_2:
"""
)


def test_never_past_a_store_to_the_same_buffer():
    body = STORE_THEN_LOAD.format(store=6)  # x[tid+1] = ...; then a load of x
    for noalias in (False, True):
        _, _, found, _ = _destinations(body, "%rd6+8", noalias)
        assert found and not any("store" in t.plan.crosses for t in found)  # out of the if, not past the store
        with pytest.raises(NotApplicable):
            _hoisted(_module(body), "%rd6+8", "store", noalias)
    moved = _order(_hoisted(_module(body), "%rd6+8", "top", True))
    store = next(i for i, c in enumerate(moved) if c.startswith("st.global.f32 \t[%rd6+4]"))
    load = next(i for i, c in enumerate(moved) if "[%rd6+8]" in c and c.startswith("@"))
    assert store < load


def test_past_a_store_to_another_buffer_only_under_noalias(tmp_path):
    body = STORE_THEN_LOAD.format(store=7)  # y[tid+1] = ...; then a load of x
    _, _, found, _ = _destinations(body, "%rd6+8", False)
    assert not any("store" in t.plan.crosses for t in found)
    for noalias in (True, (0,), (1,)):
        _, _, found, _ = _destinations(body, "%rd6+8", noalias)
        assert any("store" in t.plan.crosses for t in found), noalias
    _, _, found, _ = _destinations(body, "%rd6+8", (2,))  # neither buffer declared
    assert not any("store" in t.plan.crosses for t in found)
    moved = _hoisted(_module(body), "%rd6+8", "store", True)
    codes = _order(moved)
    load = next(i for i, c in enumerate(codes) if "[%rd6+8]" in c)
    assert codes[load].startswith("@!%p1 ld.global.f32") and load < codes.index("st.global.f32 \t[%rd7+4], %f1;")
    _compiles(moved.text, tmp_path)


# ---- barriers ----------------------------------------------------------------------------

BARRIER = (
    """
	ld.global.f32 	%f1, [%rd6];
	st.shared.f32 	[smem], %f1;
	bar.sync 	0;
"""
    + SKIP
    + """
	ld.shared.f32 	%f2, [smem+4];
	ld.global.f32 	%f3, [%rd6+{offset}];
	add.f32 	%f4, %f2, %f3;
	st.global.f32 	[%rd{store}], %f4;
$L__BB0_2:
"""
)


def test_a_shared_load_never_crosses_bar_sync():
    body = BARRIER.format(offset=4, store=7)
    analysis = Analysis(_module(body).kernels[0], noalias=True)
    body_ = analysis.function.body
    bar = next(i for i, s in enumerate(body_) if s.code.startswith("bar.sync"))
    shared = next(i for i, s in enumerate(body_) if s.code.startswith("ld.shared"))
    assert analysis.graph.edges[bar, shared]["kind"] == "barrier"
    assert not Planner(analysis).hoistable_load(shared)  # GlobalHoist moves global and constant loads only


def test_a_global_load_crosses_bar_sync_only_when_no_thread_can_have_written_its_buffer(tmp_path):
    body = BARRIER.format(offset=4, store=7)  # the kernel writes only y
    planner, load, found, _ = _destinations(body, "%rd6+4", False)
    bar = next(i for i, s in enumerate(planner.analysis.function.body) if s.code.startswith("bar.sync"))
    assert found and all("barrier" not in t.plan.crosses and t.plan.at > bar for t in found)
    refusal = planner._try(load, bar, found[0].plan.guard)
    assert "barrier dependence" in refusal.reason and refusal.blocker == bar
    _, _, found, _ = _destinations(body, "%rd6+4", True)
    assert any("barrier" in t.plan.crosses for t in found)
    moved = _hoisted(_module(body), "%rd6+4", "barrier", True)
    codes = _order(moved)
    assert next(i for i, c in enumerate(codes) if "[%rd6+4]" in c) < codes.index("bar.sync \t0;")
    _compiles(moved.text, tmp_path)
    # x written only after the barrier: no thread can have stored it before arriving there
    _, _, found, _ = _destinations(BARRIER.format(offset=4, store=6), "%rd6+4", True)
    assert any("barrier" in t.plan.crosses for t in found)
    # x written before the barrier: another thread may have stored what this one loads
    early = BARRIER.format(offset=4, store=7).replace("\tbar.sync", "\tst.global.f32 \t[%rd6], %f1;\n\tbar.sync", 1)
    _, _, found, _ = _destinations(early, "%rd6+4", True)
    assert found and not any("barrier" in t.plan.crosses for t in found)


def test_fences_and_atomics_are_full_barriers():
    for fence in ("membar.gl;", "fence.acq_rel.gpu;", "atom.global.add.u32 \t%r9, [%rd7], 1;"):
        body = f"\t{fence}\n" + SKIP + "\tld.global.f32 \t%f2, [%rd6];\n\tst.global.f32 \t[%rd7], %f2;\n$L__BB0_2:\n"
        planner, load, found, _ = _destinations(body, "%rd6", True)
        kept = next(i for i, s in enumerate(planner.analysis.function.body) if s.code == fence)
        assert found and all(t.plan.at > kept for t in found), fence
        refusal = planner._try(load, kept, found[0].plan.guard)
        assert refusal.reason.startswith("fence dependence") and refusal.blocker == kept


# ---- control: never a speculative load ----------------------------------------------------


def test_out_of_an_if_only_predicated_by_its_condition(tmp_path):
    body = SKIP + "\tld.global.f32 \t%f2, [%rd6];\n\tst.global.f32 \t[%rd7], %f2;\n$L__BB0_2:\n"
    moved = _hoisted(_module(body), "%rd6", "top", True)
    codes = _order(moved)
    load = next(c for c in codes if "[%rd6]" in c)
    assert load.startswith("@!%p1 ld.global.f32")  # it runs exactly when the branch falls through
    assert codes.index(load) < codes.index("@%p1 bra \t$L__BB0_2;")
    assert "mov.f32 \t%f2, %hf32_0;" in codes  # the value arrives where the load was
    _compiles(moved.text, tmp_path)


def test_an_unguarded_speculative_load_is_refused():
    # if (tid == 0 || tid == 5) load: two ways in, no single conjunction to predicate it with
    body = """
	setp.eq.s32 	%p1, %r1, 0;
	setp.eq.s32 	%p2, %r1, 5;
	@%p1 bra 	$L__BB0_2;
	@%p2 bra 	$L__BB0_2;
	bra.uni 	$L__BB0_3;
$L__BB0_2:
	ld.global.f32 	%f2, [%rd6];
	st.global.f32 	[%rd7], %f2;
$L__BB0_3:
"""
    planner, load, found, _ = _destinations(body, "%rd6", True)
    assert found == []
    cfg = planner.analysis.cfg
    refusal = planner.plan(load, cfg.idom[cfg.block_of[load]])
    assert "speculatively" in refusal.reason


def test_a_guard_computed_from_a_load_keeps_the_load_behind_its_guard():
    body = """
	ld.global.f32 	%f1, [%rd6];
	setp.gt.f32 	%p1, %f1, 0f00000000;
	@!%p1 bra 	$L__BB0_2;
	ld.global.f32 	%f2, [%rd7];
	st.global.f32 	[%rd7], %f2;
$L__BB0_2:
"""
    _, _, found, _ = _destinations(body, "%rd7", True)
    (target,) = found
    planner_body = Planner(Analysis(_module(body).kernels[0], True)).analysis.function.body
    first = next(i for i, s in enumerate(planner_body) if s.code.startswith("ld.global.f32 \t%f1"))
    guard_def = next(i for i, s in enumerate(planner_body) if s.code.startswith("setp.gt.f32"))
    # the guard's definition moves with the load, which stays after the load the guard reads
    assert target.plan.at > first and guard_def in target.plan.members and target.plan.guard.literals


# ---- loops -------------------------------------------------------------------------------

LOOP = """
	mov.u32 	%r2, 0;
$L__BB0_1:
	mul.wide.u32 	%rd8, %r2, 4;
	add.s64 	%rd9, %rd3, %rd8;
	ld.global.f32 	%f1, [%rd9];
	ld.global.f32 	%f3, [%rd7];
	add.f32 	%f2, %f1, %f3;
	st.global.f32 	[%rd9], %f2;
	add.s32 	%r2, %r2, 1;
	setp.lt.u32 	%p1, %r2, 8;
	@%p1 bra 	$L__BB0_1;
"""


def test_a_load_whose_address_changes_never_leaves_its_loop():
    for noalias in (False, True):
        _, _, found, stopped = _destinations(LOOP, "%rd9", noalias)
        assert found == [] and "written on the way" in stopped.reason
    with pytest.raises(NotApplicable):
        _hoisted(_module(LOOP), "%rd9", "top", True)


def test_a_loop_invariant_load_leaves_its_loop_under_noalias(tmp_path):
    _, _, found, stopped = _destinations(LOOP, "%rd7", False)
    assert found == [] and "memory dependence" in stopped.reason  # the loop stores to x; y may be x
    _, _, found, _ = _destinations(LOOP, "%rd7", True)
    assert found and "loop" in found[-1].plan.crosses and not found[-1].plan.guard.literals
    moved = _hoisted(_module(LOOP), "%rd7", "top", True)
    codes = _order(moved)
    assert codes.index("ld.global.f32 \t%hf32_0, [%rd7];") < codes.index("mov.u32 \t%r2, 0;")
    _compiles(moved.text, tmp_path)


def test_a_loop_that_may_not_run_predicates_its_invariant_load(tmp_path):
    body = "\tsetp.eq.s32 \t%p2, %r5, 0;\n\t@%p2 bra \t$L__BB0_3;\n" + LOOP + "$L__BB0_3:\n"
    moved = _hoisted(_module(body), "%rd7", "top", True)
    assert any(c.startswith("@!%p2 ld.global.f32") for c in _order(moved))
    _compiles(moved.text, tmp_path)


def test_peeling_lets_the_first_iterations_load_out(tmp_path):
    module = _module(LOOP)
    (peel,) = PeelLoop.instances(module, "k")
    peeled = peel.apply(module)
    codes = _order(peeled)
    assert codes.count("ld.global.f32 \t%f1, [%rd9];") == 2
    assert "@!%p1 bra \t$L__BB0_2;" in codes or any(c.startswith("@!%p1 bra") for c in codes)
    labels = [s.label for s in peeled.kernels[0].body if s.kind == "label"]
    assert "$L__BB0_1_peel" in labels and "$L__BB0_1" in labels
    _compiles(peeled.text, tmp_path)
    ident = next(s.ident for s in peeled.kernels[0].body if s.ident.endswith("p") and "[%rd9]" in s.code)
    hoisted = GlobalHoist("k", ident, "top", True).apply(peeled)
    _compiles(hoisted.text, tmp_path)


def test_instances_name_only_legal_destinations():
    body = BARRIER.format(offset=4, store=7)
    module = _module(body)
    for noalias in (False, True):
        for move in GlobalHoist.instances(module, "k", noalias):
            moved = move.apply(module)  # every listed instance applies
            assert moved.text != module.text
    assert choose([], "top") is None
