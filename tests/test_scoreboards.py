"""Own scoreboards for a batch of loads (reorder.moves.scoreboards) and the verifier's rule on
scoreboard reuse (legality.scoreboards): a good spread is legal and gives each first use its own
group's scoreboard; a load put onto a scoreboard a store's source read still holds is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from legality.scoreboards import reassigned
from legality.verify import reuse_verdict, verify_kernel
from reorder.binary.cubin import read_cubin
from reorder.build.pipeline import apply_each
from reorder.moves.protocol import MoveOptions
from reorder.moves.scoreboards import _first_use
from reorder.moves.slicebatch import SliceBatch
from reorder.sass.model import decode_kernel

RMS = Path(__file__).resolve().parent.parent / "benchmarks" / "kernels" / "cubin" / "rmsnorm.cubin"
NORMALISE = 0x0CB0  # the normalise pass's loop body: 4 chunks of x and w loads, a store each


@pytest.fixture(scope="module")
def code():
    return decode_kernel(read_cubin(RMS), "rmsnorm_triton_style")


def _index(code, offset: int) -> int:
    return next(k for k, i in enumerate(code.instructions) if i.offset == offset)


def _with(code, changes: dict[int, dict[str, int]]):
    """The original instructions with some control fields changed (offset -> fields)."""
    return tuple(
        i.with_ctrl(i.ctrl.with_(**changes[i.offset])) if i.offset in changes else i for i in code.instructions
    )


def test_a_load_moved_onto_a_pending_store_read_is_refused(code):
    # 0x0dd0 LDG R4 (SB2) right after 0x0dc0 STG (source read on SB0); its user 0x0e10 waits on SB2
    store, load, user = (code.instructions[_index(code, o)] for o in (0x0DC0, 0x0DD0, 0x0E10))
    assert store.base == "STG" and store.ctrl.rbar == 0 and load.base == "LDG" and user.ctrl.waits_on(load.ctrl.wbar)
    bad = _with(code, {0x0DD0: {"wbar": 0}, 0x0E10: {"wait": user.ctrl.wait | 1}})
    report = verify_kernel(code, bad, original=code.instructions)
    assert {v.kind for v in report.violations} == {"scoreboard_reuse"}, [v.line() for v in report.violations]
    assert report.violations[0].producer_offset == 0x0DC0 and report.violations[0].consumer_offset == 0x0DD0


def test_a_load_moved_onto_a_free_scoreboard_is_legal(code):
    user = code.instructions[_index(code, 0x0E10)]
    good = _with(code, {0x0DD0: {"wbar": 1}, 0x0E10: {"wait": user.ctrl.wait | 2}})
    assert reassigned(good, code.instructions) == {0x0DD0: 1}
    assert not reuse_verdict(good, code.instructions, code.arch)
    assert verify_kernel(code, good, original=code.instructions).ok


def test_the_compilers_own_sharing_is_no_reassignment(code):
    assert reassigned(code.instructions, code.instructions) == {}
    assert verify_kernel(code, original=code.instructions).ok


def test_a_batch_spreads_its_loads_so_each_first_use_waits_for_its_own(code):
    start = _index(code, NORMALISE)
    move = next(
        m for m in SliceBatch.instances(code, MoveOptions(noalias=True)) if m.block_start == start and m.own_scoreboards
    )
    out = apply_each(code, [move])  # written, read back and verified against the original
    assert out.applied and any("spread over" in n for n in out.notes), out.notes
    after = out.after.instructions
    assert verify_kernel(out.after, original=code.instructions).ok
    end = next(k for k in range(start, len(after)) if after[k].base == "BRA") + 1
    block = after[start:end]
    loads = [k for k, i in enumerate(block) if i.base == "LDG"]
    assert len(loads) == 8 and len({block[k].ctrl.wbar for k in loads}) >= 4
    for k in loads:  # the first use of each load waits on that load's scoreboard
        assert block[_first_use(block, k)].ctrl.waits_on(block[k].ctrl.wbar)
    by_use = [block[k].ctrl.wbar for k in sorted(loads, key=lambda k: _first_use(block, k))]
    groups = len(set(by_use))
    # one group per scoreboard, loads used one after another, none larger than it must be
    assert all(by_use.count(sb) <= -(-len(loads) // groups) for sb in by_use)
    assert [sb for k, sb in enumerate(by_use) if k == 0 or by_use[k - 1] != sb] == list(dict.fromkeys(by_use))


def test_the_kept_twin_keeps_the_compilers_scoreboards(code):
    start = _index(code, NORMALISE)
    twins = [m for m in SliceBatch.instances(code, MoveOptions(noalias=True)) if m.block_start == start]
    assert sorted(m.own_scoreboards for m in twins) == [False, True]
    kept = next(m for m in twins if not m.own_scoreboards).apply(code, code.instructions)
    assert {i.ctrl.wbar for i in kept.instructions if i.base == "LDG" and i.offset >= NORMALISE} == {2, 3}
