"""Reading a written kernel back from the listing it was written from (reorder.sass.readback)
gives what nvdisasm gives, and sends any word it cannot vouch for to nvdisasm."""

from __future__ import annotations

import pytest

from reorder.binary.cubin import parse_cubin
from reorder.build.pipeline import apply_each, batch_loads, cut_stalls
from reorder.moves.core import Swap
from reorder.sass.model import Instruction, disassemble, make_instruction
from reorder.sass.readback import TIMING_BITS, derived_listing, read_back, reuse_removed
from reorder.sass.rename import disassemble_guarded


def _plain_words(corpus, arch: int) -> list[tuple[Instruction, dict]]:
    """Every distinct word of the corpus for `arch` that is not control flow, with its record."""
    seen: dict[int, tuple[Instruction, dict]] = {}
    for cubin, code in corpus:
        if cubin.arch == arch:
            for ins, record in zip(code.instructions, code.records):
                if "other-attributes" not in record:
                    seen.setdefault(ins.word, (ins, record))
    return [seen[w] for w in sorted(seen)]


def _retimed(ins: Instruction) -> int:
    """The word with another legal stall and yield, another wait mask unless a barrier, and
    each scoreboard it sets moved to another one (one it does not set stays unset)."""
    c = ins.ctrl
    wait = c.wait if ins.is_barrier else c.wait ^ 0b101010
    wbar = c.wbar if c.wbar == 7 else (c.wbar + 1) % 6
    rbar = c.rbar if c.rbar == 7 else (c.rbar + 2) % 6
    return c.with_(stall=1 + (c.stall + 4) % 11, yield_bit=1, wait=wait, wbar=wbar, rbar=rbar).apply(ins.word)


def _read(word: int, record: dict) -> tuple[str, str, tuple[str, ...]]:
    ins = make_instruction(0, word, record)
    return (ins.guard, ins.opcode, ins.operands)


@pytest.mark.parametrize("arch", [80, 90])
def test_timing_bits_print_nothing_and_reuse_flags_print_only_reuse(corpus, arch):
    """nvdisasm on the raw words: retimed as read_back allows, a word reads as before; with its
    reuse flags cleared it reads as before less its `.reuse` suffixes."""
    words = _plain_words(corpus, arch)
    flagged = [(ins, r) for ins, r in words if ins.ctrl.reuse]
    assert len(words) > 1000 and len(flagged) > 50
    retimed = [_retimed(ins) for ins, _ in words]
    cleared = [ins.ctrl.with_(reuse=0).apply(ins.word) for ins, _ in flagged]
    assert all(w & ~TIMING_BITS == ins.word & ~TIMING_BITS for w, (ins, _) in zip(retimed, words))
    got = disassemble_guarded(retimed + cleared, arch)
    assert got[: len(words)] == [_read(w, r) for w, (_, r) in zip(retimed, words)]
    assert got[len(words) :] == [_read(w, reuse_removed(r)) for w, (_, r) in zip(cleared, flagged)]
    assert not any(".reuse" in o for _, _, operands in got[len(words) :] for o in operands)


def test_written_candidates_read_back_as_nvdisasm_reads_them(corpus):
    """Stall cuts, swaps and load batches over a sample of the corpus: each written kernel whose
    words the reference covers gets nvdisasm's very records; most are covered."""
    compared = derived = renamed = 0
    for cubin, code in corpus[::15]:
        if not code.kernel.is_entry:
            continue
        outcomes = [cut_stalls(code), batch_loads(code, False)] + [
            apply_each(code, [m]) for m in Swap.instances(code)[:1]
        ]
        for out in outcomes:
            if not out.applied:
                continue
            written = parse_cubin(out.data, "written")
            truth = disassemble(out.data)[code.kernel.name]
            listing = derived_listing(written.kernel(code.kernel.name).text, code)
            compared += 1
            if listing is not None:
                derived += 1
                assert listing == truth, (cubin.path, code.kernel.name)
                assert read_back(written, code).instructions == out.after.instructions
                known = {ins.word & ~TIMING_BITS for ins in code.instructions}
                text = written.kernel(code.kernel.name).text
                words = {int.from_bytes(text[k : k + 16], "little") & ~TIMING_BITS for k in range(0, len(text), 16)}
                renamed += bool(words - known)  # words only a rename's raw listing vouched for
    assert compared >= 6 and derived >= 0.8 * compared and renamed, (compared, derived, renamed)


