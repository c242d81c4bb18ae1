"""Reading back a kernel reorder rewrote, from the listing of the kernel it rewrote.

Every move is checked on the bytes it wrote: the candidate cubin is parsed and decoded
again, and the verifier judges that decoding. nvdisasm costs about 0.33 CPU-seconds a call
however small the kernel, and a move changes few words' text: a stall cut changes control
bits only, a reorder moves words, a rename or a branch fix rewrites a few.

nvdisasm's record of an instruction is a function of its word: the stall, yield, scoreboard
and wait bits print nothing, the reuse flags print `.reuse` on the operands they keep. The
exceptions are the control-flow instructions (records with nvdisasm's `other-attributes`),
whose printed targets are counted from their own address. nvdisasm also refuses some control
bits: a stall/yield pair outside NVIDIA's usched_info enum (`ControlCode.encoding_problem`),
a write scoreboard on an op that has none (STS), a wait mask on WARPGROUP.DEPBAR. Over every
op class of the corpus (240 on sm_90, 211 on sm_80) it accepted every other stall, yield and
wait mask (2026-11-30). So a written word takes the record of a reference word
- that differs from it in stall, yield, wait and scoreboard bits only, setting a write
  (read) scoreboard exactly where the reference word sets one (any of the six: a scoreboard
  assignment moves loads between them), the stall and yield legal, and the wait mask
  unchanged if the op is one reorder treats as a barrier (unknown ops included:
  WARPGROUP.DEPBAR is one);
- or, for a word whose reuse flags are clear, that differs from it in those and in its reuse
  flags, with `.reuse` removed from the record;
- at the same offset only, if the reference word is control flow, except where the record
  cannot depend on the address: no operands (EXIT, YIELD, WARPSYNC.ALL), or a block barrier
  (BAR, which prints its barrier's number);
- for a BRA or BSSY (a PC-relative target, reorder.binary.branches), a reference word that
  differs from it in those bits and the target's immediate, whose record prints its own target:
  the record with the written word's target, counted from its own offset.
A renamed word was read by nvdisasm already, alone (`nvdisasm -b`, reorder.sass.rename): such
raw records are remembered (`remember`) and vouch for a word by the same rules (the reuse
rule included), except the control-flow ones (their addresses were counted from elsewhere). A
word none of these covers (a call or return moved, a scoreboard where the reference sets none,
a word never listed) sends the whole kernel to nvdisasm, as before. tests/test_readback.py
checks both decodings equal over written candidates of the corpus, and these rules against
nvdisasm on the corpus's words.
"""

from __future__ import annotations

from reorder.binary.branches import decode_target, immediate_mask
from reorder.binary.cubin import Cubin
from reorder.sass.control import CONTROL_SHIFT, ControlCode
from reorder.sass.model import Instruction, KernelCode, decode_kernel, kernel_from_listing, make_instruction

TIMING_BITS = ((1 << 17) - 1) << CONTROL_SHIFT  # stall, yield, write and read scoreboards, wait mask
REUSE_BITS = 7 << (CONTROL_SHIFT + 17)
NO_SCOREBOARD = 7  # the scoreboard field's "none"
RAW_HELD = 200_000  # raw records remembered at most (then forgotten all at once)
# (arch, word less its timing bits) -> (instruction, record): one word reads differently on two
# archs (nvdisasm prints sm_80's IADD3 without the carry-out predicates sm_90's shows)
_RAW: dict[tuple[int, int], list[tuple[Instruction, dict]]] = {}
# the same records by (arch, word less its timing and reuse bits): the reuse rule's index
_RAW_BARE: dict[tuple[int, int], list[tuple[Instruction, dict]]] = {}


def remember(words: list[int], records: list[dict], arch: int) -> None:
    """Keep nvdisasm's records of raw words of `arch` (listed alone, not in a kernel) that are
    not control flow."""
    if len(_RAW) > RAW_HELD:
        _RAW.clear()
        _RAW_BARE.clear()
    for word, record in zip(words, records):
        if isinstance(record, dict) and "other-attributes" not in record:
            held = _RAW.setdefault((arch, word & ~TIMING_BITS), [])
            if len(held) < 4 and all(ins.word != word for ins, _ in held):
                pair = (make_instruction(0, word, record, arch=arch), record)
                held.append(pair)
                bare = _RAW_BARE.setdefault((arch, word & ~TIMING_BITS & ~REUSE_BITS), [])
                if len(bare) < 4:
                    bare.append(pair)


def listed_before(word: int, arch: int) -> dict | None:
    """nvdisasm's record of exactly `word` of `arch`, listed alone before (`remember`), or None
    (a control-flow word is never held: its record depends on its address)."""
    for ins, record in _RAW.get((arch, word & ~TIMING_BITS), ()):
        if ins.word == word:
            return record
    return None


