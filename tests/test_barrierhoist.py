"""BarrierHoist and the verifier's barrier-crossing rule, on nvcc cubins of row kernels whose
weight loads follow the reduction's BAR.SYNC (tests/data/barrier_loads: nvcc -cubin -O3 -arch=sm_90)."""

from __future__ import annotations

from pathlib import Path

import pytest

from legality.equivalence import block_differences
from legality.verify import verify_kernel
from reorder.analysis.cfg import basic_blocks
from reorder.binary.cubin import parse_cubin, read_cubin
from reorder.build.pipeline import hoist_across_barriers
from reorder.moves.barrierhoist import BarrierHoist
from reorder.moves.protocol import MoveOptions
from reorder.moves.schedule import schedule_block
from reorder.sass.model import decode_kernel
from reorder.sass.readback import read_back

CUBIN = Path(__file__).parent / "data" / "barrier_loads" / "barrier_loads.cubin"


def _code(kernel: str):
    return decode_kernel(read_cubin(CUBIN), kernel)


def _bar(instructions) -> int:
    return next(i for i, x in enumerate(instructions) if x.opcode.startswith("BAR.SYNC"))


def _ldg_before_bar(instructions) -> int:
    q = _bar(instructions)
    block = next(b for b in basic_blocks(instructions) if b.start <= q < b.end)
    return sum(1 for i in range(block.start, q) if instructions[i].base == "LDG")


@pytest.mark.parametrize("kernel", ["rmsnorm_row256", "layernorm_row256"])
def test_weight_loads_cross_the_barrier_and_verify(kernel: str) -> None:
    code = _code(kernel)
    out = hoist_across_barriers(code, noalias=False)
    assert out.applied == ("barrier_hoist",), out.summary()
    after = out.after.instructions
    bars = [i for i, x in enumerate(after) if x.opcode.startswith("BAR.SYNC")]
    q = bars[-1]
    # both weight loads now issue before the last barrier, nothing else memory-touching moved
    block = next(b for b in basic_blocks(after) if b.start <= q < b.end)
    assert sum(1 for i in range(block.start, q) if after[i].base == "LDG") == 2 + _ldg_before_bar(
        code.instructions[block.start : q + 1]
    )
    assert verify_kernel(out.after, original=code.instructions).ok
    assert not block_differences(code.instructions, after)
    # the measured floor: no memory access within 6 cycles of the barrier's issue
    cycles, k = after[q].ctrl.stall, q + 1
    while not (after[k].access.mem_reads or after[k].access.mem_writes):
        cycles += after[k].ctrl.stall
        k += 1
    assert after[q].ctrl.stall >= 6 or cycles >= 6


def test_a_buffer_written_before_the_barrier_is_not_offered() -> None:
    code = _code("scale_inplace_row256")
    assert BarrierHoist.instances(code, MoveOptions()) == []
    assert BarrierHoist.instances(code, MoveOptions(noalias=True)) == []


def _forced_hoist(code):
    """The in-place kernel with its load of x after the barrier moved above it by hand
    (nothing renamed: its registers are free there), as a wrong move would make it."""
    ins = code.instructions
    q = _bar(ins)
    block = next(b for b in basic_blocks(ins) if b.start <= q < b.end)
    load = next(i for i in range(q + 1, block.end) if ins[i].base == "LDG")
    order = [i for i in range(block.start, block.end) if i != load]
    order.insert(order.index(q), load)
    new = schedule_block(ins, block.start, block.end, order, code.arch)
    from reorder.sass.writer import patch_kernel

    data = patch_kernel(code.cubin, code.kernel, new, code.kernel.regcount)
    return read_back(parse_cubin(data, code.cubin.path), code)


def test_the_verifier_refuses_a_load_hoisted_above_a_store_to_its_buffer() -> None:
    code = _code("scale_inplace_row256")
    bad = _forced_hoist(code)
    assert _ldg_before_bar(bad.instructions) == _ldg_before_bar(code.instructions) + 1
    for noalias in (False, True):
        report = verify_kernel(bad, original=code.instructions, noalias=noalias)
        kinds = {v.kind for v in report.violations}
        assert "barrier_crossing" in kinds, report.verdict()


def test_the_same_hoist_of_a_weight_load_is_accepted() -> None:
    code = _code("rmsnorm_row256")
    moved = _forced_hoist(code)
    report = verify_kernel(moved, original=code.instructions)
    assert "barrier_crossing" not in {v.kind for v in report.violations}


def test_a_load_moved_down_below_a_barrier_is_refused() -> None:
    code = _code("rmsnorm_row256")
    out = hoist_across_barriers(code, noalias=False)
    # judged the other way round: the original is a candidate whose loads moved down
    report = verify_kernel(code, original=out.after.instructions)
    assert "barrier_crossing" in {v.kind for v in report.violations}


def _moved_up(instructions):
    """The kernel's instructions with the first global load after its first BAR.SYNC placed just
    before it (an order only: the crossing rule reads no control codes)."""
    q = _bar(instructions)
    load = next(i for i in range(q + 1, len(instructions)) if instructions[i].base == "LDG")
    order = list(instructions)
    order.insert(q, order.pop(load))
    return tuple(order)


@pytest.mark.parametrize(
    ("kernel", "noalias", "refused"),
    [
        ("rmsnorm_stats_row256", False, True),  # the row's statistic is stored to another parameter
        ("rmsnorm_stats_row256", True, False),  # ... which --assume-noalias says is another buffer
        ("scale_inplace_row256", True, True),  # stored to the load's own parameter
        ("rmsnorm_row256", False, False),  # nothing global stored before the barrier
    ],
)
def test_the_crossing_rule_follows_the_stores_before_the_barrier(kernel: str, noalias: bool, refused: bool) -> None:
    from dataclasses import replace

    from legality.crossings import crossing_violations
    from reorder.analysis.buffers import address_parameters

    code = _code(kernel)
    moved = _moved_up(code.instructions)
    found = crossing_violations(
        moved,
        address_parameters(replace(code, instructions=moved)),
        code.instructions,
        address_parameters(code),
        noalias,
    )
    assert bool(found) == refused, found


def test_batch_loads_across_barriers_writes_what_verify_accepts(tmp_path, capsys) -> None:
    from reorder.cli.main import main

    out = tmp_path / "hoisted.cubin"
    args = ["--kernel", "rmsnorm_row256"]
    assert main(["batch-loads", str(CUBIN), *args, "--across-barriers", "--no-slices", "-o", str(out)]) == 0
    assert "global loads hoisted above it" in capsys.readouterr().out
    assert main(["verify", str(out), *args, "--against", str(CUBIN)]) == 0
    assert main(["verify", str(out), *args, "--against", str(CUBIN), "--assume-noalias"]) == 0
    assert "ASSUMPTION: all pointer parameters" in capsys.readouterr().out


def test_the_search_offers_and_builds_the_hoist() -> None:
    from reorder.build.space import Choice, build_candidate, search_space
    from reorder.search.study import seed_params

    code = _code("rmsnorm_row256")
    space = search_space(code, False)
    assert len(space.barrier_hoists) == 1 and "1 barrier hoists" in space.size_line()
    assert any(seed.get("bh0") == 1 for seed in seed_params(space))
    built = build_candidate(str(CUBIN), "rmsnorm_row256", False, Choice(barrier_hoists=(0,)))
    assert built.data is not None, built.reason
    after = decode_kernel(parse_cubin(built.data, "built"), "rmsnorm_row256")
    assert _ldg_before_bar(after.instructions) == _ldg_before_bar(code.instructions) + 2
