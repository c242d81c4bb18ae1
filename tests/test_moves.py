"""Moves: every output verifies, keeps the kernel's instructions (up to renaming), and is
what `reorder disasm` shows; random legal orders all schedule into verified code."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import networkx as nx
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from sweeps import sample  # tests/sweeps.py

from legality.graph import build_graph
from legality.verify import verify_instructions, verify_kernel
from reorder.analysis.cfg import basic_blocks
from reorder.base.errors import LegalityError
from reorder.binary.cubin import read_cubin
from reorder.build.pipeline import apply_each, batch_loads, cut_stalls
from reorder.moves.core import Swap
from reorder.sass.control import CONTROL_MASK, CONTROL_SHIFT

ROOT = Path(__file__).resolve().parent.parent
RMS = ROOT / "benchmarks" / "kernels" / "cubin" / "rmsnorm.cubin"


def _without_control(ins) -> int:
    return ins.word & ~(CONTROL_MASK << CONTROL_SHIFT)


def _erase_numbers(text: str) -> str:
    return re.sub(r"(?<![A-Za-z])([RP])\d+", r"\1", text.replace(".reuse", ""))


def _canonical(ins) -> tuple:
    """An instruction with register and predicate numbers erased: equal up to renaming."""
    return (_erase_numbers(ins.guard), ins.opcode, tuple(_erase_numbers(o) for o in ins.operands))


@pytest.mark.slow
def test_stall_cut_verifies_and_keeps_every_instruction(corpus):
    removed = total = 0
    for cubin, code in corpus:
        if not code.kernel.is_entry:
            continue
        out = cut_stalls(code)
        assert verify_kernel(out.after).ok, (cubin.path, code.kernel.name)
        assert [_without_control(i) for i in out.after.instructions] == [_without_control(i) for i in code.instructions]
        before = sum(i.ctrl.stall for i in code.instructions)
        after = sum(i.ctrl.stall for i in out.after.instructions)
        assert after <= before
        removed, total = removed + before - after, total + before
    assert removed > 0.02 * total, (removed, total)


@pytest.mark.slow
def test_swaps_verify_and_keep_the_multiset(corpus):
    done = 0
    for _cubin, code in corpus[::3]:
        for move in Swap.instances(code)[:3]:
            out = apply_each(code, [move])
            assert out.applied, out.skipped
            assert verify_kernel(out.after).ok
            assert Counter(map(_without_control, out.after.instructions)) == Counter(
                map(_without_control, code.instructions)
            )
            assert out.after.instructions[move.index].word != code.instructions[move.index].word
            done += 1
    assert done >= 30


def test_load_batch_on_rmsnorm_verifies_renames_and_shows_in_disasm(tmp_path):
    from reorder.sass.model import decode_kernel

    code = decode_kernel(read_cubin(RMS), "rmsnorm_triton_style")
    out = batch_loads(code, noalias=True)
    assert out.moved > 20 and out.applied
    assert verify_kernel(out.after).ok
    assert out.after.kernel.regcount > code.kernel.regcount
    assert Counter(map(_canonical, out.after.instructions)) == Counter(map(_canonical, code.instructions))
    assert any("assuming the buffers do not alias" in n for n in out.notes)
    path = tmp_path / "batched.cubin"
    path.write_bytes(out.data)
    listing = subprocess.run(
        [sys.executable, "-m", "reorder", "disasm", str(path), "--kernel", "rmsnorm_triton_style"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    lines = [ln for ln in listing.splitlines() if ln.startswith("/*")]
    assert [ln.split(None, 2)[2] for ln in lines] == [f"{i.text} ;" for i in out.after.instructions]


@pytest.mark.slow
def test_load_batch_without_noalias_never_passes_a_store(corpus):
    for _cubin, code in sample(corpus, every=8):  # the CPU tier: every eighth kernel (tests/sweeps.py)
        out = batch_loads(code, noalias=False)
        assert verify_kernel(out.after).ok
        stores = [i for i, ins in enumerate(code.instructions) if ins.access.mem_writes]
        new_pos = {ins.offset: k for k, ins in enumerate(out.after.instructions)}
        for s in stores:
            for j, ins in enumerate(code.instructions):
                if j > s and ins.access.mem_reads and basic_blocks(code.instructions) and _same_block(code, j, s):
                    assert new_pos[ins.offset] > new_pos[code.instructions[s].offset]


def _same_block(code, a: int, b: int) -> bool:
    return any(blk.start <= a < blk.end and blk.start <= b < blk.end for blk in basic_blocks(code.instructions))


def _blocks_for_property(corpus):
    picked = []
    for cubin, code in corpus:
        for b in basic_blocks(code.instructions):
            if 6 <= b.end - b.start <= 40:
                picked.append((cubin, code, b))
    return picked[::7]


@settings(  # derandomized: the same 40 orders in every CI run (explore locally with a seed of your own)
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_random_topological_orders_schedule_into_verified_code(corpus, data):
    from reorder.moves.schedule import schedule_block

    cubin, code, block = data.draw(st.sampled_from(_blocks_for_property(corpus)))
    graph = build_graph(code.instructions, block.indices(), cubin.arch)
    order: list[int] = []
    indegree = dict(graph.in_degree())
    ready = sorted(n for n, d in indegree.items() if d == 0)
    while ready:
        node = ready.pop(data.draw(st.integers(0, len(ready) - 1)))
        order.append(node)
        for succ in graph.successors(node):
            indegree[succ] -= 1
            if indegree[succ] == 0:
                ready.append(succ)
    assert nx.is_directed_acyclic_graph(graph) and len(order) == block.end - block.start
    try:
        new = schedule_block(code.instructions, block.start, block.end, order, cubin.arch)
    except LegalityError:
        assume(False)  # a refusal (rare: hypothesis fails the test when most examples are refused)
    assert not verify_instructions(new, cubin.arch), (cubin.path, code.kernel.name, block)


def test_an_order_that_leaves_an_untracked_result_uncovered_after_the_block_is_refused():
    """Hypothesis in CI: a random order of softplus_sigmoid's block put the op whose scoreboard
    covered an unscoreboarded MUFU.RCP before it; the FFMA after the block then read R12 with
    nothing to wait on. No stall can fix that (an untracked result is never assumed ready), and
    the scheduler returned the schedule for the verifier to reject; it refuses it now."""
    from reorder.moves.schedule import schedule_block
    from reorder.sass.model import decode_kernel

    cubin = read_cubin(ROOT / "tests" / "corpus" / "cubin" / "sm_80" / "transcendental.cubin")
    code = decode_kernel(cubin, "softplus_sigmoid")
    block = next(b for b in basic_blocks(code.instructions) if b.start == 14)
    picks = iter([0] * 12 + [1, 1, 0, 0, 0, 1, 1])
    graph = build_graph(code.instructions, block.indices(), cubin.arch)
    order, indegree = [], dict(graph.in_degree())
    ready = sorted(n for n, d in indegree.items() if d == 0)
    while ready:
        order.append(ready.pop(min(next(picks, 0), len(ready) - 1)))
        for succ in graph.successors(order[-1]):
            indegree[succ] -= 1
            if indegree[succ] == 0:
                ready.append(succ)
    with pytest.raises(LegalityError, match="untracked"):
        schedule_block(code.instructions, block.start, block.end, order, cubin.arch)


def test_noalias_for_listed_parameters_only():
    """A load passes a store only when one side's buffer was declared not to alias."""
    from reorder.sass.model import decode_kernel

    code = decode_kernel(read_cubin(RMS), "rmsnorm_triton_style")
    out_buffer = batch_loads(code, noalias=(2,))  # `out` declared: x/w loads may pass its stores
    scalar_only = batch_loads(code, noalias=(4,))  # `eps` is no buffer: nothing may pass a store
    nothing = batch_loads(code, noalias=False)
    assert out_buffer.moved > scalar_only.moved == nothing.moved
    assert any("hoisted above a store" in n for n in out_buffer.notes)
    assert not any("store" in n for n in scalar_only.notes)
    assert verify_kernel(out_buffer.after).ok


def test_every_family_has_the_one_move_shape(corpus):
    """reorder.moves.protocol: instances(code, options), name, blocks, apply; the build's
    families are the registry's, and block ranges in the options narrow every family."""
    from reorder.moves.blocks import block_at
    from reorder.moves.families import FAMILIES
    from reorder.moves.protocol import Move, MoveOptions

    names = set()
    for family in FAMILIES:
        names.add(family.name)
        for _cubin, code in corpus[:12]:
            everywhere = family.instances(code, MoveOptions(noalias=True))
            assert all(isinstance(m, Move) and m.name == family.name and m.blocks for m in everywhere)
            if everywhere:
                first = code.instructions[block_at(code.instructions, everywhere[0].blocks[0]).start].offset
                narrowed = family.instances(code, MoveOptions(noalias=True, ranges=((first, first + 16),)))
                assert narrowed and len(narrowed) <= len(everywhere)
                assert not family.instances(code, MoveOptions(noalias=True, ranges=((1 << 40, 1 << 41),)))
    assert names == {"stall_cut", "swap", "load_batch", "slice_batch", "barrier_hoist", "dominator_hoist"}
