"""SliceBatch: loads hoisted with their address/guard slices, registers and predicates
renamed. Every output verifies, keeps the instruction multiset up to renaming, and is
symbolically the same block (tests/symbolic.py); renamed words disassemble as intended."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from symbolic import equivalent  # tests/symbolic.py (pytest puts tests/ on the path)

from legality.verify import verify_kernel
from reorder.analysis.cfg import basic_blocks
from reorder.analysis.costmodel import kernel_cycles
from reorder.analysis.liveness import live_out
from reorder.analysis.webs import analyse_block, guarded_live_out
from reorder.base.errors import EncodingError
from reorder.binary.cubin import read_cubin
from reorder.build.pipeline import apply_each, batch_loads
from reorder.moves.protocol import MoveOptions
from reorder.moves.slicebatch import SliceBatch, register_limited_warps
from reorder.sass.model import decode_kernel
from reorder.sass.rename import GUARD_OPERAND, OperandRename, disassemble_guarded, rename_words

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "benchmarks" / "kernels" / "cubin"
RMS = SUITE / "rmsnorm.cubin"


def _canonical(ins) -> tuple:
    def erase(text: str) -> str:
        return re.sub(r"(?<![A-Za-z])([RP])\d+", r"\1", text.replace(".reuse", ""))

    return erase(ins.guard), ins.opcode, tuple(erase(o) for o in ins.operands)


def _check(code, out) -> None:
    """Verified, same multiset up to renaming, every block symbolically unchanged."""
    assert verify_kernel(out.after).ok, (code.cubin.path, code.kernel.name)
    assert Counter(map(_canonical, out.after.instructions)) == Counter(map(_canonical, code.instructions))
    live = guarded_live_out(code.instructions)
    for b in basic_blocks(code.instructions):
        assert equivalent(
            code.instructions[b.start : b.end],
            out.after.instructions[b.start : b.end],
            live[b.start],
            code.registers_used(),
        ), (code.cubin.path, code.kernel.name, b)


@pytest.fixture(scope="module")
def triton_style():
    return decode_kernel(read_cubin(RMS), "rmsnorm_triton_style")


def _normalise_loop(code):
    """The block that branches back to itself and stores (the normalise pass's body)."""
    ins = code.instructions
    return next(
        b
        for b in basic_blocks(ins)
        if ins[b.end - 1].target == ins[b.start].offset and any(ins[i].base == "STG" for i in b.indices())
    )


def _at(code, offset: int):
    return next(i for i in code.instructions if i.offset == offset)


def test_predicate_and_register_renames_disassemble_as_expected(triton_style):
    code = triton_style
    by_offset = {i.offset: i for i in code.instructions}
    cases = {  # offset -> (renames, the text the rewritten word must disassemble to)
        0xE00: (
            [OperandRename(0xE00, 0, 0, 5, "P"), OperandRename(0xE00, 2, 25, 27)],
            ("", "ISETP.GE.AND", ("P5", "PT", "R27", "R0", "PT")),
        ),
        0xEA0: (
            [OperandRename(0xEA0, GUARD_OPERAND, 0, 5, "P"), OperandRename(0xEA0, 0, 4, 36)],
            ("@!P5", "LDG.E.128", ("R36", "desc[UR6][R20.64+0x2000]")),
        ),
        0xCC0: ([OperandRename(0xCC0, 1, 1, 4, "P")], ("", "IADD3", ("R20", "P4", "R12", "R26", "RZ"))),
        0xCD0: ([OperandRename(0xCD0, 4, 1, 4, "P")], ("", "IADD3.X", ("R21", "R13", "R2", "RZ", "P4", "!PT"))),
        0x220: (
            [OperandRename(0x220, 4, 0, 6, "P"), OperandRename(0x220, 0, 5, 30)],
            ("", "LEA.HI.X.SX32", ("R30", "R5", "R2", "0x1", "P6")),
        ),
    }
    for offset, (_renames, expected) in cases.items():
        assert by_offset[offset].opcode == expected[1]
    words = rename_words(by_offset, [r for renames, _ in cases.values() for r in renames], code.arch)
    listed = disassemble_guarded([words[o] for o in cases], code.arch)
    for (offset, (_, expected)), got in zip(cases.items(), listed):
        assert (got[0], got[1], tuple(o.replace(".reuse", "") for o in got[2])) == expected, hex(offset)
        control = ((1 << 23) - 1) << 105
        assert words[offset] & control == by_offset[offset].word & control  # control bits untouched


def test_a_rename_no_field_holds_is_refused(triton_style):
    by_offset = {i.offset: i for i in triton_style.instructions}
    with pytest.raises(EncodingError):
        rename_words(by_offset, [OperandRename(0xE00, 0, 3, 5, "P")], triton_style.arch)  # P3 is not there


def test_guarded_loads_leave_their_registers_dead_across_the_back_edge(triton_style):
    code = triton_style
    loop = _normalise_loop(code)
    loaded = {f"R{k}" for k in range(4, 12)}
    assert loaded <= live_out(code.instructions)[loop.start]  # guard-blind liveness keeps them
    assert not loaded & guarded_live_out(code.instructions)[loop.start]
    webs = analyse_block(code.instructions, loop, guarded_live_out(code.instructions)[loop.start])
    loads = [d for d, df in enumerate(webs.defs) if code.instructions[loop.start + df.pos].base == "LDG"]
    assert len(loads) == 8 and set(loads) <= webs.renamable
    stg_data = [
        d
        for d, df in enumerate(webs.defs)
        if code.instructions[loop.start + df.pos].base == "FMUL" and df.regs[0] in {"R8", "R9", "R10", "R11"}
    ]
    assert stg_data and not set(stg_data) & webs.renamable  # they feed a 128-bit store: kept


def test_normalise_pass_loads_all_issue_before_its_first_multiply_and_store(triton_style):
    code = triton_style
    out = batch_loads(code, noalias=True)
    _check(code, out)
    loop = _normalise_loop(code)
    block = out.after.instructions[loop.start : loop.end]
    loads = [k for k, i in enumerate(block) if i.base == "LDG"]
    first_math = min(k for k, i in enumerate(block) if i.base in ("FMUL", "STG"))
    assert len(loads) == 8 and max(loads) < first_math
    assert len({i.guard for i in block if i.base == "LDG"}) == 4  # four chunks, four live guards
    assert kernel_cycles(out.after.instructions) < kernel_cycles(
        batch_loads(code, True, slices=False).after.instructions
    )
    assert out.after.kernel.regcount > code.kernel.regcount
    assert any("assuming the buffers do not alias" in n for n in out.notes)
    assert any(f"registers {code.kernel.regcount} -> {out.after.kernel.regcount}" in n for n in out.notes)


def test_without_noalias_no_load_passes_a_store(triton_style):
    code = triton_style
    out = batch_loads(code, noalias=False)
    _check(code, out)
    for b in basic_blocks(code.instructions):
        block = out.after.instructions[b.start : b.end]
        stores = [k for k, i in enumerate(block) if i.access.mem_writes]
        loads_after = [
            k
            for k, i in enumerate(code.instructions[b.start : b.end])
            if i.base == "LDG" and stores and k > min(stores)
        ]
        assert len([k for k, i in enumerate(block) if i.base == "LDG" and stores and k > min(stores)]) == len(
            loads_after
        )


def test_register_budget_limits_the_hoist(triton_style):
    code = triton_style
    loop = _normalise_loop(code)
    tight = SliceBatch(loop.start, extra_registers=8, noalias=True)
    out = apply_each(code, [tight])
    assert out.applied and verify_kernel(out.after).ok
    assert out.after.kernel.regcount <= code.kernel.regcount + 8
    block = out.after.instructions[loop.start : loop.end]
    first_store = min(k for k, i in enumerate(block) if i.base == "STG")
    assert 2 <= len([k for k, i in enumerate(block[:first_store]) if i.base == "LDG"]) < 8


def test_register_limited_warps():
    assert register_limited_warps(32) == 64
    assert register_limited_warps(54) == 36
    assert register_limited_warps(255) == 8


@pytest.mark.slow
def test_slice_batch_over_the_corpus(corpus):
    """Each instance on its own: verified, same multiset, same block semantics."""
    done = 0
    for _cubin, code in corpus[::4]:
        if not code.kernel.is_entry:
            continue
        for move in SliceBatch.instances(code, MoveOptions(noalias=True))[:2]:
            out = apply_each(code, [move])
            if out.applied:
                _check(code, out)
                done += 1
    assert done >= 8


@pytest.mark.parametrize("path", sorted(p for p in SUITE.glob("*.cubin") if p != RMS), ids=lambda p: p.stem)
def test_slice_batch_over_the_suite(path):
    """The first two instances of each suite kernel, applied together (rmsnorm: above)."""
    cubin = read_cubin(path)
    code = decode_kernel(cubin, cubin.kernels[0].name)
    out = apply_each(code, SliceBatch.instances(code, MoveOptions(noalias=True))[:2])
    assert not out.skipped
    _check(code, out)
