"""legality.equivalence: each block of a candidate leaves the original's values in the registers
read after it and makes the same stores, whatever the registers are called."""

from __future__ import annotations

from pathlib import Path

import pytest
from sass_snippet import listing as _code

from legality.equivalence import block_differences

ORIGINAL = (
    "B------:R-:W-:-:S02  IADD3 R2, R0, 0x1, RZ",
    "B------:R-:W-:-:S04  IADD3 R3, R1, 0x2, RZ",
    "B------:R-:W-:-:S02  IADD3 R4, R2, R3, RZ",
    "B------:R-:W-:-:S02  STG.E desc[UR4][R6.64], R4",
)


def test_a_consistent_rename_and_a_reorder_compute_the_same():
    renamed = (
        "B------:R-:W-:-:S02  IADD3 R9, R1, 0x2, RZ",
        "B------:R-:W-:-:S04  IADD3 R8, R0, 0x1, RZ",
        "B------:R-:W-:-:S02  IADD3 R4, R8, R9, RZ",
        "B------:R-:W-:-:S02  STG.E desc[UR4][R6.64], R4",
    )
    assert not block_differences(_code(*ORIGINAL), _code(*renamed))


def test_a_rename_that_reads_the_wrong_register_is_caught():
    wrong = list(ORIGINAL)
    wrong[2] = "B------:R-:W-:-:S02  IADD3 R4, R2, R1, RZ"  # reads R1 where R3 was meant
    found = block_differences(_code(*ORIGINAL), _code(*wrong))
    assert found and "stores differ" in found[0].what


def test_a_guarded_store_sees_only_what_was_written_under_its_guard():
    """Two guarded chunks reuse registers (Triton's unrolled RMSNorm): under the store's own guard
    the value of the other chunk's write does not matter."""
    original = (
        "B------:R-:W-:-:S02  @!P0 FMUL R8, R3, R4",
        "B------:R-:W-:-:S02  @!P0 STG.E desc[UR6][R18.64], R8",
        "B------:R-:W-:-:S02  @!P1 FMUL R8, R3, R5",
        "B------:R-:W-:-:S02  @!P1 STG.E desc[UR6][R18.64+0x100], R8",
    )
    renamed = (
        "B------:R-:W-:-:S02  @!P0 FMUL R8, R3, R4",
        "B------:R-:W-:-:S02  @!P1 FMUL R9, R3, R5",
        "B------:R-:W-:-:S02  @!P0 STG.E desc[UR6][R18.64], R8",
        "B------:R-:W-:-:S02  @!P1 STG.E desc[UR6][R18.64+0x100], R9",
    )
    assert not block_differences(_code(*original), _code(*renamed))


def test_a_wide_result_is_not_mistaken_for_its_source():
    """IMAD.WIDE R6, R7, 0x2, R4 writes R6 and R7 and reads R7: R7 is a source here."""
    original = ("B------:R-:W-:-:S04  IMAD.WIDE R6, R7, 0x2, R4", "B------:R-:W-:-:S02  STG.E desc[UR6][R6.64], R8")
    renamed = ("B------:R-:W-:-:S04  IMAD.WIDE R10, R7, 0x2, R4", "B------:R-:W-:-:S02  STG.E desc[UR6][R10.64], R8")
    assert not block_differences(_code(*original), _code(*renamed))


WRONG = Path(__file__).parent / "data" / "silicon_wrong"


@pytest.mark.parametrize("name", ("rmsnorm_looped_fp16_ls1_w8", "rmsnorm_row_fp32_w8", "rmsnorm_row_fp16_w4"))
def test_the_silicon_wrong_slice_batches_compute_the_right_values(name):
    """The three slice batches the H200 found wrong rename correctly, block by block: what made
    them wrong was not their dataflow but a register overwritten before the op reading it had
    read it (tests/test_silicon_rules.py, rule 1)."""
    from reorder.binary.cubin import read_cubin
    from reorder.sass.model import decode_kernel

    original = decode_kernel(read_cubin(WRONG / f"{name}.original.cubin"))
    candidate = decode_kernel(read_cubin(WRONG / f"{name}.candidate.cubin"))
    assert not block_differences(original.instructions, candidate.instructions)


def test_values_that_double_at_every_step_compare_at_once():
    """A compensated sum reads each value twice per step: as nested tuples the expressions
    doubled at every step and kahan_sum_f64's batch ran for minutes inside one comparison (a C
    call no SIGTERM reaches). Hash-consed, 48 doublings compare at once; run in a child so a
    regression fails here on a timeout instead of hanging the tier."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import sys
        sys.path.insert(0, "tests")
        from sass_snippet import listing
        from legality.equivalence import block_differences
        n = 48
        original = ["B------:R-:W-:-:S04  FADD R2, R2, R2"] * n + ["B------:R-:W-:-:S02  STG.E desc[UR4][R8.64], R2"]
        renamed = ["B------:R-:W-:-:S04  FADD R3, R2, R2"] + ["B------:R-:W-:-:S04  FADD R3, R3, R3"] * (n - 1)
        renamed += ["B------:R-:W-:-:S02  STG.E desc[UR4][R8.64], R3"]
        assert not block_differences(listing(*original), listing(*renamed))
        wrong = renamed[:-1] + ["B------:R-:W-:-:S02  STG.E desc[UR4][R8.64], R2"]
        assert block_differences(listing(*original), listing(*wrong))
        """
    )
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=root, timeout=60, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
