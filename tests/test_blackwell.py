"""Blackwell cubins (sm_100a, sm_103, sm_120, nvcc 13.0): read as nvdisasm reads them, written back
bit for bit, and every bit fact checked against nvdisasm 13.5 rather than carried from sm_90."""

from __future__ import annotations

import pytest
from conftest import CORPUS, _load_build, corpus_files
from sweeps import at_least, sample  # tests/sweeps.py
from test_cubin import _normalize, _nvdisasm_listing

from reorder.binary import branches
from reorder.binary.arches import ARCHS, BLACKWELL, family
from reorder.binary.cubin import read_cubin
from reorder.binary.nvinfo import encode_nv_info, parse_nv_info
from reorder.sass.control import CONTROL_SHIFT, ControlCode
from reorder.sass.model import decode_kernel
from reorder.sass.rename import disassemble_guarded
from reorder.sass.writer import patch_kernel

SHOWN = (100, 120)  # the archs the corpus is built for in the test tier


def test_the_corpus_is_read_at_each_arch_with_its_mercury_sections(blackwell_corpus):
    entries = {(c.arch, code.kernel.name) for c, code in blackwell_corpus if code.kernel.is_entry}
    for arch in SHOWN:
        assert len([k for k in entries if k[0] == arch]) >= 40
    for cubin, _ in blackwell_corpus:
        assert cubin.arch in BLACKWELL and family(cubin.arch) in (100, 120)
        names = [s.name for s in cubin.sections]
        assert all(f".nv.capmerc.text.{k.name}" in names for k in cubin.kernels), cubin.path
    unknown = {i.opcode for _, code in blackwell_corpus for i in code.instructions if not i.known}
    assert unknown <= {"CGAERRBAR", "CREDUX.MIN.S32", "UI2F.U32.RP"}, unknown  # kept in place as barriers
    assert all(i.is_barrier for _, code in blackwell_corpus for i in code.instructions if not i.known)


@pytest.mark.slow
def test_instruction_counts_and_text_equal_nvdisasm(blackwell_corpus, blackwell_corpus_dir):
    """Every cubin of both archs (the CPU tier: every fourth one, tests/sweeps.py)."""
    listings = {str(p): _nvdisasm_listing(p) for p in sample(corpus_files(blackwell_corpus_dir))}
    assert {read_cubin(p).arch for p in listings} == {100, 120}
    checked = 0
    for cubin, code in blackwell_corpus:
        if cubin.path not in listings:
            continue
        listing = listings[cubin.path][code.kernel.name]
        assert len(code.instructions) == len(listing) == code.kernel.instruction_count, (cubin.path, code.kernel.name)
        for ins, (offset, text) in zip(code.instructions, listing):
            assert (ins.offset, _normalize(ins.text)) == (offset, _normalize(text)), (cubin.path, hex(offset))
            checked += 1
    assert checked > at_least(9000, 2000)


def test_round_trip_is_bit_identical(blackwell_corpus, blackwell_corpus_dir):
    for cubin, code in blackwell_corpus:
        for ins in code.instructions:
            assert ControlCode.from_word(ins.word).apply(ins.word) == ins.word
            assert ins.bytes == code.kernel.text[ins.offset : ins.offset + 16]
        assert patch_kernel(cubin, code.kernel, code.instructions) == cubin.data
    for path in corpus_files(blackwell_corpus_dir):
        cubin = read_cubin(path)
        for s in cubin.sections:
            if s.type == 0x70000000:  # .nv.info and .nv.info.<kernel>; the .nv.merc copies are left alone
                blob = cubin.data[s.offset : s.offset + s.size]
                assert encode_nv_info(parse_nv_info(blob, s.name)) == blob


def test_branch_targets_decode_like_nvdisasm(blackwell_corpus):
    seen = {"BRA": 0, "BSSY": 0}
    for cubin, code in blackwell_corpus:
        for ins in code.instructions:
            if ins.base in seen and ins.target is not None and not ins.operands[0].startswith(("UR", "R")):
                assert branches.decode_target(ins.word, cubin.arch, ins.offset, ins.base) == ins.target
                moved = branches.encode_target(ins.word, cubin.arch, ins.offset + 32, ins.target, ins.base)
                assert branches.decode_target(moved, cubin.arch, ins.offset + 32, ins.base) == ins.target
                assert branches.encode_target(moved, cubin.arch, ins.offset, ins.target, ins.base) == ins.word
                seen[ins.base] += 1
    assert seen["BRA"] > 400 and seen["BSSY"] > 80, seen


def _sample_word(corpus, arch: int, opcode: str) -> int:
    return next(i.word for c, code in corpus if c.arch == arch for i in code.instructions if i.opcode == opcode)


