"""The three rules an H200 run of 2026-11-30 taught (benchmarks/results/2026-11-30_verifier_rules_triton_loops):
verified candidates gave wrong bytes until the verifier knew them.

1. A variable-latency op issued without a read scoreboard still reads its registers after
   issue, any number of cycles on under load: a write to them needs a wait that proves the
   read done (on the op's own scoreboard, or a later op's of its in-order queue; the
   shared-memory pipe and SHFL are one). 6 cycles, the first rule, gave wrong bytes; so did
   a BAR.SYNC and 12 cycles.
2. A pipe narrower than a warp is busy for more than one cycle (legality.issue): sm_90's
   integer ALU 2 cycles, IMAD 2, IMAD.WIDE 4; the next op of the pipe waits for it.
3. An op guarded by @!PT never runs but is there on purpose (ptxas pads each LDGSTS with
   three `@!PT LDS RZ, [RZ]`): it is pinned like a barrier.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sass_snippet import listing as _code
from sass_snippet import parse_line

from legality.issue import load_rates
from legality.verify import verify_instructions


def _kinds(*lines: str, arch: int = 90) -> list[tuple[str, str, int, int]]:
    return [(v.kind, v.resource, v.required, v.provided) for v in verify_instructions(_code(*lines), arch)]


# ---------------------------------------------------------------- 1. reads without a read scoreboard


def test_overwriting_the_address_of_an_unbarred_load_without_a_wait_is_refused():
    """Triton's looped RMSNorm fp16 (8 warps): this pair loaded from the new address (NaN) at 4
    cycles, and again at 6 (call 4), the distance the first rule allowed."""
    for stall in (4, 6, 15):
        found = _kinds(
            f"B------:R-:W2:-:S{stall:02d}  LDG.E.64 R14, desc[UR14][R34.64]",
            "B------:R-:W-:-:S02  IMAD.WIDE R34, R1, 0x2, R4",
            "B--2---:R-:W-:-:S01  FADD R0, R14, R15",
        )
        assert ("scoreboard", "R34", "wait on SB2", "no wait") in found, stall


def test_a_wait_on_the_loads_result_or_a_later_load_of_its_queue_makes_the_overwrite_legal():
    assert not _kinds(
        "B------:R-:W2:-:S02  LDG.E.64 R14, desc[UR14][R34.64]",
        "B--2---:R-:W-:-:S04  IMAD.WIDE R34, R1, 0x2, R4",
        "B------:R-:W-:-:S01  FADD R0, R14, R15",
    )
    later = (  # fp16 half_dot4_mixed: the second load's read scoreboard covers the first load
        "B------:R-:W-:-:S01  LDG.E.CONSTANT R6, desc[UR4][R2.64+0x4]",
        "B------:R2:W3:-:S04  LDG.E.CONSTANT R0, desc[UR4][R2.64]",
        "B--2---:R-:W-:-:S02  HFMA2.MMA R3, R6, R7, -RZ",
    )
    assert not [k for k in _kinds(*later) if k[1] == "R3"]
    fresh = (later[0], later[1].replace("S04", "S01"), later[2])  # a wait 1 cycle on misses SB2
    assert ("scoreboard", "R3") in [k[:2] for k in _kinds(*fresh)]


def test_a_stores_registers_are_freed_by_a_wait_on_a_later_shared_pipe_op_not_by_a_barrier():
    """rms_norm_row fp32 (8 warps): STS [R2], R0, BAR.SYNC, I2FP R0 6 cycles on was wrong at 1,024
    rows, and still at 12 cycles; with a read scoreboard on the STS that I2FP waits on, identical
    (H200, call 8). ptxas frees an STS's registers after a wait on a later LDS or SHFL."""
    store, bar = "B------:R-:W-:-:S01  @P0 STS [R2], R0", "B------:R-:W-:-:S11  BAR.SYNC.DEFER_BLOCKING 0x0"
    overwrite = "B------:R-:W-:Y:S04  I2FP.F32.S32 R0, UR12"
    assert ("scoreboard", "R0") in [k[:2] for k in _kinds(store, bar, overwrite)]
    assert ("scoreboard", "R0") in [k[:2] for k in _kinds(store, "B------:R-:W-:-:S15  NOP", overwrite)]
    tracked = store.replace("R-:W-", "R5:W-")
    assert not [k for k in _kinds(tracked, bar, overwrite.replace("B------", "B-----5")) if k[1] == "R0"]
    for later in ("B------:R-:W1:-:S04  SHFL.BFLY PT, R15, R14, 0x1, 0x1f", "B------:R-:W1:-:S04  LDS R3, [R4]"):
        assert not [k for k in _kinds(store, later, overwrite.replace("B------", "B-1----")) if k[1] == "R0"], later
    other_queue = "B------:R-:W1:-:S04  LDG.E R3, desc[UR4][R8.64]"
    assert ("scoreboard", "R0") in [k[:2] for k in _kinds(store, other_queue, overwrite.replace("B------", "B-1----"))]


