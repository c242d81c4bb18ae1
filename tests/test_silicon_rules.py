"""The three rules an H200 run of 2026-11-30 taught (benchmarks/results/2026-11-30_h200_session6):
verified candidates gave wrong bytes until the verifier knew them.

1. A variable-latency op issued without a read scoreboard still reads its registers after
   issue: a write to them keeps the table's `war` distance from class MIO (6 cycles for a
   fixed-latency writer), unless a wait on the op's write scoreboard proves the read done.
2. A pipe narrower than a warp is busy for more than one cycle (legality.issue): sm_90's
   integer ALU 2 cycles, IMAD 2, IMAD.WIDE 4; the next op of the pipe waits for it.
3. An op guarded by @!PT never runs but is there on purpose (ptxas pads each LDGSTS with
   three `@!PT LDS RZ, [RZ]`): it is pinned like a barrier.
"""

from __future__ import annotations

from sass_snippet import parse_line

from legality.issue import load_rates
from legality.verify import verify_instructions


def _code(*lines: str):
    return tuple(parse_line(line, k) for k, line in enumerate([*lines, "B------:R-:W-:Y:S05  EXIT"]))


def _kinds(*lines: str, arch: int = 90) -> list[tuple[str, str, int, int]]:
    return [(v.kind, v.resource, v.required, v.provided) for v in verify_instructions(_code(*lines), arch)]


# ---------------------------------------------------------------- 1. reads without a read scoreboard


def test_overwriting_the_address_of_an_unbarred_load_four_cycles_on_is_refused():
    """Triton's looped RMSNorm fp16 (8 warps): this pair loaded from the new address (NaN)."""
    found = _kinds(
        "B------:R-:W2:-:S04  LDG.E.64 R14, desc[UR14][R34.64]",
        "B------:R-:W-:-:S02  IMAD.WIDE R34, R1, 0x2, R4",
        "B--2---:R-:W-:-:S01  FADD R0, R14, R15",
    )
    assert ("war", "R34", 6, 4) in found and ("war", "R35", 6, 4) in found


def test_six_cycles_or_a_wait_on_the_loads_result_make_the_overwrite_legal():
    assert not _kinds(
        "B------:R-:W2:-:S06  LDG.E.64 R14, desc[UR14][R34.64]",
        "B------:R-:W-:-:S04  IMAD.WIDE R34, R1, 0x2, R4",
        "B--2---:R-:W-:-:S01  FADD R0, R14, R15",
    )
    assert not _kinds(
        "B------:R-:W2:-:S02  LDG.E.64 R14, desc[UR14][R34.64]",
        "B--2---:R-:W-:-:S04  IMAD.WIDE R34, R1, 0x2, R4",
        "B------:R-:W-:-:S01  FADD R0, R14, R15",
    )


def test_a_store_without_barriers_keeps_its_data_registers_six_cycles():
    """rms_norm_row fp32 (8 warps): STS then I2FP over its data 2 cycles on, wrong at 1024 rows."""
    found = _kinds(
        "B------:R-:W-:-:S02  STS [R3], R0",
        "B------:R-:W-:-:S02  I2FP.F32.S32 R0, R5",
    )
    assert ("war", "R0", 6, 2) in found


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
