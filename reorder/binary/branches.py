"""PC-relative immediates (BRA, BSSY, CALL.REL, BREAK targets) in the sm_80 and sm_90 layouts.

target = address of the instruction + 16 + 4 * sImm, where sImm is signed:
- sm_90: 56 bits, the high 48 at bits [81:34] and the low 8 in the Rd slot [23:16];
- sm_75..sm_89: 48 bits at [81:34].
BSSY keeps the 48-bit layout on sm_90 too: its Rd slot holds the barrier register (B0..B15);
checked against nvdisasm on the sm_90 corpus (`BSSY B0, 0xdf0` at 0xb0 encodes 0x34c at [81:34]).
(reference/sass_hopper_facts.md §1.2; checked against nvdisasm on the corpus by the tests.)
"""

from __future__ import annotations

from reorder.base.errors import EncodingError

_HIGH_SHIFT, _HIGH_BITS = 34, 48


def _split_layout(arch: int, base: str = "BRA") -> bool:
    return arch >= 90 and base != "BSSY"


def decode_immediate(word: int, arch: int, base: str = "BRA") -> int:
    """The signed immediate of a PC-relative instruction (`base`: its opcode without modifiers)."""
    high = (word >> _HIGH_SHIFT) & ((1 << _HIGH_BITS) - 1)
    if _split_layout(arch, base):
        raw, bits = (high << 8) | ((word >> 16) & 0xFF), 56
    else:
        raw, bits = high, 48
    return raw - (1 << bits) if raw >> (bits - 1) else raw


def decode_target(word: int, arch: int, offset: int, base: str = "BRA") -> int:
    return offset + 16 + 4 * decode_immediate(word, arch, base)


def encode_target(word: int, arch: int, offset: int, target: int, base: str = "BRA") -> int:
    """`word` re-encoded so that, placed at `offset`, it jumps to `target`."""
    delta = target - offset - 16
    if delta % 4:
        raise EncodingError(f"branch target {target:#x} is not 4-byte aligned", offset)
    imm = delta // 4
    bits = 56 if _split_layout(arch, base) else 48
    if not -(1 << (bits - 1)) <= imm < (1 << (bits - 1)):
        raise EncodingError(f"branch displacement {delta} does not fit in {bits} bits", offset)
    raw = imm & ((1 << bits) - 1)
    cleared = word & ~(((1 << _HIGH_BITS) - 1) << _HIGH_SHIFT)
    if _split_layout(arch, base):
        cleared &= ~(0xFF << 16)
        return cleared | ((raw >> 8) << _HIGH_SHIFT) | ((raw & 0xFF) << 16)
    return cleared | (raw << _HIGH_SHIFT)