def test_no_compiler_made_cubin_overwrites_an_unread_source():
    """Every cubin the compilers made in the repository keeps the rule (the sources of it)."""
    from legality.verify import verify_instructions as walk
    from reorder.binary.cubin import read_cubin
    from reorder.sass.model import decode_kernel

    root = Path(__file__).resolve().parent.parent
    cubins = [
        *(root / "tests" / "corpus" / "cubin").glob("sm_*/*.cubin"),
        *(root / "benchmarks" / "kernels" / "cubin").glob("*.cubin"),
        *(root / "tests" / "corpus" / "triton" / "sm_90").glob("*.cubin"),
        *(root / "tests" / "data" / "silicon_wrong").glob("*.original.cubin"),
    ]
    assert len(cubins) > 30
    hits = []
    for path in cubins:
        cubin = read_cubin(path)
        for kernel in cubin.kernels:
            code = decode_kernel(cubin, kernel.name)
            hits += [
                (path.name, v.line())
                for v in walk(code.instructions, code.arch)
                if "proves it read" in v.detail
                or "fenced by a barrier" in v.detail
                or "later op of the queue" in v.detail
            ]
    assert not hits


# ---------------------------------------------------------------- 2. issue rates


def test_sm90_issue_rates_come_from_ptxas_floors():
    rates = load_rates(90)
    assert rates.busy_for("IADD3") == rates.busy_for("LOP3.LUT") == rates.busy_for("IMAD") == 2
    assert rates.busy_for("IMAD.WIDE.U32") == 4
    assert rates.busy_for("FFMA") == rates.busy_for("LDG.E") == 1  # full rate, and no rule for memory ops


def test_an_imad_wide_followed_on_its_pipe_one_cycle_on_is_refused():
    """mulhi_accumulate's stall cut (IMAD.WIDE.U32 then IMAD.WIDE.U32 one cycle on) lost a carry."""
    found = _kinds(
        "B------:R-:W-:-:S01  IMAD.WIDE.U32 R12, P0, R7, R8, R10",
        "B------:R-:W-:-:S04  IMAD.WIDE.U32 R2, R8, R6, RZ",
        "B------:R-:W-:-:S01  IMAD.X R15, RZ, RZ, RZ, P0",
    )
    assert ("issue", "PIPE:FMA", 4, 1) in found


def test_two_integer_ops_one_cycle_apart_are_refused_two_apart_pass():
    assert ("issue", "PIPE:FXU", 2, 1) in _kinds(
        "B------:R-:W-:-:S01  CS2R R4, SRZ",
        "B------:R-:W-:-:S02  CS2R R6, SRZ",
    )
    assert not _kinds(
        "B------:R-:W-:-:S02  CS2R R4, SRZ",
        "B------:R-:W-:-:S02  CS2R R6, SRZ",
    )


def test_other_pipes_do_not_wait_and_a_barrier_drains_them():
    assert not _kinds(  # FXU then FMA then FXU: each pipe sees 2 cycles
        "B------:R-:W-:-:S01  IADD3 R2, R0, 0x1, RZ",
        "B------:R-:W-:-:S01  FFMA R3, R4, R5, R6",
        "B------:R-:W-:-:S02  IADD3 R7, R0, 0x2, RZ",
    )
    assert not _kinds(
        "B------:R-:W-:-:S01  IMAD.MOV.U32 R9, RZ, RZ, R2",
        "B------:R-:W-:Y:S00  ERRBAR",
        "B------:R-:W-:-:S02  IMAD.MOV.U32 R8, RZ, RZ, R3",
    )


