"""A loop laid out with its latch above its header (LLVM's layout when the body branches, as
Triton's inlined tanhf makes it) is laid out from its header before a loop move
(reorder.ptx.moves.layout): every block keeps its successors, the moves then take the loop,
and the moved kernel computes what the original does (tests/ptx_interp.py, one thread)."""

from __future__ import annotations

import struct

import ptx_sources  # tests/ptx_sources.py
import pytest
from ptx_interp import Memory, Thread

from reorder.ptx.analyses.analysis import Analysis
from reorder.ptx.analyses.cfg import EXIT, Cfg
from reorder.ptx.model.model import Function, Module, parse_module
from reorder.ptx.moves.layout import from_header
from reorder.ptx.moves.loopfind import find_loop
from reorder.ptx.moves.prefetch import Prefetch, movable_loops
from reorder.ptx.moves.unroll import UnrollBatch

LATCH_ABOVE = """
	setp.lt.s32 	%p1, %r5, 1;
	mov.f32 	%f1, 0f00000000;
	@%p1 bra 	$L__BB0_4;
	mov.u32 	%r2, 0;
	mov.u64 	%rd8, %rd6;
	bra.uni 	$L__BB0_2;
$L__BB0_3:
	add.s64 	%rd8, %rd8, 512;
	add.s32 	%r2, %r2, 128;
	setp.lt.s32 	%p2, %r2, %r5;
	@%p2 bra 	$L__BB0_2;
	bra.uni 	$L__BB0_4;
$L__BB0_2:
	ld.global.f32 	%f2, [%rd8];
	setp.gt.f32 	%p3, %f2, 0f00000000;
	@%p3 bra 	$L__BB0_5;
	add.f32 	%f1, %f1, %f2;
	bra.uni 	$L__BB0_3;
$L__BB0_5:
	sub.f32 	%f1, %f1, %f2;
{tail}
$L__BB0_4:
	st.global.f32 	[%rd7], %f1;
"""
JUMP_BACK = "\tbra.uni \t$L__BB0_3;"
# the loop's last block in the text falls out of it into the exit when its guard fails
FALL_OUT = "\tsetp.lt.s32 \t%p4, %r2, %r5;\n\t@%p4 bra \t$L__BB0_3;"


def _module(tail: str) -> Module:
    return parse_module(ptx_sources.kernel(LATCH_ABOVE.replace("{tail}", tail)))


def _successors(function: Function) -> dict[str, set[str]]:
    """Each block's successors; a block is named by its first label, or by its code when it
    has none (a lone `bra.uni`), so the map does not depend on the text order."""
    cfg = Cfg(function)

    def name(b: int) -> str:
        if b == EXIT:
            return "EXIT"
        block = cfg.blocks[b]
        return block.labels[0] if block.labels else function.body[block.instructions[0]].code

    return {name(b.index): {name(s) for s in cfg.graph.successors(b.index)} for b in cfg.blocks if b.instructions}


def _run(module: Module, n: int, tid: int):
    memory = Memory()
    x, y = 0x100000, 0x200000
    memory.buffers += [(x, 4 * (n + 128)), (y, 4 * (n + 128))]
    memory.words.update(
        {x + 4 * i: struct.unpack("<I", struct.pack("<f", (-1) ** i * i * 0.5))[0] for i in range(n + 128)}
    )
    return Thread(module.kernels[0], [x, y, 0, n], memory, tid=tid).run()


def test_the_latch_above_the_header_is_laid_out_below_it():
    module = _module(JUMP_BACK)
    function = module.kernels[0]
    analysis = Analysis(function, True)
    with pytest.raises(Exception, match="not laid out contiguously"):
        find_loop(analysis, "$L__BB0_2")
    laid = from_header(function, "$L__BB0_2")
    assert laid is not function
    find_loop(Analysis(laid, True), "$L__BB0_2")  # the supported shape now
    before, after = _successors(function), _successors(laid)
    assert after == before
    assert from_header(laid, "$L__BB0_2") is laid  # already laid out: unchanged
    assert movable_loops(function, True, False) == ["$L__BB0_2"]


@pytest.mark.parametrize("move", [Prefetch("k", "$L__BB0_2", 2, True), UnrollBatch("k", "$L__BB0_2", 4, True)])
def test_moves_on_a_loop_laid_out_from_its_header_compute_the_same(move):
    module = _module(JUMP_BACK)
    moved = move.apply(module)
    assert moved.text != module.text
    for n in (1, 127, 128, 129, 256, 700):
        for tid in (0, 100):
            a, b = _run(module, n, tid), _run(moved, n, tid)
            assert b.stores == a.stores, (n, tid)
            assert set(b.loads) <= set(a.loads) and len(b.loads) == len(a.loads), (n, tid)


def test_layouts_that_would_need_a_jump_inside_the_loop_are_left_alone():
    """The latch falls into the header from above, or the loop's last block below the header
    falls out of the loop: laying either out would put a jump between the loop's blocks."""
    text = LATCH_ABOVE.replace("{tail}", JUMP_BACK).replace(
        "\t@%p2 bra \t$L__BB0_2;\n\tbra.uni \t$L__BB0_4;", "\t@%p2 bra \t$L__BB0_4;"
    )
    for function in (parse_module(ptx_sources.kernel(text)).kernels[0], _module(FALL_OUT).kernels[0]):
        assert from_header(function, "$L__BB0_2") is function
