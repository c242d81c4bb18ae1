"""DominatorHoist and the verifier's rule for loads that changed blocks (legality.blockmoves), on
nvcc cubins whose guarded block loads from an address known before the branch
(tests/data/block_loads: nvcc -cubin -O3 -arch=sm_90) and on a corpus kernel's unrolled tails."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from legality.blockmoves import block_move_violations, moved_loads
from legality.equivalence import block_differences, moved_block_differences
from legality.verify import verify_kernel
from reorder.analysis.buffers import address_parameters
from reorder.analysis.cfg import basic_blocks
from reorder.binary.cubin import parse_cubin, read_cubin
from reorder.build.pipeline import batch_loads, hoist_into_dominators
from reorder.build.space import Choice, build_candidate, search_space
from reorder.cli.main import main
from reorder.moves.dominatorhoist import DominatorHoist
from reorder.moves.protocol import MoveOptions
from reorder.sass.model import KernelCode, decode_kernel
from reorder.sass.readback import read_back

CUBIN = Path(__file__).parent / "data" / "block_loads" / "block_loads.cubin"
REDUCE = Path(__file__).parent / "corpus" / "cubin" / "sm_90" / "reduce.cubin"


def _code(kernel: str, path: Path = CUBIN) -> KernelCode:
    return decode_kernel(read_cubin(path), kernel)


def _written(code: KernelCode, move: DominatorHoist) -> KernelCode:
    cand = move.apply(code, code.instructions)
    return read_back(parse_cubin(cand.cubin_bytes(), "candidate"), code)


def _violations(code: KernelCode, candidate: tuple, noalias: bool = False) -> tuple:
    ins = code.instructions
    return block_move_violations(
        candidate,
        address_parameters(replace(code, instructions=candidate)),
        ins,
        address_parameters(code),
        noalias,
        None,
    )


def test_the_guarded_load_moves_above_the_exit_under_its_guard() -> None:
    code = _code("gated_pair")
    [move] = DominatorHoist.instances(code)
    after = _written(code, move)
    [moved] = moved_loads(code.instructions, after.instructions)
    load = after.instructions[moved.candidate]
    assert load.opcode == "LDG.E" and load.guard == "@P0"  # the branch was @!P0 EXIT
    assert code.instructions[moved.original].guard == ""
    exit_at = next(i for i, ins in enumerate(after.instructions) if ins.text == "@!P0 EXIT")
    assert moved.candidate < exit_at
    assert verify_kernel(after, original=code.instructions).ok
    assert block_differences(code.instructions, after.instructions) == []
    assert len(basic_blocks(after.instructions)) == len(basic_blocks(code.instructions))


def test_a_load_after_a_store_moves_only_under_noalias() -> None:
    code = _code("gated_after_store")
    assert DominatorHoist.instances(code) == []
    [move] = DominatorHoist.instances(code, MoveOptions(noalias=True))
    after = _written(code, move)
    assert verify_kernel(after, original=code.instructions, noalias=True).ok
    refused = verify_kernel(after, original=code.instructions)
    assert not refused.ok
    assert any(v.kind == "block_move" and "may write its buffer" in v.detail for v in refused.violations)


def test_a_load_moved_without_its_blocks_guard_is_refused() -> None:
    code = _code("gated_pair")
    after = _written(code, DominatorHoist.instances(code)[0])
    [moved] = moved_loads(code.instructions, after.instructions)
    unguarded = replace(code.instructions[moved.original], offset=after.instructions[moved.candidate].offset)
    cand = list(after.instructions)
    cand[moved.candidate] = unguarded
    found = _violations(code, tuple(cand))
    assert any("without the guard" in v.detail for v in found)


def test_an_instruction_moved_into_a_block_that_does_not_lead_alone_is_refused() -> None:
    code = _code("gated_pair")
    ins = list(code.instructions)
    # the last instruction before the EXIT moves down into the block after it: that block
    # gains what no block it leads into lost
    exit_at = next(i for i, x in enumerate(ins) if x.text == "@!P0 EXIT")
    moved = ins.pop(exit_at - 1)
    ins.insert(exit_at + 1, moved)
    found = _violations(code, tuple(ins))
    assert found and found[0].kind == "block_move"


def test_a_load_placed_before_its_address_is_found_by_the_dataflow_check() -> None:
    code = _code("gated_pair")
    after = _written(code, DominatorHoist.instances(code)[0])
    [moved] = moved_loads(code.instructions, after.instructions)
    # the moved load placed above the IMAD.WIDE that computes its address: the same words read
    # another address, and its result clobbers the high half of the IMAD.WIDE's 64-bit addend
    cand = list(after.instructions)
    load = cand.pop(moved.candidate)
    wide = next(i for i, x in enumerate(cand) if x.opcode == "IMAD.WIDE")
    cand.insert(wide, load)
    assert _violations(code, tuple(cand)) == ()  # guard and memory: as before
    found = moved_block_differences(code.instructions, tuple(cand), moved_loads(code.instructions, tuple(cand)))
    assert found and "another value" in found[0][1]  # R3 was the high half of IMAD.WIDE's R2 addend


def test_the_corpus_tails_climb_and_verify() -> None:
    code = _code("warp_allreduce_max", REDUCE)
    out = hoist_into_dominators(code, False)
    assert out.applied == ("dominator_hoist",) and out.moved == 1
    assert verify_kernel(out.after, original=code.instructions).ok
    assert block_differences(code.instructions, out.after.instructions) == []


def test_nothing_is_offered_without_a_guarded_branch_into_the_block() -> None:
    code = _code("gated_pair")
    entry = DominatorHoist(0, 0)
    with pytest.raises(Exception, match="no load of block 0"):
        entry.apply(code, code.instructions)


def test_batch_loads_across_blocks_writes_what_verify_accepts(tmp_path) -> None:
    out = tmp_path / "pair.cubin"
    args = ["--kernel", "gated_pair"]
    assert main(["batch-loads", str(CUBIN), *args, "--across-blocks", "--no-slices", "-o", str(out)]) == 0
    assert main(["verify", str(out), *args, "--against", str(CUBIN)]) == 0


def test_the_search_offers_and_builds_the_hoist() -> None:
    code = _code("gated_pair")
    space = search_space(code, False)
    assert len(space.dominator_hoists) == 1 and "1 dominator hoists" in space.size_line()
    built = build_candidate(str(CUBIN), "gated_pair", False, Choice(dominator_hoists=(0,)))
    assert built.data is not None, built.reason
    assert built.data == batch_loads(code, False, slices=False, across_blocks=True).data or built.moved == 1


def test_blocks_of_a_kernel_with_a_call_keep_their_sizes() -> None:
    """rms_norm_f32 calls its division's slow path with the return address as a MOV immediate:
    a shifted instruction would break it, so any change of the blocks' sizes is refused."""
    code = _code("rms_norm_f32", Path(__file__).parent.parent / "benchmarks" / "kernels" / "cubin" / "rmsnorm.cubin")
    ins = list(code.instructions)
    exit_at = next(i for i, x in enumerate(ins) if x.text == "@P0 EXIT")
    moved = ins.pop(exit_at + 1)
    ins.insert(exit_at, moved)
    assert "code addresses" in str(moved_loads(code.instructions, tuple(ins)))
    assert DominatorHoist.instances(code, MoveOptions(noalias=True)) == []
