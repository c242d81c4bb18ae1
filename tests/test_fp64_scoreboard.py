"""The FP64 pipe is variable latency where ptxas scoreboards it (sm_75..sm_89, sm_103, sm_120;
reorder.sass.opcodes.VARIABLE_LATENCY_ON) and fixed latency where it does not (sm_90, sm_100):
where it is, a reader of a DADD/DFMA/DMUL/DSETP result must wait on its scoreboard, whatever
the distance; where it is not, the distance suffices as before."""

from __future__ import annotations

import pytest
from sass_snippet import listing

from legality.evidence import verify_as_compiled
from legality.latency import MIO, latency_class, opcode_class
from legality.verify import verify_instructions
from reorder.sass import opcodes as op

SCOREBOARDED = (75, 80, 86, 87, 89, 103, 120)
FIXED = (90, 100)


def _kinds(*lines: str, arch: int) -> list[tuple[str, str]]:
    return [(v.kind, v.resource) for v in verify_instructions(listing(*lines, arch=arch), arch)]


@pytest.mark.parametrize("arch", (103, 120))
def test_a_fp64_result_read_without_a_wait_on_its_scoreboard_is_refused(arch):
    """ptxas' exact DADD -> DADD pair there is 2 cycles, the class row 8: neither distance is
    what makes the read legal, the wait is."""
    for stall in (2, 8, 15):
        found = _kinds(
            f"B------:R-:W0:-:S{stall:02d}  DADD R4, R2, R6",
            "B------:R-:W-:-:S04  DADD R8, R4, R10",
            arch=arch,
        )
        assert ("scoreboard", "R4") in found, (arch, stall)
    waited = _kinds("B------:R-:W0:-:S02  DADD R4, R2, R6", "B0-----:R-:W-:-:S04  DADD R8, R4, R10", arch=arch)
    assert not [k for k in waited if k[1] in ("R4", "R5")]


@pytest.mark.parametrize("arch", (103, 120))
def test_a_fp64_compare_read_by_a_branch_without_a_wait_is_refused(arch):
    found = _kinds(
        "B------:R-:W1:-:S15  DSETP.GEU.AND P0, PT, R2, R6, PT",
        "B------:R-:W-:-:S15  NOP",
        "B------:R-:W-:-:S04  @P0 FADD R8, R9, R10",
        arch=arch,
    )
    assert ("scoreboard", "P0") in found


def test_on_sm_90_the_same_read_at_the_fixed_distance_is_legal():
    lines = ("B------:R-:W-:-:S08  DADD R4, R2, R6", "B------:R-:W-:-:S04  DADD R8, R4, R10")
    assert not [k for k in _kinds(*lines, arch=90) if k[1] in ("R4", "R5")]
    short = (lines[0].replace("S08", "S01"), lines[1])
    assert ("raw", "R4") in _kinds(*short, arch=90)  # fixed latency: the distance is what counts


def test_an_unscoreboarded_dmul_is_covered_by_a_later_dfma_of_the_pipe():
    """stencil5_f64 on sm_103/sm_120: DMUL R16 with no scoreboard, DFMA W0, and the reader of
    R16 waits on SB0 (in-order completion); without the DFMA nothing proves R16 ready."""
    dmul, reader = "B------:R-:W-:-:S15  DMUL R16, R16, R2", "B0-----:R-:W-:-:S02  DFMA R8, R8, R16, R14"
    assert not [
        k for k in _kinds(dmul, "B------:R-:W0:-:S15  DFMA R20, R14, -4, R20", reader, arch=120) if k[1] == "R16"
    ]
    assert ("untracked", "R16") in _kinds(dmul, "B------:R-:W0:-:S15  DADD R20, R14, R20", reader, arch=120)


def test_the_arch_decides_the_class():
    for arch in SCOREBOARDED:
        assert all(opcode_class(base, arch) == MIO for base in op.FP64_PIPE), arch
    for arch in FIXED:
        assert {opcode_class(base, arch) for base in op.FP64_PIPE} == {"FMALITE"}, arch
    (dadd,) = listing("B------:R-:W0:-:S02  DADD R4, R2, R6", arch=120)[:1]
    assert dadd.is_variable_latency and latency_class(dadd) == MIO
    assert not listing("B------:R-:W-:-:S02  DADD R4, R2, R6", arch=90)[0].is_variable_latency


def _fixed_with_a_scoreboard(code) -> list[str]:
    return [
        f"{i.offset:#x} {i.text}"
        for i in code.instructions
        if i.known and not i.is_variable_latency and (i.ctrl.wbar != 7 or i.ctrl.rbar != 7)
    ]


def test_ptxas_sets_a_scoreboard_on_no_op_the_verifier_calls_fixed(corpus, blackwell_corpus):
    """The rule from the data: over the corpus as compiled for sm_80, sm_90, sm_100a and sm_120,
    every op ptxas gives a write or read scoreboard is variable latency on that arch (REDG's
    read scoreboard included)."""
    seen = set()
    for cubin, code in [*corpus, *blackwell_corpus]:
        assert not _fixed_with_a_scoreboard(code), (cubin.path, code.kernel.name)
        seen |= {(code.arch, i.base) for i in code.instructions if i.base in op.FP64_PIPE and i.ctrl.wbar != 7}
    assert {(120, "DADD"), (120, "DFMA"), (80, "DADD")} <= seen and not {a for a, _ in seen} & set(FIXED)


def test_blackwell_fp64_kernels_stay_legal_as_compiled(blackwell_corpus):
    """fp64.cu for sm_120 as ptxas compiled it, its DADDs now variable latency, verifies."""
    fp64 = [(c, k) for c, k in blackwell_corpus if c.arch == 120 and "fp64" in c.path]
    assert fp64
    for cubin, code in fp64:
        assert any(i.base in op.FP64_PIPE and i.is_variable_latency for i in code.instructions)
        report = verify_as_compiled(code)
        assert report.ok, (cubin.path, code.kernel.name, report.violations[:2])


def test_a_wait_on_the_ops_own_write_scoreboard_proves_its_sources_read():
    """sm_80 kahan_sum_f64 as ptxas compiled it: DADD R4, -R8, R4 with R0:W1, then DMUL R4 after
    a wait on SB1 alone (the result is written after the sources are read)."""
    dadd = "B------:R0:W1:Y:S06  DADD R4, -R8, R4"
    assert not _kinds(dadd, "B-1----:R-:W1:Y:S06  DMUL R4, R4, 0.5", arch=80)
    assert ("scoreboard", "R4") in _kinds(dadd, "B-----5:R-:W1:Y:S06  DMUL R4, R4, 0.5", arch=80)


@pytest.mark.parametrize("arch", (90, 120))
def test_overwriting_a_global_reductions_data_before_its_read_scoreboard_is_refused(arch):
    """REDG reads its registers after issue, as RED does: its read scoreboard must be waited on
    before its data or address registers are written again."""
    redg = "B------:R0:W-:-:S02  REDG.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR4][R4.64], R2"
    assert ("scoreboard", "R2") in _kinds(redg, "B------:R-:W-:-:S02  MOV R2, R7", arch=arch)
    assert not _kinds(redg, "B0-----:R-:W-:-:S02  MOV R2, R7", arch=arch)
