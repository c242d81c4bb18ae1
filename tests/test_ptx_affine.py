"""In-place loops: a load runs iterations early past stores to its own buffer only when the
affine forms of the addresses (reorder.ptx.analyses.affine) prove them apart for every
thread pair and every distance a loop move uses.

The kernel reads 1024 floats a round (two v4 loads per thread of 128, the second half at
`tid * 4 | 512`, as Triton writes it), scales them and stores them back where they came
from. Variants: the next round overlapping this one (a true dependence), a store one
thread over (only another thread's store meets the load), no .reqntid (the `or` is not
provably an add), and Triton's own in-place softmax (tests/corpus/triton/inplace_softmax.py).
"""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest
from ptx_interp import Memory, Thread

from reorder.binary.tools import have_tool
from reorder.build.ptxcandidate import write_and_compile
from reorder.ptx.analyses.affine import MODULUS, Form, LoopForms, access_bytes
from reorder.ptx.analyses.analysis import Analysis
from reorder.ptx.analyses.memory import conflict
from reorder.ptx.model.model import Module, parse_module
from reorder.ptx.moves.loopfind import find_loop
from reorder.ptx.moves.loopload import loop_loads
from reorder.ptx.moves.prefetch import Prefetch
from reorder.ptx.moves.unroll import UnrollBatch

KERNEL = """//
// an in-place scaling loop for the affine tests
//

.version 8.0
.target sm_90
.address_size 64

.visible .entry k(
	.param .u64 k_param_0,
	.param .u32 k_param_1
)
{threads}
{{
	.reg .pred 	%p<8>;
	.reg .f32 	%f<16>;
	.reg .b32 	%r<16>;
	.reg .b64 	%rd<16>;

	ld.param.u64 	%rd1, [k_param_0];
	ld.param.u32 	%r5, [k_param_1];
	mov.u32 	%r1, %tid.x;
	shl.b32 	%r2, %r1, 2;
	and.b32 	%r3, %r2, 508;
	or.b32 	%r4, %r3, 512;
	setp.lt.s32 	%p1, %r5, 1;
	@%p1 bra 	$L__BB0_3;
	mov.u32 	%r6, 0;
$L__BB0_2:
	add.s32 	%r7, %r3, %r6;
	add.s32 	%r8, %r4, %r6;
	mul.wide.s32 	%rd2, %r7, 4;
	add.s64 	%rd3, %rd1, %rd2;
	mul.wide.s32 	%rd4, %r8, 4;
	add.s64 	%rd5, %rd1, %rd4;
	setp.lt.s32 	%p2, %r7, %r5;
	setp.lt.s32 	%p3, %r8, %r5;
	@%p2 ld.global.v4.f32 	{{%f1, %f2, %f3, %f4}}, [%rd3];
	@%p3 ld.global.v4.f32 	{{%f5, %f6, %f7, %f8}}, [%rd5];
	add.f32 	%f1, %f1, %f5;
	mul.f32 	%f2, %f2, 0f40000000;
	mul.f32 	%f6, %f6, 0f40000000;
	@%p2 st.global.v4.f32 	[%rd3+{shift}], {{%f1, %f2, %f3, %f4}};
	@%p3 st.global.v4.f32 	[%rd5+{shift}], {{%f5, %f6, %f7, %f8}};
	add.s32 	%r6, %r6, {step};
	setp.lt.s32 	%p4, %r6, %r5;
	@%p4 bra 	$L__BB0_2;
$L__BB0_3:
	ret;

}}
"""
HEADER = "$L__BB0_2"
IN_PLACE = Path(__file__).resolve().parent / "corpus/triton/inplace_softmax_sm90.ptx"


def _kernel(step: int = 1024, shift: int = 0, threads: str = ".reqntid 128") -> Module:
    return parse_module(KERNEL.format(step=step, shift=shift, threads=threads))


def _refused(module: Module) -> list[str]:
    analysis = Analysis(module.kernels[0], noalias=False)
    return [reason for _, reason in loop_loads(analysis, find_loop(analysis, HEADER)).refused]


def _run(module: Module, n: int, tid: int):
    rnd, memory, x = random.Random(n), Memory(), 0x100000
    memory.buffers.append((x, 4 * (n + 1024)))
    memory.words.update({x + 4 * i: struct.unpack("<I", struct.pack("<f", rnd.uniform(-2, 2)))[0] for i in range(n)})
    return Thread(module.kernels[0], [x, n], memory, tid=tid).run()


def test_an_in_place_loop_runs_its_loads_early_and_stores_the_same():
    module = _kernel()
    assert _refused(module) == []
    for move in (Prefetch("k", HEADER, 4), UnrollBatch("k", HEADER, 4), Prefetch("k", HEADER, 1)):
        moved = move.apply(module)
        for n, tid in [(n, t) for n in (16, 1000, 1024, 1040, 4096) for t in (0, 127)]:
            a, b = _run(module, n, tid), _run(moved, n, tid)
            assert b.stores == a.stores, (move, n, tid)
            assert set(b.loads) <= set(a.loads) and len(b.loads) == len(a.loads), (move, n, tid)


