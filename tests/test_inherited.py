"""Triton's own schedules: what the verifier's tables call violations in a compiler's cubin
is judged against that cubin (legality.inherited), so the search can work on kernels whose
compiler patterns the tables have not learned.

Reproducers: Triton's HGMMA matmul has four store->shared-load write-after-read patterns
ptxas emits without a wait. Before either fix every candidate was rejected for them; the
calibrated table now knows that exact pair (`war_sb`), so the tests that need a pattern
the tables do not know hide it again (`unlearned`). A stall cut in a one-instruction block
shortened a predicate->branch dependency that ran through it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from legality import verify
from legality.latency import LatencyTable
from legality.verify import verify_kernel
from reorder.binary.cubin import parse_cubin, read_cubin
from reorder.moves.core import StallCut
from reorder.sass.model import decode_kernel

TRITON = Path(__file__).resolve().parent / "corpus" / "triton" / "sm_90"


@pytest.fixture(scope="module")
def matmul():
    return decode_kernel(read_cubin(TRITON / "matmul.cubin"), "matmul")


@pytest.fixture
def unlearned(monkeypatch):
    """The tables without the store -> shared-load pairs they learned from this cubin."""
    verify.clear_caches()  # walks made with the unpatched table
    monkeypatch.setattr(LatencyTable, "unwaited_war_ok", lambda self, reader, writer, elapsed: False)
    yield
    monkeypatch.undo()
    verify.clear_caches()


def test_triton_cubins_are_legal_with_the_calibrated_table(matmul):
    assert verify_kernel(decode_kernel(read_cubin(TRITON / "rmsnorm.cubin"), "rmsnorm")).ok
    assert verify_kernel(matmul).ok


def test_the_compilers_own_patterns_are_inherited(matmul, unlearned):
    alone = verify_kernel(matmul)
    assert not alone.ok and {v.kind for v in alone.violations} == {"scoreboard"}
    against = verify_kernel(matmul, original=matmul.instructions)
    assert against.ok and len(against.inherited) == len(alone.violations)
    assert against.verdict().startswith("legal (4 violations inherited")


def test_fewer_cycles_than_the_compiler_left_is_a_rejection(matmul, unlearned):
    (first, *_) = verify_kernel(matmul).violations
    ins = list(matmul.instructions)
    between = [
        i for i, x in enumerate(ins) if first.producer_offset <= x.offset < first.consumer_offset and x.ctrl.stall > 1
    ]
    assert between, "the pattern has stall cycles to take away"
    for i in between:
        ins[i] = ins[i].with_ctrl(ins[i].ctrl.with_(stall=1))
    tighter = verify_kernel(matmul, tuple(ins), original=matmul.instructions)
    assert not tighter.ok
    assert any(
        v.producer_offset == first.producer_offset and v.consumer_offset == first.consumer_offset
        for v in tighter.violations
    )


def test_a_stall_cut_keeps_dependencies_that_run_through_its_block(matmul):
    """Block 520 is one IMAD between ISETP P0 (before it) and @!P0 BRA (after it)."""
    cand = StallCut(block_starts=(520, 702)).apply(matmul, matmul.instructions)
    written = decode_kernel(parse_cubin(cand.cubin_bytes(), "cut"), "matmul")
    report = verify_kernel(written, original=matmul.instructions)
    assert report.ok, report.violations[0].line()
    assert not [v for v in report.violations + report.inherited if v.kind == "raw_guard"]


def test_verify_cli_against_the_original(tmp_path, capsys, unlearned):
    from reorder.cli.main import main

    assert main(["verify", str(TRITON / "matmul.cubin"), "--tables-only"]) == 1
    assert main(["verify", str(TRITON / "matmul.cubin"), "--against", str(TRITON / "matmul.cubin")]) == 0
    out = capsys.readouterr().out
    assert "legal, 4 inherited from the original" in out and "inherited scoreboard" in out
    # alone, the cubin is judged as compiled: its own distance for that exact pair is the evidence
    assert main(["verify", str(TRITON / "matmul.cubin")]) == 0
    assert "compiler-in-this-cubin war_sb     STG.E -> LDS.128: 4 cycles as compiled" in capsys.readouterr().out


def test_the_learned_store_then_shared_load_needs_the_compilers_cycles(matmul):
    """ptxas overwrites STG.E's data with LDS.128 unwaited at 4+ cycles; fewer is rejected."""
    ins = list(matmul.instructions)
    store = next(i for i, x in enumerate(ins) if x.offset == 0x4BE0)
    load = next(i for i, x in enumerate(ins) if x.offset == 0x4C10)
    assert ins[store].opcode == "STG.E" and ins[load].opcode == "LDS.128"
    for i in range(store, load):
        ins[i] = ins[i].with_ctrl(ins[i].ctrl.with_(stall=1))
    tighter = verify_kernel(matmul, tuple(ins))
    assert any(
        v.kind == "scoreboard" and v.producer_offset == 0x4BE0 and v.consumer_offset == 0x4C10
        for v in tighter.violations
    ), [v.line() for v in tighter.violations]
