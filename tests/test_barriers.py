"""Barrier rules: the race an H200 showed (an LDS right behind BAR.SYNC) and the neighbour rule.

The shipped wrong winner had `@!P1 LDS` 1 cycle behind `BAR.SYNC.DEFER_BLOCKING`; the
tables, which know only register links, accepted it. Here the same situation is built in
the project's own rmsnorm_triton_style (the barrier's stall lowered so the LDS issues 4
or 5 cycles after it, every register dependency still covered) and in the barrier probe
kernels: the verifier must reject it standalone and against the original, and the
compiler's own distance (6) stays legal.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from legality import barriers
from legality.silicon.barrier_probe import build_variants, floor
from legality.verify import verify_instructions, verify_kernel
from reorder.binary.cubin import read_cubin
from reorder.moves.core import Swap
from reorder.sass.model import decode_kernel

ROOT = Path(__file__).parent.parent
RMSNORM = ROOT / "benchmarks" / "kernels" / "cubin" / "rmsnorm.cubin"
PROBES = ROOT / "legality" / "silicon" / "probes" / "barrier_probe_sm_90.cubin"
SYNC = ROOT / "tests" / "corpus" / "cubin" / "sm_90" / "sync.cubin"


def _rmsnorm():
    return decode_kernel(read_cubin(RMSNORM), "rmsnorm_triton_style")


def _with_barrier_stall(code, stall: int) -> tuple:
    ins = list(code.instructions)
    b = next(i for i, x in enumerate(ins) if x.opcode.startswith("BAR.SYNC"))
    assert ins[b + 1].base == "LDS", "the compiler put the LDS right behind the barrier"
    ins[b] = ins[b].with_ctrl(ins[b].ctrl.with_(stall=stall))
    return tuple(ins)


@pytest.mark.parametrize("stall", [4, 5])
def test_lds_too_soon_after_bar_sync_is_rejected(stall: int) -> None:
    code = _rmsnorm()
    candidate = _with_barrier_stall(code, stall)
    found = verify_instructions(candidate, code.arch)
    assert [v.kind for v in found] == ["barrier"], "every register link is covered: only the barrier rule sees it"
    assert found[0].producer_opcode.startswith("BAR.SYNC") and found[0].consumer_opcode == "LDS"
    assert (found[0].required, found[0].provided) == (6, stall)
    against = verify_kernel(code, candidate, original=code.instructions)
    assert not against.ok and against.violations[0].kind == "barrier", "not inherited: the original gives 6"


def test_compiler_distance_behind_bar_sync_is_legal() -> None:
    code = _rmsnorm()
    assert verify_kernel(code, _with_barrier_stall(code, 6), original=code.instructions).ok


def test_swap_behind_a_barrier_is_given_the_distance() -> None:
    """Swapping the instruction after BAR.SYNC with the LDS behind it (the shipped bug's move)
    now yields a schedule in which the LDS issues at least 6 cycles after the barrier."""
    code = decode_kernel(read_cubin(PROBES), "bar_sync_lds")
    b = next(i for i, x in enumerate(code.instructions) if x.base == "BAR")
    assert code.instructions[b + 2].base == "LDS"
    swap = next(m for m in Swap.instances(code) if m.index == b + 1)
    cand = swap.apply(code, code.instructions)
    ins = cand.instructions
    assert ins[b + 1].base == "LDS"
    assert ins[b].ctrl.stall >= 6
    assert verify_kernel(code, ins, original=code.instructions).ok


def test_probe_variants_isolate_the_barrier_rule() -> None:
    variants = {(v.kernel, v.name): v for v in build_variants(PROBES)}
    for d in range(1, 9):
        assert variants[("bar_sync_lds", f"after_d{d}")].other == "", "only the barrier rule may differ"
    code = decode_kernel(read_cubin(PROBES), "bar_sync_lds")
    for d in (1, 5):
        after = decode_kernel(read_cubin_bytes(variants[("bar_sync_lds", f"after_d{d}")].data), "bar_sync_lds")
        kinds = {v.kind for v in verify_instructions(after.instructions, code.arch)}
        assert "barrier" in kinds


def read_cubin_bytes(data: bytes):
    from reorder.binary.cubin import parse_cubin

    return parse_cubin(data, "variant")


def test_floor_is_where_every_larger_distance_was_right() -> None:
    rows = [
        {"kernel": "k", "side": "after", "cycles": c, "status": "ok", "check": ok}
        for c, ok in (
            (1, "MISMATCH"),
            (2, "MISMATCH"),
            (3, "identical"),
            (4, "MISMATCH"),
            (5, "identical"),
            (6, "identical"),
        )
    ]
    assert floor(rows, "k", "after") == 5
    assert floor(rows[:2], "k", "after") is None


def _flag_handoff():
    return decode_kernel(read_cubin(SYNC), "flag_handoff")


def _membar_index(code, nth: int = 1) -> int:
    return [i for i, x in enumerate(code.instructions) if x.base == "MEMBAR"][nth]


def test_membar_keeps_its_neighbours() -> None:
    code = _flag_handoff()
    m = _membar_index(code)
    ins = list(code.instructions)
    assert not barriers.neighbour_violations(tuple(ins), code.instructions, code.arch)
    ins[m - 1], ins[m - 2] = ins[m - 2], ins[m - 1]  # the store before MEMBAR swapped away from it
    found = verify_kernel(code, tuple(ins), original=code.instructions).violations
    assert any(v.kind == "barrier_neighbour" and v.producer_opcode.startswith("MEMBAR") for v in found)


def test_membar_stall_may_not_shrink() -> None:
    code = _flag_handoff()
    m = _membar_index(code)
    ins = list(code.instructions)
    ins[m] = ins[m].with_ctrl(ins[m].ctrl.with_(stall=ins[m].ctrl.stall - 1))
    found = barriers.neighbour_violations(tuple(ins), code.instructions, code.arch)
    assert found and "control code" in found[0][2]


def test_bar_sync_has_a_distance_rule_and_other_barriers_keep_neighbours() -> None:
    rules = barriers.load_rules(90)
    assert rules.distance_for("BAR.SYNC.DEFER_BLOCKING").cycles == 6
    assert rules.distance_for("BAR.RED.POPC.DEFER_BLOCKING").cycles == 6
    assert rules.distance_for("BAR.ARV") is None
    code = _flag_handoff()
    assert rules.keeps_neighbours(code.instructions[_membar_index(code)])


def test_measured_floors_are_the_rules() -> None:
    """The H200 sweep (benchmarks/results/2026-11-30_barrier): wrong at 1-5, right at 6-8."""
    import csv

    rows = list(csv.DictReader((ROOT / "benchmarks" / "results" / "2026-11-30_barrier" / "barrier_sweep.csv").open()))
    rules = barriers.load_rules(90)
    for kernel, opcode in (("bar_sync_lds", "BAR.SYNC.DEFER_BLOCKING"), ("bar_red_lds", "BAR.RED.POPC.DEFER_BLOCKING")):
        assert floor(rows, kernel, "after") == rules.distance_for(opcode).cycles == 6


def test_bar_red_reads_its_predicate_like_a_guard() -> None:
    """FSETP -> BAR.RED.POPC at 4-6 cycles counted wrong on the H200 (ptxas leaves 13): every
    such variant must be rejected for the predicate, and the compiler's 13 stays legal."""
    variants = {(v.kernel, v.name): v for v in build_variants(PROBES)}
    for d in range(1, 6):
        code = decode_kernel(read_cubin_bytes(variants[("bar_red_lds", f"before_d{d}")].data), "bar_red_lds")
        found = verify_instructions(code.instructions, code.arch)
        assert any(
            v.resource == "P0" and v.consumer_opcode.startswith("BAR.RED") and v.required == 13 for v in found
        ), d
    original = decode_kernel(read_cubin(PROBES), "bar_red_lds")
    assert not [v for v in verify_instructions(original.instructions, original.arch) if v.resource == "P0"]


def test_latency_probe_barriers_lists_the_variants() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "reorder", "latency-probe", "--barriers", "--build-only"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == "30 variants for sm_90 (barrier_probe_sm_90.cubin)"  # 28 and one canary per kernel
    assert sum("bar_sync_lds" in x and "after_d" in x and "legal otherwise" in x for x in lines) == 8


KSELECT = ROOT / "benchmarks" / "kernels" / "cubin" / "kselect.cubin"


def test_stall_cuts_keep_the_cycles_into_kept_barriers() -> None:
    """warp_select is full of WARPSYNC/ENDCOLLECTIVE: a stall cut that lowered the stall of the
    instruction before one was rejected by the neighbour rule (every trial of an H200 search
    failed). The scheduler now keeps those stalls, and the whole-kernel cut is legal."""
    from reorder.build.pipeline import cut_stalls

    code = decode_kernel(read_cubin(KSELECT), "warp_select_k32")
    out = cut_stalls(code)
    assert out.applied
    assert verify_kernel(out.after, original=code.instructions).ok
    stalls = lambda ins: sum(i.ctrl.stall for i in ins)  # noqa: E731
    assert stalls(out.after.instructions) < stalls(code.instructions)


def test_no_swap_is_offered_beside_a_kept_barrier() -> None:
    code = decode_kernel(read_cubin(KSELECT), "warp_select_k32")
    kept = barriers.load_rules(code.arch).keeps_neighbours
    ins = code.instructions
    for m in Swap.instances(code):
        assert not (m.index > 0 and kept(ins[m.index - 1])) and not kept(ins[m.index + 2])
