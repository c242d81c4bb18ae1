"""PC-relative immediates (BRA, BSSY, CALL.REL, BREAK targets), per arch family, as data.

target = address of the instruction + 16 + 4 * sImm, where sImm is signed and its bits sit in
the word's fields below, lowest first (bit 0 = LSB of the first little-endian u64):
- sm_75..sm_89: 48 bits at [81:34];
- sm_90, sm_100, sm_103, sm_120: 56 bits, the low 8 in the Rd slot [23:16] and the high 48 at
  [81:34];
- BSSY on sm_90 and Blackwell: 30 bits at [63:34]. Its Rd slot holds the barrier register
  (B0..B15), bits [71:64] are ignored by nvdisasm, and bit 73 is Blackwell's `.RECONVERGENT`
  (every BSSY of the sm_100a/sm_103/sm_120 corpus has it), which an encoder that cleared
  [81:34] would drop.
Each layout was read off nvdisasm 13.5 (`-b SM90`, `SM100a`, `SM120`) by setting one bit of
a corpus word at a time and reading the target it prints (bit 63 of a BSSY gives
-0x7ffffff0: the sign); tests/test_blackwell.py checks far and negative targets written by
`encode_target` against nvdisasm on every family, and the corpus tests every target read.
"""

from __future__ import annotations

from reorder.base.errors import EncodingError
from reorder.binary.arches import family

Layout = tuple[tuple[int, int], ...]  # (lowest word bit, width) per field, the immediate's low bits first

_WIDE: Layout = ((34, 48),)
_SPLIT: Layout = ((16, 8), (34, 48))
_BSSY: Layout = ((34, 30),)


def layout(arch: int, base: str = "BRA") -> Layout:
    """Where the immediate of a PC-relative op (`base`: its opcode without modifiers) sits."""
    if family(arch) < 90:
        return _WIDE
    return _BSSY if base == "BSSY" else _SPLIT


def _width(fields: Layout) -> int:
    return sum(width for _, width in fields)


def immediate_mask(arch: int, base: str = "BRA") -> int:
    """The word's bits that hold a PC-relative op's immediate: a word less them names the op
    and its operands wherever it jumps."""
    mask = 0
    for lsb, width in layout(arch, base):
        mask |= ((1 << width) - 1) << lsb
    return mask


def decode_immediate(word: int, arch: int, base: str = "BRA") -> int:
    """The signed immediate of a PC-relative instruction."""
    fields = layout(arch, base)
    raw, shift = 0, 0
    for lsb, width in fields:
        raw |= ((word >> lsb) & ((1 << width) - 1)) << shift
        shift += width
    return raw - (1 << shift) if raw >> (shift - 1) else raw


def decode_target(word: int, arch: int, offset: int, base: str = "BRA") -> int:
    return offset + 16 + 4 * decode_immediate(word, arch, base)


def encode_target(word: int, arch: int, offset: int, target: int, base: str = "BRA") -> int:
    """`word` re-encoded so that, placed at `offset`, it jumps to `target`; every bit outside
    the immediate's fields is kept."""
    delta = target - offset - 16
    if delta % 4:
        raise EncodingError(f"branch target {target:#x} is not 4-byte aligned", offset)
    imm = delta // 4
    fields = layout(arch, base)
    bits = _width(fields)
    if not -(1 << (bits - 1)) <= imm < (1 << (bits - 1)):
        raise EncodingError(f"branch displacement {delta} does not fit in {bits} bits", offset)
    raw, shift = imm & ((1 << bits) - 1), 0
    for lsb, width in fields:
        mask = (1 << width) - 1
        word = (word & ~(mask << lsb)) | (((raw >> shift) & mask) << lsb)
        shift += width
    return word
