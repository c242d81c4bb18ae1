"""Prefetch copies (reorder.moves.prefetch) and their judge (legality.prefetch), on nvcc's
RMSNorm cubin: the weights' loads after the reduction's barrier are copied above it."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from legality.prefetch import prefetch_match
from reorder.analysis.cfg import basic_blocks
from reorder.analysis.ranges import entry_constants, entry_ranges
from reorder.base.errors import NotApplicable
from reorder.binary.cubin import parse_cubin, read_cubin
from reorder.sass.model import KernelCode, decode_kernel
from reorder.sass.writer import patch_kernel

ROOT = Path(__file__).resolve().parent.parent
CUBIN = ROOT / "benchmarks" / "kernels" / "cubin" / "rmsnorm.cubin"
KERNEL = "rmsnorm_triton_style"


@cache
def _original() -> KernelCode:
    return decode_kernel(read_cubin(str(CUBIN)), KERNEL)


@cache
def _built() -> tuple[KernelCode, str]:
    from reorder.build.pipeline import prefetched

    return prefetched(_original(), True)


def _with_words(code: KernelCode, words: dict[int, int]) -> KernelCode:
    """`code` with the words at these instruction indices replaced (a hand-made candidate)."""
    ins = list(code.instructions)
    for k, word in words.items():
        ins[k] = ins[k].with_word(word)
    data = patch_kernel(code.cubin, code.kernel, ins)
    return decode_kernel(parse_cubin(data, "mutated"), KERNEL)


def test_the_weights_loads_are_copied_above_the_barrier() -> None:
    after, note = _built()
    found = prefetch_match(_original(), after, True)
    assert not isinstance(found, str), found
    loads = [after.instructions[j] for j in found.inserted if after.instructions[j].base == "LDG"]
    assert len(loads) == 4 and "0x0cf0, 0x0de0, 0x0eb0, 0x0f80" in note  # w's loads; x was read in pass 1
    bar = next(i.offset for i in after.instructions if i.base == "BAR")
    assert all(x.offset < bar for x in loads)
    assert after.kernel.regcount > _original().kernel.regcount
    assert all(i.ctrl.wait & (1 << 5) for i in after.instructions if i.base == "EXIT")


def test_without_noalias_nothing_is_copied() -> None:
    from reorder.build.pipeline import prefetched

    with pytest.raises(NotApplicable):
        prefetched(_original(), False)  # out may alias w: the kernel may write what the copy reads
    assert "may write its buffer" in prefetch_match(_original(), _built()[0], False)


def test_a_copy_that_runs_where_the_kernel_exits_first_is_refused() -> None:
    after, _ = _built()
    found = prefetch_match(_original(), after, True)
    assert not isinstance(found, str)
    k = next(j for j in found.inserted if after.instructions[j].base == "LDG")
    guard_negation = 1 << 15
    mutated = _with_words(after, {k: after.instructions[k].word ^ guard_negation})
    why = prefetch_match(_original(), mutated, True)
    assert isinstance(why, str) and "where it may have run" in why, why


def test_an_inserted_store_or_a_clobbered_register_is_refused() -> None:
    after, _ = _built()
    found = prefetch_match(_original(), after, True)
    assert not isinstance(found, str)
    store = next(i for i in _original().instructions if i.base == "STG")
    k = found.inserted[0]
    mutated = _with_words(after, {k: store.word})
    assert "not an op a prefetch copy may add" in prefetch_match(_original(), mutated, True)
    # the first copy (LDC.64 of w's pointer) writing R2:R3 instead, which the kernel still reads
    ldc = after.instructions[k]
    assert ldc.opcode == "LDC.64", ldc.text
    clobber = (ldc.word & ~(0xFF << 16)) | (2 << 16)
    why = prefetch_match(_original(), _with_words(after, {k: clobber}), True)
    assert isinstance(why, str) and "another value" in why, why


def test_thread_index_ranges_and_constants_reach_the_block_before_the_barrier() -> None:
    ins = _original().instructions
    d = next(b.start for b in basic_blocks(ins) if ins[b.start].offset == 0x0840)
    assert entry_ranges(ins)[d]["R23"] == (0, 4092)  # tid.x * 4
    assert entry_constants(ins)[d]["R0"] == ("c[0x0][0x228]", 0)  # n_cols
    two_pass = decode_kernel(read_cubin(str(CUBIN)), "rms_norm_f32").instructions
    after_call = next(b.start for b in basic_blocks(two_pass) if two_pass[b.start].offset == 0x0540)
    assert entry_ranges(two_pass)[after_call]["R2"] == (0, 1023)  # the callee never writes R2
    assert entry_constants(two_pass)[after_call]["R5"] == ("c[0x0][0x0]", 0)  # blockDim.x


def test_copies_before_a_call_move_its_return_address() -> None:
    original, after = _loop_built()
    found = prefetch_match(original, after, True)
    assert not isinstance(found, str), found
    move = next(i for i in after.instructions if i.opcode == "MOV" and i.operands[0] == "R4")
    call = next(i for i in after.instructions if i.base == "CALL")
    assert int(move.operands[1], 16) == call.offset + 16 != 0x530  # pass 1's copies precede the call
    k = after.instructions.index(move)
    wrong = (move.word & ~(0xFFFFFFFF << 32)) | (0x530 << 32)  # the old return address
    why = prefetch_match(original, _with_words_of(after, "rms_norm_f32", {k: wrong}), True)
    assert isinstance(why, str), why


def test_a_misaligned_register_pair_is_refused() -> None:
    from legality.prefetch import misaligned
    from reorder.sass.rename import OperandRename, rename_instructions

    _, after = _loop_built()
    load = next(i for i in after.instructions[::-1] if i.base == "LDG" and i.guard)
    base = int(load.operands[1].split("][R")[1].split(".")[0])
    assert base % 2 == 0 and not misaligned(load)
    odd = rename_instructions({load.offset: load}, [OperandRename(load.offset, 1, base, base + 1)], 90)[load.offset]
    assert "not aligned" in misaligned(odd)


def test_the_command_writes_what_verify_accepts_only_under_its_assumption(tmp_path, capsys) -> None:
    from reorder.cli.main import main

    out = tmp_path / "prefetched.cubin"
    args = ["--kernel", KERNEL]
    assert main(["prefetch", "--assume-noalias", str(CUBIN), *args, "-o", str(out)]) == 0  # the cubin after it
    assert "prefetch copies of the loads" in capsys.readouterr().out
    assert main(["verify", str(out), *args, "--against", str(CUBIN), "--assume-noalias"]) == 0
    assert "inserted as prefetch copies" in capsys.readouterr().out
    assert main(["verify", str(out), *args, "--against", str(CUBIN)]) == 1
    assert "REFUSED" in capsys.readouterr().out
    assert main(["prefetch", str(CUBIN), *args, "-o", str(tmp_path / "no.cubin")]) != 0
    assert not (tmp_path / "no.cubin").exists()


@cache
def _loop_built() -> tuple[KernelCode, KernelCode]:
    from reorder.build.pipeline import prefetched

    original = decode_kernel(read_cubin(str(CUBIN)), "rms_norm_f32")
    return original, prefetched(original, True, 4)[0]


def test_a_loops_next_iterations_are_copied_before_it() -> None:
    original, after = _loop_built()
    found = prefetch_match(original, after, True)
    assert not isinstance(found, str), found
    loads = [after.instructions[j] for j in found.inserted if after.instructions[j].base == "LDG"]
    assert len(loads) == 6 and all(x.guard for x in loads)  # iterations 1-3 of x's load (pass 1), of w's (pass 2)
    assert after.kernel.regcount <= 64  # still launchable with 1024 threads per block


def test_a_loop_copy_for_an_iteration_that_may_not_run_is_refused() -> None:
    original, after = _loop_built()
    found = prefetch_match(original, after, True)
    assert not isinstance(found, str)
    k = [j for j in found.inserted if after.instructions[j].base == "LDG"][-1]
    unguarded = (after.instructions[k].word & ~(0xF << 12)) | (7 << 12)  # @PT: every thread, every time
    mutated = _with_words_of(after, "rms_norm_f32", {k: unguarded})
    why = prefetch_match(original, mutated, True)
    assert isinstance(why, str) and "where it may have run" in why, why


def _with_words_of(code: KernelCode, kernel: str, words: dict[int, int]) -> KernelCode:
    ins = list(code.instructions)
    for k, word in words.items():
        ins[k] = ins[k].with_word(word)
    return decode_kernel(parse_cubin(patch_kernel(code.cubin, code.kernel, ins), "mutated"), kernel)


def test_a_triton_kernel_gets_copies_in_the_block_of_its_barrier() -> None:
    """Triton's single-pass RMSNorm is one block: the weights' loads follow the reduction's
    barrier in it; the copies go to the block's top, after what they read, and the kernel's
    declared block size (REQNTID) sets the register limit."""
    from reorder.build.pipeline import prefetched
    from reorder.moves.prefetch import register_limit

    path = ROOT / "reorder" / "suite" / "triton_kernels" / "sm_90" / "rmsnorm_row_fp16.cubin"
    original = decode_kernel(read_cubin(str(path)))
    assert len(basic_blocks(original.instructions)) == 4 and register_limit(original) == 255
    after, _ = prefetched(original, True, 4)
    found = prefetch_match(original, after, True)
    assert not isinstance(found, str), found
    bar = next(i.offset for i in after.instructions if i.base == "BAR")
    copies = [after.instructions[j] for j in found.inserted if after.instructions[j].base == "LDG"]
    assert copies and all(x.offset < bar for x in copies)
