"""Loop peel (reorder.moves.peel) and its structural check (legality.peel) on the suite's RMSNorms."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from legality.peel import PeelMatch, peel_match
from reorder.base.errors import NotApplicable
from reorder.binary import branches
from reorder.binary.cubin import parse_cubin, read_cubin
from reorder.build.pipeline import peeled
from reorder.cli.main import main
from reorder.moves.peel import PeelPlan, peel_loop, peel_refusal, peeled_back_edge, plans, single_block_loops
from reorder.sass.grow import Insertion, grow_kernel
from reorder.sass.model import KernelCode, decode_kernel

RMSNORM = Path(__file__).resolve().parents[1] / "benchmarks" / "kernels" / "cubin" / "rmsnorm.cubin"
TRITON, TWO_PASS = "rmsnorm_triton_style", "rms_norm_f32"


@cache
def _code(kernel: str) -> KernelCode:
    return decode_kernel(read_cubin(RMSNORM), kernel)


def _decoded(data: bytes, kernel: str) -> KernelCode:
    return decode_kernel(parse_cubin(data, "candidate"), kernel)


def _last_plan(kernel: str) -> PeelPlan:
    return plans(_code(kernel))[-1]


def _grown_with(kernel: str, words: tuple[int, ...], plan: PeelPlan) -> KernelCode:
    return _decoded(grow_kernel(_code(kernel), [Insertion(plan.start, words)]).data, kernel)


def _copy_words(kernel: str, plan: PeelPlan) -> list[int]:
    code = _code(kernel)
    ins = code.instructions
    words = [ins[i].word for i in range(plan.start, plan.end - 1)]
    here, exit_at = 16 * (plan.end - 1), 16 * (plan.end + plan.length)
    return words + [peeled_back_edge(ins[plan.end - 1], code.arch, here, exit_at)]


def test_the_second_pass_loops_are_peeled_and_checked() -> None:
    for kernel, head in ((TRITON, 0x0CB0), (TWO_PASS, 0x05E0)):
        code = _code(kernel)
        plan = _last_plan(kernel)
        assert code.instructions[plan.start].offset == head
        after = _decoded(peel_loop(code, plan).data, kernel)
        found = peel_match(code, after)
        assert isinstance(found, PeelMatch) and (found.start, found.end) == (plan.start, plan.end)
        copy_branch = after.instructions[plan.end - 1]
        assert copy_branch.target == 16 * (plan.end + plan.length)  # the instruction after the loop
        assert after.instructions[plan.end + plan.length - 1].target == 16 * (plan.start + plan.length)


def test_a_relative_call_and_its_return_follow_the_grown_text() -> None:
    code = _code(TWO_PASS)
    after = _decoded(peel_loop(code, _last_plan(TWO_PASS)).data, TWO_PASS)
    old_call = next(i for i in code.instructions if i.base == "CALL")
    new_call = next(i for i in after.instructions if i.base == "CALL")
    callee = branches.decode_target(old_call.word, code.arch, old_call.offset, "CALL")
    assert branches.decode_target(new_call.word, code.arch, new_call.offset, "CALL") == callee + 16 * 17
    ret = next(i for i in after.instructions if i.base == "RET")
    assert branches.decode_target(ret.word, code.arch, ret.offset, "RET") == 0  # the kernel's start, as before


def test_a_loop_before_a_call_is_refused() -> None:
    code = _code(TWO_PASS)
    first = single_block_loops(code.instructions)[0]
    assert "return address" in (peel_refusal(code, first) or "")
    with pytest.raises(NotApplicable):
        peel_loop(code, PeelPlan(first.start, first.end))


def test_a_copy_whose_back_edge_returns_to_the_loop_is_refused() -> None:
    plan = _last_plan(TRITON)
    words = _copy_words(TRITON, plan)
    ins = _code(TRITON).instructions
    here = 16 * (plan.end - 1)
    words[-1] = branches.encode_target(ins[plan.end - 1].word, 90, here, 16 * (plan.start + plan.length))
    found = peel_match(_code(TRITON), _grown_with(TRITON, tuple(words), plan))
    assert isinstance(found, str) and "back edge" in found


def test_a_copy_with_the_guard_not_negated_is_refused() -> None:
    plan = _last_plan(TRITON)
    words = _copy_words(TRITON, plan)
    words[-1] ^= 8 << 12
    found = peel_match(_code(TRITON), _grown_with(TRITON, tuple(words), plan))
    assert isinstance(found, str) and "back edge" in found


def test_a_changed_instruction_in_the_copy_is_refused() -> None:
    plan = _last_plan(TRITON)
    words = _copy_words(TRITON, plan)
    words[3], words[4] = words[4], words[3]  # two loads of the body, swapped
    found = peel_match(_code(TRITON), _grown_with(TRITON, tuple(words), plan))
    assert isinstance(found, str) and "copy of" in found


def test_a_copy_missing_an_instruction_is_refused() -> None:
    plan = _last_plan(TRITON)
    words = _copy_words(TRITON, plan)
    del words[5]
    found = peel_match(_code(TRITON), _grown_with(TRITON, tuple(words), plan))
    assert isinstance(found, str) and "exactly" in found


def test_a_changed_original_is_refused() -> None:
    code = _code(TRITON)
    grown = bytearray(peel_loop(code, _last_plan(TRITON)).data)
    start = parse_cubin(bytes(grown), "peeled").sections[code.kernel.text_section].offset
    k = 5  # an original instruction before the loop gets the next one's word
    assert code.instructions[k].word != code.instructions[k + 1].word
    grown[start + 16 * k : start + 16 * k + 16] = grown[start + 16 * (k + 1) : start + 16 * (k + 2)]
    found = peel_match(code, _decoded(bytes(grown), TRITON))
    assert isinstance(found, str) and "changed" in found


def test_the_unchanged_kernel_is_no_peel() -> None:
    assert isinstance(peel_match(_code(TRITON), _code(TRITON)), str)


def test_peel_then_batch_loads_writes_what_verify_accepts_in_two_steps(tmp_path, capsys) -> None:
    out = tmp_path / "f32.cubin"
    args = ["--kernel", TWO_PASS]
    assert main(["batch-loads", str(RMSNORM), *args, "--assume-noalias", "--peel", "-o", str(out)]) == 0
    first = tmp_path / "f32.peeled.cubin"
    assert main(["verify", str(first), *args, "--against", str(RMSNORM)]) == 0
    assert main(["verify", str(out), *args, "--against", str(first), "--assume-noalias"]) == 0
    capsys.readouterr()
    assert main(["verify", str(out), *args, "--against", str(RMSNORM), "--assume-noalias"]) == 0
    said = capsys.readouterr().out  # straight against the original: the peel remade, the moves judged on it
    assert "a peel of the original, then moves: loop 0x05e0-0x06e0 peeled" in said and "not a reordering" not in said


def test_a_peeled_candidate_with_an_under_stall_is_refused_against_the_original(tmp_path, capsys) -> None:
    """The route through the remade peel judges the moves: one stall cut below a real dependency
    of the peeled kernel is a violation, not "another build"."""
    from legality.mutate import stall_cuts
    from reorder.sass.writer import patch_kernel

    after, _ = peeled(_code(TRITON), None)
    mutant = next(stall_cuts(after.instructions, after.arch))
    bad = tmp_path / "bad.cubin"
    bad.write_bytes(patch_kernel(after.cubin, after.kernel, mutant.instructions, after.kernel.regcount))
    capsys.readouterr()
    assert main(["verify", str(bad), "--kernel", TRITON, "--against", str(RMSNORM)]) == 1
    said = capsys.readouterr().out
    assert "a peel of the original, then moves" in said and "verdict: 1 of 1 kernel with violations" in said


def test_a_peel_at_an_offset_without_a_loop_is_refused() -> None:
    with pytest.raises(NotApplicable):
        peeled(_code(TRITON), 0x0010)
