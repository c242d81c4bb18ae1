"""Legality: no false rejects on the corpus; every under-stall mutant rejected for the right pair."""

from __future__ import annotations

import itertools
import subprocess
import sys

import pytest

from legality.latency import load_table
from legality.mutate import over_stalls, scoreboard_mutants, stall_cuts
from legality.verify import verify_instructions, verify_kernel
from reorder.sass.model import decode_kernel


def test_no_false_rejects_on_corpus(corpus):
    for cubin, code in corpus:
        report = verify_kernel(code)
        assert report.ok, (cubin.path, code.kernel.name, [v.line() for v in report.violations[:3]])


def _names_pair(violations, mutant) -> bool:
    return any(v.producer_offset == mutant.producer and v.consumer_offset == mutant.consumer for v in violations)


@pytest.mark.parametrize("family", ["stall_cut", "scoreboard"])
def test_under_stall_mutants_are_rejected_with_the_right_pair(corpus, family):
    counts: dict[str, int] = {}
    for cubin, code in corpus:
        source = (
            stall_cuts(code.instructions, cubin.arch)
            if family == "stall_cut"
            else scoreboard_mutants(code.instructions)
        )
        for mutant in itertools.islice(source, 6):
            violations = verify_instructions(mutant.instructions, cubin.arch)
            assert violations, (cubin.path, code.kernel.name, mutant.kind, hex(mutant.producer), hex(mutant.consumer))
            assert _names_pair(violations, mutant), (cubin.path, mutant.kind, [v.line() for v in violations[:3]])
            counts[mutant.kind] = counts.get(mutant.kind, 0) + 1
    expected = {
        "stall_cut": ["stall_cut", "guard_early"],
        "scoreboard": ["drop_wait", "drop_scoreboard", "swap_scoreboard"],
    }[family]
    for kind in expected:
        assert counts.get(kind, 0) >= 10, counts


def test_branch_condition_read_too_early_is_rejected(corpus):
    seen = 0
    for cubin, code in corpus:
        for mutant in stall_cuts(code.instructions, cubin.arch):
            consumer = next(i for i in code.instructions if i.offset == mutant.consumer)
            if consumer.base == "BRA" and mutant.kind == "guard_early":
                violations = verify_instructions(mutant.instructions, cubin.arch)
                assert any(v.kind == "raw_guard" and v.consumer_offset == mutant.consumer for v in violations)
                seen += 1
    assert seen >= 5


def test_over_stall_variants_are_accepted(corpus):
    for cubin, code in corpus:
        mutant = over_stalls(code.instructions)
        assert not verify_instructions(mutant.instructions, cubin.arch), (cubin.path, code.kernel.name)


def test_illegal_encodings_are_rejected(corpus):
    cubin, code = next((c, k) for c, k in corpus if c.arch == 90)
    index = next(i for i, ins in enumerate(code.instructions) if ins.ctrl.stall >= 2 and not ins.ctrl.reuse)
    ins = code.instructions[index]
    for ctrl in (ins.ctrl.with_(stall=0, yield_bit=1), ins.ctrl.with_(stall=13, yield_bit=1)):
        mutated = list(code.instructions)
        mutated[index] = ins.with_ctrl(ctrl)
        assert any(v.kind == "encoding" for v in verify_instructions(tuple(mutated), cubin.arch))


def test_every_table_entry_has_provenance():
    for arch in (80, 90):
        table = load_table(arch)
        for entry in list(table.entries.values()) + list(table.defaults.values()):
            assert entry.provenance and entry.cycles >= 1


def test_verify_cli_exit_codes(corpus_dir, tmp_path):
    from reorder.binary.cubin import read_cubin
    from reorder.sass.writer import patch_kernel

    path = next(corpus_dir.glob("sm_90/*.cubin"))
    ok = subprocess.run(
        [sys.executable, "-m", "reorder", "verify", str(path)], capture_output=True, text=True, check=False
    )
    assert ok.returncode == 0, ok.stdout
    cubin = read_cubin(path)
    for kernel in cubin.kernels:
        code = decode_kernel(cubin, kernel.name)
        mutant = next(scoreboard_mutants(code.instructions), None)
        if mutant:
            bad = tmp_path / "bad.cubin"
            bad.write_bytes(patch_kernel(cubin, kernel, mutant.instructions))
            done = subprocess.run(
                [sys.executable, "-m", "reorder", "verify", str(bad), "--kernel", kernel.name],
                capture_output=True,
                text=True,
                check=False,
            )
            assert done.returncode == 1
            assert f"{mutant.consumer:#06x}" in done.stdout
            return
    pytest.fail("no scoreboard mutant found")


def test_regcount_is_highest_register_plus_reserved(corpus):
    """The fact the register budget check rests on, on every kernel ptxas emitted."""
    from reorder.binary.cubin import RESERVED_REGISTERS

    for cubin, code in corpus:
        assert code.kernel.regcount == code.registers_used() + RESERVED_REGISTERS, (cubin.path, code.kernel.name)


def test_register_in_the_reserved_pair_is_rejected(corpus):
    from legality.verify import verify_kernel
    from reorder.binary.cubin import parse_cubin
    from reorder.sass.writer import patch_kernel

    cubin, code = next((c, k) for c, k in corpus if c.arch == 90 and k.kernel.regcount < 200)
    lowered = parse_cubin(patch_kernel(cubin, code.kernel, code.instructions, code.kernel.regcount - 1))
    report = verify_kernel(decode_kernel(lowered, code.kernel.name))
    assert [v.kind for v in report.violations] == ["registers"]