def test_sm80_full_rate_float_ops_are_half_rate_there():
    assert load_rates(80).busy_for("FFMA") == 2 and load_rates(86).busy_for("FFMA") == 1


# ---------------------------------------------------------------- 3. never-run ops are pinned


def test_an_op_guarded_by_not_true_is_a_barrier():
    pad, lds = _code("B------:R-:W-:-:S01  @!PT LDS RZ, [RZ]", "B------:R-:W0:-:S01  LDS R4, [R2]")[:2]
    assert pad.is_barrier and not lds.is_barrier


# ---------------------------------------------------------------- 4. predicates read by variable-latency ops


def test_ldgsts_reads_its_predicate_operand_like_a_guard():
    """Triton softmax (LOOP_STAGES 2, 8 warps): ISETP -> LDGSTS's zero-fill predicate at 4
    cycles gave wrong bytes (bisected on an H200: that one stall alone); ptxas leaves 13."""
    lines = (
        "B------:R-:W-:-:S01  ISETP.NE.U32.AND P3, PT, R36, RZ, PT",
        "B------:R-:W-:Y:S{:02d}  IMAD.MOV.U32 R36, RZ, RZ, R23",
        "B------:R3:W-:-:S01  LDGSTS.E.BYPASS.128 [R17+0x1000], desc[UR14][R6.64], P3",
    )
    assert ("raw_guard", "P3", 13, 4) in _kinds(lines[0], lines[1].format(3), lines[2])
    assert not [k for k in _kinds(lines[0], lines[1].format(12), lines[2]) if k[1] == "P3"]


# ---------------------------------------------------------------- 5. what stands before a barrier or an unknown op


def _neighbours(original_lines, candidate_lines):
    from legality.barriers import neighbour_violations

    return neighbour_violations(_code(*candidate_lines), _code(*original_lines), 90)


HGMMA_BEFORE = (
    "B------:R-:W-:-:S02  UIADD3.64 UR8, UR8, 0x4, URZ",
    "B------:R-:W-:Y:S09  UIADD3.64 UR10, UR10, 0x100, URZ",
    "B------:R-:W-:-:S01  WARPGROUP.ARRIVE",
    "B------:R-:W-:-:S03  HGMMA.64x128x16.F32 R24, gdesc[UR8].tnspB, R24",
)


def test_no_cycle_is_cut_in_front_of_an_op_the_tool_cannot_read():
    """Triton matmul (num_stages 3, 8 warps): UIADD3.64 UR10 S09 -> S01 before an HGMMA whose
    descriptor it writes gave wrong bytes; the verifier cannot see HGMMA's operands."""
    cut = list(HGMMA_BEFORE)
    cut[1] = cut[1].replace("S09", "S01")
    assert _neighbours(HGMMA_BEFORE, cut)
    assert not _neighbours(HGMMA_BEFORE, HGMMA_BEFORE)


def test_the_window_before_a_barrier_reaches_past_its_neighbour():
    original = (
        "B------:R-:W-:Y:S10  UMOV UR5, URZ",
        "B------:R-:W-:-:S01  UIADD3 UR15, UR15, 0x1, URZ",
        "B------:R-:W-:Y:S04  DEPBAR.LE SB0, 0x0",
    )
    cut = (original[0].replace("S10", "S01"),) + original[1:]
    found = _neighbours(original, cut)
    assert found and "fewer cycles into the barrier" in found[0][2]


