"""ReuseLoad legality on small kernels, with the negative cases: a store to the same buffer
between, a store through another parameter without --assume-noalias, a barrier when the
kernel writes the buffer, an earlier load not on every path, a different address, an address
register that changes between, a loop-carried address. What is made compiles with ptxas and
verifies; the search's 'reuse' kind offers it."""

from __future__ import annotations

import ptx_sources  # tests/ptx_sources.py
import pytest

from reorder.base.errors import NotApplicable
from reorder.binary.tools import have_tool
from reorder.build.ptxlevel import PtxLevel, build
from reorder.ptx.model.model import Module, parse_module
from reorder.ptx.moves.reuse import ReuseLoad
from reorder.ptx.space.registry import MoveOptions, Pick
from reorder.ptx.space.searchspace import first_stage

TAIL = """
	add.f32 	%f3, %f1, %f2;
	st.global.f32 	[%rd7], %f3;
"""


def _module(body: str) -> Module:
    return parse_module(ptx_sources.kernel(body + TAIL))


def _reusable(body: str, noalias=False) -> list[str]:
    """The codes of the loads ReuseLoad may replace."""
    module = _module(body)
    by_ident = {s.ident: s.code for s in module.kernels[0].body}
    return [by_ident[r.load] for r in ReuseLoad.instances(module, "k", noalias)]


def test_the_same_address_loaded_twice_takes_the_first_value():
    body = """
	ld.global.f32 	%f1, [%rd6+4];
	ld.global.f32 	%f2, [%rd6+4];
"""
    assert _reusable(body) == ["ld.global.f32 \t%f2, [%rd6+4];"]
    module = _module(body)
    (move,) = ReuseLoad.instances(module, "k", False)
    codes = [s.code for s in move.apply(module).kernels[0].body if s.kind == "instruction"]
    assert "mov.f32 \t%f2, %f1;" in codes and "ld.global.f32 \t%f2, [%rd6+4];" not in codes


def test_a_store_to_the_same_buffer_between_keeps_the_load():
    body = """
	ld.global.f32 	%f1, [%rd6+4];
	st.global.f32 	[%rd6+8], %f1;
	ld.global.f32 	%f2, [%rd6+4];
"""
    assert _reusable(body, noalias=True) == []


def test_a_store_through_another_parameter_needs_noalias():
    body = """
	ld.global.f32 	%f1, [%rd6+4];
	st.global.f32 	[%rd7+4], %f1;
	ld.global.f32 	%f2, [%rd6+4];
"""
    assert _reusable(body) == []  # y may point into x
    assert _reusable(body, noalias=True) == ["ld.global.f32 \t%f2, [%rd6+4];"]


def test_a_barrier_keeps_the_load_when_the_kernel_may_write_its_buffer_before_it():
    body = """
	ld.global.f32 	%f1, [%rd6+4];
	st.global.f32 	[%rd6], %f1;
	bar.sync 	0;
	ld.global.f32 	%f2, [%rd6+4];
"""
    assert _reusable(body, noalias=True) == []  # another thread may have stored x[tid+1] before the barrier
    later = body.replace("\tst.global.f32 \t[%rd6], %f1;\n", "") + "\tst.global.f32 \t[%rd6], %f2;\n"
    assert _reusable(later, noalias=True) == ["ld.global.f32 \t%f2, [%rd6+4];"]  # written only after it
    unaligned = later.replace("bar.sync", "barrier.sync")
    assert _reusable(unaligned, noalias=True) == []


def test_an_earlier_load_not_on_every_path_is_not_reused():
    body = """
	setp.ne.s32 	%p1, %r1, 0;
	@%p1 bra 	$L__BB0_2;
	ld.global.f32 	%f1, [%rd6+4];
$L__BB0_2:
	ld.global.f32 	%f2, [%rd6+4];
"""
    assert _reusable(body) == []
    guarded = """
	setp.ne.s32 	%p1, %r1, 0;
	@%p1 ld.global.f32 	%f1, [%rd6+4];
	ld.global.f32 	%f2, [%rd6+4];
"""
    assert _reusable(guarded) == []


def test_a_different_address_is_not_reused():
    assert (
        _reusable("""
	ld.global.f32 	%f1, [%rd6+4];
	ld.global.f32 	%f2, [%rd6+8];
""")
        == []
    )
    assert (
        _reusable(
            """
	ld.global.f32 	%f1, [%rd6+4];
	ld.global.f32 	%f2, [%rd7+4];
""",
            noalias=True,
        )
        == []
    )
    assert (
        _reusable("""
	ld.global.f32 	%f1, [%rd6];
	ld.global.u32 	%r2, [%rd6];
	cvt.rn.f32.u32 	%f2, %r2;
""")
        == []
    )  # another type: not the same value


def test_an_address_register_written_between_is_not_reused():
    body = """
	ld.global.f32 	%f1, [%rd6+4];
	add.s64 	%rd6, %rd6, 4;
	ld.global.f32 	%f2, [%rd6+4];
"""
    assert _reusable(body) == []


def test_the_same_address_computed_twice_is_one_value():
    """nvcc recomputes an address in another block: the same instructions from the same values."""
    body = """
	mul.wide.u32 	%rd8, %r1, 4;
	add.s64 	%rd9, %rd3, %rd8;
	ld.global.f32 	%f1, [%rd9+16];
	mul.wide.u32 	%rd10, %r1, 4;
	add.s64 	%rd11, %rd3, %rd10;
	ld.global.f32 	%f2, [%rd11+16];
"""
    assert _reusable(body) == ["ld.global.f32 \t%f2, [%rd11+16];"]
    other = body.replace("mul.wide.u32 \t%rd10, %r1, 4;", "mul.wide.u32 \t%rd10, %r5, 4;")
    assert _reusable(other) == []  # computed from n, not tid


def test_a_loop_carried_address_is_not_reused():
    body = """
	mov.u32 	%r2, 0;
	ld.global.f32 	%f1, [%rd6];
$L__BB0_1:
	ld.global.f32 	%f2, [%rd6];
	add.s64 	%rd6, %rd6, 4;
	add.s32 	%r2, %r2, 1;
	setp.lt.s32 	%p1, %r2, %r5;
	@%p1 bra 	$L__BB0_1;
"""
    assert _reusable(body) == []


def test_apply_refuses_a_load_without_a_twin():
    module = _module("""
	ld.global.f32 	%f1, [%rd6+4];
	ld.global.f32 	%f2, [%rd6+8];
""")
    ident = next(s.ident for s in module.kernels[0].body if s.code == "ld.global.f32 \t%f2, [%rd6+8];")
    with pytest.raises(NotApplicable):
        ReuseLoad("k", ident, False).apply(module)


VECTOR = """
	ld.global.v2.f32 	{%f1, %f4}, [%rd6];
	st.global.f32 	[%rd7+8], %f4;
	ld.global.v2.f32 	{%f2, %f5}, [%rd6];
	add.f32 	%f2, %f2, %f5;
"""


def test_the_search_offers_reuse_and_the_candidate_verifies(tmp_path):
    path = tmp_path / "k.ptx"
    path.write_text(ptx_sources.kernel(VECTOR + TAIL))
    offered = [i for i in first_stage(parse_module(path.read_text()), MoveOptions("k", True)) if i.kind == "reuse"]
    assert [i.choices for i in offered] == [("off", "on")]
    if not have_tool("ptxas"):
        return
    made = build(PtxLevel(str(path), "k", True, "nvcc"), (Pick("reuse", offered[0].key, "on"),), "")
    assert made.data is not None, made.reason
    assert made.applied == (f"reuse:{offered[0].key}",)
