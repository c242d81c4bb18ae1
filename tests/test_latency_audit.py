"""The latency audit (legality.calibration.audit): where the verifier allows less than ptxas ever
leaves, and the table changes it led to (benchmarks/results/2026-12-02_latency_audit).

An opcode in a latency class whose floor is below what it needs is a silent wrong answer on
silicon (CS2R in the ALU class: a Triton twin faulted with a misaligned address on an H200). Each
change keeps a short listing at the distance the old table allowed."""

from __future__ import annotations

from pathlib import Path

from sass_snippet import listing

from legality.calibration import audit
from legality.verify import verify_instructions

ROOT = Path(__file__).resolve().parent.parent
WRONG = ROOT / "tests" / "data" / "silicon_wrong"


def _kinds(*lines: str, arch: int = 90) -> list[tuple[str, str, int, int]]:
    return [(v.kind, v.resource, v.required, v.provided) for v in verify_instructions(listing(*lines), arch)]


def _with_class(opcode: str, cls: str | None):
    """Put `opcode` in latency class `cls` (None: take it out), returning what undoes it."""
    from legality import latency

    before = latency._CLASS_OF.get(opcode)
    if cls is None:
        latency._CLASS_OF.pop(opcode, None)
    else:
        latency._CLASS_OF[opcode] = cls
    latency.opcode_class.cache_clear()

    def undo() -> None:
        _with_class(opcode, before)

    return undo


def test_the_audit_flags_cs2r_in_the_alus_class_and_not_in_its_own():
    """The faulting twin's original, as ptxas built it: CS2R read by a VIADD 8 cycles on. With
    CS2R in the ALU class (FXU -> IMAD 5) the audit calls that row a suspect; in its own class
    (an unknown pair's 15, or ptxas' exact pairs) the verifier asks more than ptxas left."""
    from legality.latency import FXU

    pairs = audit.exact_pairs([WRONG / "row_sums_prefetch4_w4.original.cubin"], 90, jobs=1)

    def cs2r_to_imad() -> audit.Row:
        return next(r for r in audit.rows(90, pairs) if r.producer == "CS2R" and r.consumer_class == "IMAD")

    now = cs2r_to_imad()
    assert now.kind.startswith("raw") and now.ptxas_min == 8 and now.required == 15 and not now.suspect(samples=1)
    undo = _with_class("CS2R", FXU)
    try:
        old = cs2r_to_imad()
    finally:
        undo()
    assert (old.required, old.ptxas_min, old.gap) == (5, 8, 3) and old.suspect(samples=1)


def test_the_audit_reads_only_compiler_made_cubins_and_writes_every_row(tmp_path):
    cubins = audit.compiler_cubins()
    assert cubins and not [p for p in cubins if p.name.endswith(".candidate.cubin")]
    assert WRONG / "row_sums_prefetch4_w4.original.cubin" in cubins
    pairs = audit.exact_pairs([WRONG / "rmsnorm_row_fp32_w8.original.cubin"], 90, jobs=1)
    table = audit.rows(90, pairs)
    text = audit.to_csv(table)
    assert text.splitlines()[0].split(",") == audit.FIELDS and len(text.splitlines()) == len(table) + 1
    assert all(r.producer_class not in ("MIO", "BRU") for r in table)
    out = tmp_path / "t.csv"
    assert audit.main(["--arch", "sm_90", "--csv", str(out), "--folders", "tests/data/silicon_wrong"]) == 0
    assert out.read_text().startswith("arch,producer,")


def test_no_opcode_of_the_corpus_is_read_only_above_its_class():
    """CS2R's signature, an opcode whose results ptxas never reads at its class's distance (2 or
    more cycles above it for every consumer, over 20 pairs or more), is nowhere in the corpus'
    sm_90 cubins nor the Triton kernels kept: the tables have no CS2R-like class left there."""
    cubins = sorted((ROOT / "tests" / "corpus" / "cubin" / "sm_90").glob("*.cubin"))
    cubins += sorted(WRONG.glob("*.original.cubin"))
    opcodes = audit.by_opcode(audit.rows(90, audit.exact_pairs(cubins, 90)))
    assert [(o.producer, o.family) for o in opcodes if o.family != "waw" and o.suspect()] == []
    assert sum(o.samples for o in opcodes) > 5_000


# ---------------------------------------------------------------- the changes, each at the old distance


def test_a_p2r_result_is_not_read_at_the_alus_distance():
    """P2R was in the ALU class (FXU -> FXU 4); ptxas never reads one sooner than 8 cycles on (warp_select)."""
    cut = ("B------:R-:W-:-:S04  P2R R7, PR, RZ, 0x1", "B------:R-:W-:-:S01  ISETP.NE.AND P0, PT, R7, RZ, PT")
    assert _kinds(*cut) == [("raw", "R7", 8, 4)]
    assert not _kinds(cut[0].replace("S04", "S08"), cut[1])  # ptxas' own distance stays legal


def test_a_cs2r_register_is_not_written_again_two_cycles_on():
    """A write-after-write of a CS2R's register 2 cycles on (an unknown pair's default): the CS2R,
    readable only 6 cycles on, could land after it; ptxas leaves 4 at least."""
    cut = ("B------:R-:W-:-:S02  CS2R R4, SRZ", "B------:R-:W-:-:S04  IADD3 R4, R0, 0x1, RZ")
    assert ("waw", "R4", 4, 2) in _kinds(*cut)
    assert not [k for k in _kinds(cut[0].replace("S02", "S04"), cut[1]) if k[0] == "waw"]


def test_an_r2ur_register_is_not_written_again_two_cycles_on():
    """R2UR's uniform result is readable only 13-15 cycles on (ref 3.1): a uniform write 2 cycles
    on could land before it; ptxas leaves 13 at least."""
    cut = ("B------:R-:W-:-:S02  R2UR UR4, R2", "B------:R-:W-:-:S04  UIADD3 UR4, UR5, 0x1, URZ")
    assert ("waw", "UR4", 13, 2) in _kinds(*cut)