def read_back(cubin: Cubin, reference: KernelCode) -> KernelCode:
    """`cubin`'s kernel of `reference`'s name, decoded as nvdisasm would decode it."""
    kernel = cubin.kernel(reference.kernel.name)
    listing = derived_listing(kernel.text, reference)
    if listing is None:
        return decode_kernel(cubin, reference.kernel.name)
    return kernel_from_listing(cubin, kernel, listing)


def derived_listing(text: bytes, reference: KernelCode) -> list[dict] | None:
    """One nvdisasm record per word of `text`, taken from `reference`'s records; None when a
    word has no record there that is certainly its own."""
    if len(reference.records) != len(reference.instructions) or len(text) % 16:
        return None
    by_key: dict[int, list[tuple[Instruction, dict]]] = {}
    by_bare_key: dict[int, list[tuple[Instruction, dict]]] = {}
    for pair in zip(reference.instructions, reference.records):
        key = pair[0].word & ~TIMING_BITS
        by_key.setdefault(key, []).append(pair)
        by_bare_key.setdefault(key & ~REUSE_BITS, []).append(pair)
    by_target_free_key = _relative_references(reference)
    listing = []
    for offset in range(0, len(text), 16):
        word = int.from_bytes(text[offset : offset + 16], "little")
        ctrl = ControlCode.from_word(word)
        if ctrl.encoding_problem() is not None:
            return None
        key = word & ~TIMING_BITS
        record = _same_op(offset, ctrl, by_key.get(key, ())) or _same_op(-1, ctrl, _RAW.get((reference.arch, key), ()))
        if record is None and not ctrl.reuse:
            bare = key & ~REUSE_BITS
            record = _same_op(offset, ctrl, by_bare_key.get(bare, ())) or _same_op(
                -1, ctrl, _RAW_BARE.get((reference.arch, bare), ())
            )
            record = record and reuse_removed(record)
        if record is None:
            record = _retargeted(word, offset, ctrl, reference.arch, by_target_free_key)
        if record is None:
            return None
        listing.append(record)
    return listing


def _same_op(offset: int, ctrl: ControlCode, pairs) -> dict | None:
    """The record of a reference word that nvdisasm reads as it reads a word with `ctrl`."""
    for ins, record in pairs:
        c = ins.ctrl
        if "other-attributes" in record and ins.offset != offset and not _address_free(record):
            continue
        if (c.wbar == NO_SCOREBOARD) != (ctrl.wbar == NO_SCOREBOARD) or (c.rbar == NO_SCOREBOARD) != (
            ctrl.rbar == NO_SCOREBOARD
        ):
            continue
        if ins.is_barrier and c.wait != ctrl.wait:
            continue
        return record
    return None


def _address_free(record: dict) -> bool:
    """A control-flow record nvdisasm prints the same at any address."""
    return not record.get("operands") or record.get("other-attributes") == {"inter-warp-barrier": "True"}


RELATIVE = ("BRA", "BSSY")  # ops whose one printed address is their PC-relative target


def _relative_references(reference: KernelCode) -> dict[int, list[tuple[Instruction, dict]]]:
    """The reference's BRA and BSSY words whose record prints exactly their own target (as its
    last operand), by word less its timing bits and its target's immediate."""
    found: dict[int, list[tuple[Instruction, dict]]] = {}
    for ins, record in zip(reference.instructions, reference.records):
        if ins.base not in RELATIVE or "other-attributes" not in record:
            continue
        target = decode_target(ins.word, reference.arch, ins.offset, ins.base)
        if str(record.get("operands", "")).split(",")[-1] == f"{target:#x}":
            found.setdefault(ins.word & ~TIMING_BITS & ~immediate_mask(reference.arch, ins.base), []).append(
                (ins, record)
            )
    return found


def _retargeted(word: int, offset: int, ctrl: ControlCode, arch: int, by_key) -> dict | None:
    """The record of a BRA or BSSY written at `offset`: a reference's with this word's target."""
    for base in RELATIVE:
        for ins, record in by_key.get(word & ~TIMING_BITS & ~immediate_mask(arch, base), ()):
            if ins.base != base or _same_op(ins.offset, ctrl, [(ins, record)]) is None:
                continue
            target = decode_target(word, arch, offset, base)
            if target < 0:
                return None
            return {**record, "operands": ",".join([*record["operands"].split(",")[:-1], f"{target:#x}"])}
    return None


def reuse_removed(record: dict) -> dict:
    operands = record.get("operands")
    if not isinstance(operands, str) or ".reuse" not in operands:
        return record
    return {**record, "operands": operands.replace(".reuse", "")}
