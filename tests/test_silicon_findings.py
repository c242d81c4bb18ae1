"""Schedules an H200 showed to be wrong, which the verifier once accepted.

Each case is one instruction's stall lowered in a real suite kernel, exactly as the
stall cut emitted it and as `benchmarks.bisect_gpu` isolated it on the GPU (each alone
gave different bytes, an illegal address or a hang; benchmarks/results, session 4). The
verifier must reject every one, naming the dependency; the compiler's own schedule
(one cycle more) stays legal.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from legality.verify import verify_instructions
from reorder.binary.cubin import read_cubin
from reorder.moves.core import StallCut
from reorder.sass.model import decode_kernel

SUITE = Path(__file__).parent.parent / "benchmarks" / "kernels" / "cubin"
CORPUS = Path(__file__).parent / "corpus" / "cubin" / "sm_90"

# (cubin, kernel, offset whose stall is lowered, new stall, resource, producer opcode, consumer opcode)
FOUND = [
    # LEA.HI.X -> LDG address high half at 4: ptxas leaves 5; a conversion's operand read at 4
    # had set the class-wide minimum (illegal address on the GPU)
    ("embedding_bag.cubin", "embedding_bag_sum", 0x07E0, 4, "R7", "LEA.HI.X", "LDG.E.64"),
    ("embedding_bag.cubin", "embedding_bag_mean", 0x0840, 4, "R13", "LEA.HI.X", "LDG.E.64"),
    # LEA -> LDS address at 4 (misaligned address on the GPU)
    ("cfo_ta_est.cubin", "cfo_ta_est", 0x17A0, 4, "R13", "LEA", "LDS.128"),
    # MOV -> IMAD.WIDE.U32 addend low half at 4: ptxas's 4 for that pair was another operand
    ("embedding_bag.cubin", "embedding_bag_mean", 0x0FE0, 3, "R30", "MOV", "IMAD.WIDE.U32"),
    # ISETP -> VOTE.ANY's voted predicate at 12: VOTE reads it like a guard (13); the
    # predicate was once parsed as a destination, so no dependency was seen at all
    ("kselect.cubin", "warp_select_k100", 0x03A0, 1, "P0", "ISETP.NE.AND", "VOTE.ANY"),
    # UIMAD reads UR5 late; ULDC overwrote it one cycle after issue: the grid stride became 0
    # and the kernel hung (WAR, uniform datapath)
    ("corpus:elementwise.cubin", "saxpy_grid_stride", 0x00B0, 1, "UR5", "UIMAD", "ULDC"),
    # IADD3 -> IMAD.X carry-in at 4: the ALU -> ALU predicate floor (ISETP -> SEL, 4) had been
    # applied to the IMAD pipe; every load-batch candidate of embedding_bag_mean that left a
    # bag counter's carry 4 cycles behind its IADD3 was wrong on the H200 (the 64-bit count
    # off by 2^32), 2026-11-30
    ("embedding_bag.cubin", "embedding_bag_mean", 0x07C0, 1, "P1", "IADD3", "IMAD.X"),
]


def _kernel(cubin: str, kernel: str):
    path = CORPUS / cubin.removeprefix("corpus:") if cubin.startswith("corpus:") else SUITE / cubin
    return decode_kernel(read_cubin(path), kernel)


def _lowered(code, offset: int, stall: int) -> tuple:
    out = list(code.instructions)
    k = next(i for i, ins in enumerate(out) if ins.offset == offset)
    assert out[k].ctrl.stall > stall, "the case must lower the compiler's stall"
    out[k] = out[k].with_ctrl(out[k].ctrl.with_(stall=stall))
    return tuple(out)


@pytest.mark.parametrize("cubin,kernel,offset,stall,resource,producer,consumer", FOUND)
def test_wrong_on_silicon_is_rejected(cubin, kernel, offset, stall, resource, producer, consumer) -> None:
    code = _kernel(cubin, kernel)
    assert not verify_instructions(code.instructions, code.arch), "the compiler's schedule is legal"
    found = verify_instructions(_lowered(code, offset, stall), code.arch)
    assert any(
        v.resource == resource and v.producer_opcode == producer and v.consumer_opcode == consumer for v in found
    ), [v.line() for v in found]


def test_vote_reads_the_predicate_it_votes_on() -> None:
    code = _kernel("kselect.cubin", "warp_select_k100")
    votes = [i for i in code.instructions if i.base == "VOTE"]
    assert votes
    for ins in votes:
        voted = ins.operands[-1].lstrip("!")
        assert voted in ins.access.reads, ins.text
        assert set(ins.operands[:-1]) - {"PT"} <= ins.access.writes, ins.text


def test_stall_cut_keeps_reuse_flags() -> None:
    """Same order, same successors, the compiler's words: every reuse flag stays (the cut
    once cleared 861 of them on warp_select_k32)."""
    code = _kernel("kselect.cubin", "warp_select_k32")
    move = StallCut.merged(StallCut.instances(code))
    cut = move.apply(code, code.instructions).instructions
    assert [i.ctrl.reuse for i in cut] == [i.ctrl.reuse for i in code.instructions]
    assert sum(i.ctrl.stall for i in cut) < sum(i.ctrl.stall for i in code.instructions)


def test_jump_table_targets_start_blocks_and_have_edges() -> None:
    """switch_interpreter's BRX cases: without EIATTR_INDIRECT_BRANCH_TARGETS the cases were
    no block boundaries, and a swap output computed wrong bytes on the H200."""
    from reorder.analysis.cfg import basic_blocks, control_flow_graph

    code = decode_kernel(read_cubin(CORPUS / "control.cubin"), "switch_interpreter")
    brx = [i for i in code.instructions if i.base == "BRX"]
    assert brx and all(i.indirect_targets for i in brx)
    starts = {code.instructions[b.start].offset: b.start for b in basic_blocks(code.instructions)}
    graph = control_flow_graph(code.instructions)
    for ins in brx:
        source = max(s for s in starts.values() if s <= ins.offset // 16)
        for target in ins.indirect_targets:
            assert target in starts, hex(target)
            assert graph.has_edge(source, starts[target]), (hex(ins.offset), hex(target))


def test_moves_leave_subroutines_and_return_sites_alone() -> None:
    """int_divmod calls __cuda_sm20_div_u64 in its own text; the graph does not follow
    CALL, so the callee and the return site keep the compiler's schedule (a batch-loads
    output that rescheduled the callee crashed on the H200)."""
    from reorder.analysis.cfg import movable_blocks

    code = decode_kernel(read_cubin(CORPUS / "int64.cubin"), "int_divmod")
    starts = {code.instructions[b.start].offset for b in movable_blocks(code.instructions)}
    call = next(i for i in code.instructions if i.base == "CALL")
    assert call.offset + 16 not in starts, "the return site"
    assert 0x530 not in starts, "the callee's entry"
    assert 0 in starts
    for move in StallCut.instances(code):
        assert code.instructions[move.block_starts[0]].offset in starts