def test_a_word_the_reference_does_not_vouch_for_goes_to_nvdisasm(corpus):
    _cubin, code = next((c, k) for c, k in corpus if k.kernel.is_entry and len(k.instructions) > 8)
    at = next(i for i, ins in enumerate(code.instructions) if ins.ctrl.wbar == 7 and not ins.is_barrier and i)
    ins = code.instructions[at]

    def with_word(word: int) -> bytes:
        text = bytearray(code.kernel.text)
        text[16 * at : 16 * at + 16] = word.to_bytes(16, "little")
        return bytes(text)

    assert derived_listing(code.kernel.text, code) == list(code.records)
    assert derived_listing(with_word(_retimed(ins)), code) == list(code.records)  # stall, yield, wait
    assert derived_listing(with_word(ins.word ^ 1 << 24), code) is None  # a register field: a new word
    assert derived_listing(with_word(ins.ctrl.with_(wbar=3).apply(ins.word)), code) is None  # one where none was
    bad_stall = ins.ctrl.with_(stall=14, yield_bit=1, reuse=0).apply(ins.word)  # outside the usched_info enum
    assert derived_listing(with_word(bad_stall), code) is None
    assert derived_listing(code.kernel.text, code.__class__(code.cubin, code.kernel, code.instructions)) is None


def test_a_word_read_for_one_arch_is_not_reused_for_another():
    """One 128-bit word reads differently on two archs (nvdisasm prints sm_80's IADD3 without
    the carry-out predicates it prints on sm_90): a word listed alone for sm_90 must not vouch
    for the same word in an sm_80 kernel (found when a corpus sweep ran after an sm_90 test)."""
    from pathlib import Path

    from reorder.binary.cubin import read_cubin
    from reorder.sass.model import decode_kernel

    cubin = read_cubin(Path(__file__).parent / "corpus" / "cubin" / "sm_80" / "atomics.cubin")
    code = decode_kernel(cubin, cubin.kernels[0].name)
    word = code.instructions[0].word
    marked = {"opcode": "MARKED", "operands": "", "predicate": ""}
    from reorder.sass.readback import remember

    remember([word ^ 1 << 100], [marked], 90)  # a word the sm_80 kernel does not hold, as sm_90 reads it
    text = (word ^ 1 << 100).to_bytes(16, "little")
    assert derived_listing(text, code) is None  # sm_80 has no record of it: decode, never borrow
    remember([word ^ 1 << 100], [marked], 80)
    assert derived_listing(text, code) == [marked]


@pytest.mark.parametrize("arch", [80, 90])
def test_moved_control_flow_reads_as_nvdisasm_reads_it(corpus, arch):
    """Every kernel of the corpus without a call, its words one place later (targets kept as
    encoded, so each BRA and BSSY jumps 16 bytes further) and again with each target kept,
    listed raw by nvdisasm: the records read-back derives for the moved words, EXIT, BAR and
    the branches among them."""
    from reorder.binary.branches import decode_target, encode_target
    from reorder.sass.model import nvdisasm_json
    from reorder.sass.readback import RELATIVE

    blob, placed = b"", []
    for _cubin, code in (pair for pair in corpus if pair[1].arch == arch):
        if not code.kernel.is_entry or any(i.base in ("CALL", "RET", "BRX", "JMX") for i in code.instructions):
            continue
        words = [code.instructions[0].word] + [i.word for i in code.instructions]
        kept = [code.instructions[0].word] + [
            encode_target(i.word, arch, i.offset + 16, decode_target(i.word, arch, i.offset, i.base), i.base)
            if i.base in RELATIVE
            else i.word
            for i in code.instructions
        ]
        for moved in (words, kept):
            text = b"".join(w.to_bytes(16, "little") for w in moved)
            listing = derived_listing(text, code)
            if listing is not None:
                placed.append((len(blob), listing))
                blob += text
    truth = nvdisasm_json(blob, ".bin", "-b", f"SM{arch}")[1][0]["sass-instructions"]
    moved_cf = 0
    for base, listing in placed:
        for k, record in enumerate(listing):
            expected = truth[base // 16 + k]
            if record.get("opcode", "").split(".")[0] in RELATIVE:
                *head, target = record["operands"].split(",")
                record = {**record, "operands": ",".join([*head, f"{int(target, 16) + base:#x}"])}
            assert _read_record(record) == _read_record(expected), (base, k, record, expected)
            moved_cf += "other-attributes" in record
    assert len(placed) >= 20 and moved_cf >= 100, (len(placed), moved_cf)


def _read_record(record: dict) -> tuple:
    return (
        record.get("predicate", ""),
        record.get("opcode"),
        record.get("operands", ""),
        record.get("other-attributes"),
    )