def test_new_code_before_a_barrier_only_adds_cycles_and_passes():
    from legality.barriers import neighbour_violations

    original = _code(
        "B------:R-:W-:-:S02  IADD3 R2, R0, 0x1, RZ",
        "B------:R-:W-:-:S02  IADD3 R3, R0, 0x2, RZ",
        "B------:R-:W-:Y:S04  MEMBAR.SC.GPU",
    )
    new = [
        parse_line(line, 100 + k)
        for k, line in enumerate(("B------:R-:W-:-:S03  NOP", "B------:R-:W-:-:S02  CS2R.32 R40, SR_CLOCKLO"))
    ]
    probed = (original[0], *new, *original[1:])
    assert not neighbour_violations(probed, original, 90)
    far = _code(
        "B------:R-:W-:Y:S15  IADD3 R9, R0, 0x9, RZ",
        "B------:R-:W-:-:S02  IADD3 R2, R0, 0x1, RZ",
        "B------:R-:W-:-:S02  IADD3 R3, R0, 0x2, RZ",
        "B------:R-:W-:Y:S04  MEMBAR.SC.GPU",
    )
    moved_in = (far[1], far[0].with_ctrl(far[1].ctrl), far[2], *far[3:])  # R9's op moved in: refused
    assert neighbour_violations(moved_in, far, 90)


def test_a_candidate_that_writes_the_stack_pointer_is_refused():
    from legality.verify import _stack_pointer_writes

    original = _code("B------:R-:W0:-:S08  LDC R1, c[0x0][0x28]", "B------:R-:W-:-:S02  IADD3 R5, R2, 0xc00, R23")
    renamed = (original[0], parse_line("B------:R-:W-:-:S02  IADD3 R1, R2, 0xc00, R23", 1), original[2])
    assert not _stack_pointer_writes(original, original)
    assert [v.resource for v in _stack_pointer_writes(renamed, original)] == ["R1"]


# ---------------------------------------------------------------- 6. what the verifier still misses


WRONG = Path(__file__).parent / "data" / "silicon_wrong"
SLICE_BATCHED = ("rmsnorm_looped_fp16_ls1_w8", "rmsnorm_row_fp32_w8", "rmsnorm_row_fp16_w4")


@pytest.mark.parametrize("name", SLICE_BATCHED)
def test_the_verifier_rejects_slice_batches_silicon_found_wrong(name):
    """Triton candidates that gave NaN, wrong bytes or an illegal instruction on an H200 at 512-8,192
    rows (2026-11-30), each a slice batch renaming 51-117 instructions whose renames are right block
    by block (tests/test_equivalence.py). Each overwrites a source of an op without a read scoreboard
    before a wait proves it read (rule 1): the looped RMSNorm an LDG's address, the two row
    RMSNorms an STS's data or address. Repaired by that rule alone (a wait, or a read scoreboard
    and a wait: 3 instructions each), all three were identical at every shape (calls 5 and 8)."""
    from legality.verify import verify_kernel
    from reorder.binary.cubin import read_cubin
    from reorder.sass.model import decode_kernel

    original = decode_kernel(read_cubin(WRONG / f"{name}.original.cubin"))
    candidate = decode_kernel(read_cubin(WRONG / f"{name}.candidate.cubin"))
    assert not verify_kernel(candidate, original=original.instructions).ok


@pytest.mark.parametrize("name", SLICE_BATCHED)
def test_the_static_triton_path_no_longer_makes_them(name):
    from reorder.triton.rewrite import moves_binary

    made = moves_binary((WRONG / f"{name}.original.cubin").read_bytes(), noalias=True)
    assert made != (WRONG / f"{name}.candidate.cubin").read_bytes()


def test_a_cs2r_zero_is_not_read_at_the_alus_distance():
    """A Triton row sum's prefetch twin (four warps) whose stall cut let a VIADD read `CS2R R14,
    SRZ` 5 cycles on, the ALU -> IMAD floor: on an H200 the base came out stale and the next
    load faulted with a misaligned address inside Triton's autotuner (2026-12-02). CS2R has no
    ALU class now; the cut is refused and the static moves no longer make it."""
    from legality.verify import verify_kernel
    from reorder.binary.cubin import read_cubin
    from reorder.sass.model import decode_kernel
    from reorder.triton.rewrite import moves_binary

    original = WRONG / "row_sums_prefetch4_w4.original.cubin"
    candidate = WRONG / "row_sums_prefetch4_w4.candidate.cubin"
    verdict = verify_kernel(
        decode_kernel(read_cubin(candidate)), original=decode_kernel(read_cubin(original)).instructions
    )
    assert not verdict.ok and any("CS2R" in v.line() for v in verdict.violations)
    assert moves_binary(original.read_bytes(), noalias=True) != candidate.read_bytes()