@pytest.mark.parametrize("arch", [90, 100, 120])
def test_far_and_backward_targets_are_written_where_nvdisasm_reads_them(blackwell_corpus, arch):
    """Raw words at address 16*k, each encoded to jump far forward or back: nvdisasm prints the
    target written (the layouts of reorder.binary.branches, checked on each family)."""
    if arch == 90:
        cubin = read_cubin(CORPUS / "cubin" / "sm_90" / "control.cubin")
        pool = [(cubin, decode_kernel(cubin, k.name)) for k in cubin.kernels]
        bra, bssy = _sample_word(pool, 90, "BRA"), _sample_word(pool, 90, "BSSY")
    else:
        bra = _sample_word(blackwell_corpus, arch, "BRA")
        bssy = _sample_word(blackwell_corpus, arch, "BSSY.RECONVERGENT")
    wanted = [(bra, "BRA", t) for t in (0x40, 0x12340, 0x7654320, -0x1000, -0x123450)]
    wanted += [(bssy, "BSSY", t) for t in (0x40, 0x12340, 0x7654320, 0x1FFFFFF0)]
    words = [branches.encode_target(w, arch, 16 * k, 16 * k + t, base) for k, (w, base, t) in enumerate(wanted)]
    got = disassemble_guarded(words, arch)
    for k, ((_, base, t), (_, opcode, operands)) in enumerate(zip(wanted, got)):
        assert opcode.split(".")[0] == base
        assert int(operands[-1], 16) == 16 * k + t, (base, hex(t), operands)
        if arch >= 100 and base == "BSSY":
            assert opcode == "BSSY.RECONVERGENT"  # bit 73 kept


def _distinct_words(corpus, arch: int, limit: int = 300) -> list:
    """Up to `limit` words of `arch`, one per opcode and control-flow-free, each with its record."""
    seen: dict[str, tuple] = {}
    for cubin, code in corpus:
        if cubin.arch != arch:
            continue
        for ins, record in zip(code.instructions, code.records):
            if "other-attributes" not in record and ins.known:
                seen.setdefault(ins.opcode, (ins, record))
    return list(seen.values())[:limit]


@pytest.mark.parametrize("arch", SHOWN)
def test_control_fields_sit_where_nvdisasm_reads_them(blackwell_corpus, arch):
    """Bits 105..124 (stall, yield, scoreboards, wait mask, reuse) print nothing but `.reuse`: each
    flipped alone, nvdisasm reads the same instruction, where the word stays one it accepts (a legal
    usched_info; a scoreboard changed, not given to an op that had none: nvdisasm refuses a write
    scoreboard on a store and a read scoreboard on CCTL; a reuse flag cleared, not set on an operand
    that cannot be reused). The reuse bits [124:122] are exactly the operands it prints `.reuse` on;
    stall 0 with the yield bit set (no such usched_info) is refused, so the stall and yield bits are
    where the table says."""
    pairs = _distinct_words(blackwell_corpus, arch)
    assert len(pairs) > 100
    words, expect = [], []
    for ins, _ in pairs:
        for bit in range(CONTROL_SHIFT, CONTROL_SHIFT + 20):
            word = ins.word ^ (1 << bit)
            c = ControlCode.from_word(word)
            refused = (
                c.encoding_problem() is not None
                or (110 <= bit < 113 and ins.ctrl.wbar == 7)
                or (113 <= bit < 116 and ins.ctrl.rbar == 7)
                or (bit >= 122 and not ins.word >> bit & 1)
            )
            if not refused:
                words.append(word)
                expect.append((ins, bit))
    got = disassemble_guarded(words, arch)
    for (ins, bit), (guard, opcode, operands) in zip(expect, got):
        assert (guard, opcode) == (ins.guard, ins.opcode), (hex(ins.word), bit)
        strip = tuple(o.replace(".reuse", "") for o in operands)
        assert strip == tuple(o.replace(".reuse", "") for o in ins.operands), (ins.text, bit)
        if bit < 122:
            assert operands == ins.operands, (ins.text, bit)
    for cubin, code in blackwell_corpus:
        for ins in code.instructions:
            flagged = sum(".reuse" in o for o in ins.operands)
            assert flagged == ins.ctrl.reuse.bit_count(), (cubin.path, ins.text)
    stall_zero = ControlCode.from_word(pairs[0][0].word).with_(stall=0, yield_bit=1, reuse=0).apply(pairs[0][0].word)
    from reorder.base.errors import ToolError

    with pytest.raises(ToolError):
        disassemble_guarded([stall_zero], arch)


def test_sm_103_reads_and_writes_back_too(tmp_path):
    build = _load_build()
    if not build.nvcc_available():
        pytest.skip("needs nvcc")
    (path,) = build.build_corpus(tmp_path, ("sm_103",), stems=("control",))
    cubin = read_cubin(path)
    assert cubin.arch == 103 and ARCHS[103].family == 100
    for k in cubin.kernels:
        code = decode_kernel(cubin, k.name)
        assert patch_kernel(cubin, code.kernel, code.instructions) == cubin.data
        for ins in code.instructions:
            if ins.base in ("BRA", "BSSY") and ins.target is not None and not ins.operands[0].startswith("R"):
                assert branches.decode_target(ins.word, 103, ins.offset, ins.base) == ins.target


def test_arch_limits_refuse_what_the_arch_cannot_hold(blackwell_corpus):
    """sm_120 allows 99 KB of shared memory per block, sm_100 227 KB (reorder.binary.arches)."""
    import struct

    from reorder.base.errors import InputError
    from reorder.binary.cubin import parse_cubin

    for arch in SHOWN:
        cubin, code = next((c, k) for c, k in blackwell_corpus if c.arch == arch and k.kernel.shared_bytes)
        section = cubin.section(f".nv.shared.{code.kernel.name}")
        data = bytearray(cubin.data)
        struct.pack_into("<Q", data, section.header_offset + 32, ARCHS[arch].shared_bytes + 16)  # sh_size
        with pytest.raises(InputError, match=f"sm_{arch} allows at most {ARCHS[arch].shared_bytes}"):
            parse_cubin(bytes(data), "mutant")