def test_a_next_round_that_overlaps_this_one_keeps_its_loads():
    """Rounds of 512 over a 1024-float window: round N + 1 reads the half round N wrote."""
    assert any("memory dependence" in r for r in _refused(_kernel(step=512)))


def test_a_store_only_another_thread_meets_keeps_the_loads():
    """Stores shifted off the loads' own bytes. 16 bytes back: every store lands in this
    round or the one before, the loads run early. 16 bytes on: thread 127's second-half
    store lands on the next round's first bytes, which thread 0 loads. A round and 16 bytes
    on: a thread's own load of the next round is 16 bytes clear of its store, but thread
    t + 1's meets thread t's; only the thread pair overlaps, and the loads stay."""
    assert _refused(_kernel(shift=-16)) == []
    assert any("memory dependence" in r for r in _refused(_kernel(shift=16)))
    edge = _kernel(shift=4096 + 16)
    assert any("memory dependence" in r for r in _refused(edge))
    analysis = Analysis(edge.kernels[0])
    forms = LoopForms(analysis, find_loop(analysis, HEADER))
    body = edge.kernels[0].body
    loads = [i for i, s in enumerate(body) if s.ins is not None and s.ins.opcode.startswith("ld.global")]
    stores = [i for i, s in enumerate(body) if s.ins is not None and s.ins.base == "st"]
    gap = forms.ahead(forms.address(loads[0]), 1).plus(forms.address(stores[0]), -1)
    assert gap.constant == MODULUS - 16  # the thread itself is 16 bytes clear: only the thread pair overlaps


def test_without_a_thread_bound_the_or_is_not_an_add():
    """%tid < 1024 leaves `tid * 4 | 512` free to carry: no form, the loads stay."""
    assert any("memory dependence" in r for r in _refused(_kernel(threads="")))
    assert _refused(_kernel(threads=".maxntid 128, 1, 1")) == []


HOSTILE = {
    "a register step": ("add.s32 \t%r6, %r6, 1024;", "add.s32 \t%r6, %r6, %r5;"),
    "an index loaded in the loop": ("add.s32 \t%r7, %r3, %r6;", "ld.global.u32 \t%r7, [%rd1];"),
    "a store running backwards": (
        "\t@%p2 st.global.v4.f32 \t[%rd3+0]",
        "\tsub.s32 \t%r9, 1020, %r7;\n\tmul.wide.s32 \t%rd6, %r9, 4;\n\tadd.s64 \t%rd6, %rd1, %rd6;\n"
        "\t@%p2 st.global.v4.f32 \t[%rd6]",
    ),
    "an xor swizzle that may carry": ("or.b32 \t%r4, %r3, 512;", "xor.b32 \t%r4, %r3, 260;"),
}


@pytest.mark.parametrize("what", sorted(HOSTILE))
def test_addresses_the_forms_cannot_follow_keep_their_loads(what):
    old, new = HOSTILE[what]
    text = _kernel().text
    assert old in text
    assert any("memory dependence" in r for r in _refused(parse_module(text.replace(old, new)))), what


def test_forms_and_widths():
    a = Form.of(8, {("n",): 4096})
    assert LoopForms.ahead(a, 2).const == 8 + 8192 and Form.of(-1).const == MODULUS - 1
    assert a.plus(a, -1).constant == 0 and a.constant is None
    assert access_bytes(("global", "v4", "f32")) == 16 and access_bytes(("global", "b16")) == 2
    assert access_bytes(("global", "v2", "b64")) == 16 and access_bytes(("global", "pred")) is None


def test_tritons_in_place_softmax_loop_is_opened():
    """Triton's second pass reads and overwrites the row (4 v4 loads and stores a round of
    8192, offsets `tid * 8 & 2040`, `tid * 8 | 6144`, on 32- and 64-bit address paths): the
    loads and stores share a pointer, and every load may still run up to 8 rounds early."""
    module = parse_module(IN_PLACE.read_text())
    analysis = Analysis(module.kernels[0], noalias=True)
    rewrite = find_loop(analysis, "$L__BB0_4")
    found = loop_loads(analysis, rewrite)
    body = analysis.function.body
    inside = range(rewrite.start, rewrite.end)
    stores = [i for i in inside if body[i].ins is not None and body[i].ins.base == "st"]
    assert len(found.movable) == 4 and not found.refused and len(stores) == 4
    load, store = found.movable[0], stores[0]
    assert (
        conflict(
            analysis.effects[store],
            analysis.origins[store],
            analysis.effects[load],
            analysis.origins[load],
            analysis.facts,
        )
        == "memory"
    )


@pytest.mark.skipif(not have_tool("ptxas"), reason="needs ptxas")
def test_in_place_moves_compile_and_verify(tmp_path):
    source = tmp_path / "k.ptx"
    source.write_text(_kernel().text)
    for k, move in enumerate((Prefetch("k", HEADER, 2), UnrollBatch("k", HEADER, 4))):
        moved = move.apply(_kernel())
        built = write_and_compile(source, "k", moved, [move.describe()], tmp_path / f"c{k}.ptx")
        assert built.verdict.ok, (move, built.verdict.violations)
