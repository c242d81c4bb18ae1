"""Write a patched copy of a cubin: a kernel's instructions in a new order or with new
control codes, with every fix-up a moved instruction needs.

Fix-ups: EIATTR instruction-offset lists (remapped, kept sorted), indirect-branch
targets, relocation offsets, PC-relative immediates of moved branches, and the register
count (EIATTR_REGCOUNT and, on sm_80-style cubins, the top byte of the .text sh_info).
The input file is never overwritten and files are written atomically.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from reorder.base.errors import EncodingError
from reorder.binary import branches
from reorder.binary.cubin import Cubin, Kernel, parse_cubin
from reorder.binary.nvinfo import ATTR_REGCOUNT, encode_nv_info, remap_record
from reorder.sass.model import Instruction


def kernel_text(arch: int, ordered: Sequence[Instruction]) -> tuple[bytes, dict[int, int]]:
    """The new .text bytes and the old->new offset map.

    Each instruction's `offset` is where it was; its index in `ordered` is where it goes.
    Branch targets are block boundaries, which in-block moves leave in place, so a moved
    branch keeps its absolute target and only its displacement is re-encoded.
    """
    new_offset_of = {ins.offset: 16 * i for i, ins in enumerate(ordered)}
    if len(new_offset_of) != len(ordered):
        raise EncodingError("an instruction appears twice in the new order")
    words = []
    for i, ins in enumerate(ordered):
        word = ins.word
        if ins.target is not None and ins.offset != 16 * i:
            word = branches.encode_target(word, arch, 16 * i, ins.target, ins.base)
        words.append(word.to_bytes(16, "little"))
    return b"".join(words), new_offset_of


def patch_kernel(cubin: Cubin, kernel: Kernel, ordered: Sequence[Instruction], regcount: int | None = None) -> bytes:
    """Bytes of a cubin whose kernel holds `ordered`; the result is re-parsed as a check."""
    if len(ordered) != kernel.instruction_count:
        raise EncodingError(
            f"{kernel.name}: new order has {len(ordered)} instructions, .text holds "
            f"{kernel.instruction_count}; growing .text is not supported here"
        )
    text, new_offset_of = kernel_text(cubin.arch, ordered)
    data = bytearray(cubin.data)
    data[kernel.text_offset : kernel.text_offset + len(text)] = text
    moved = {old: new for old, new in new_offset_of.items() if old != new}
    if moved:
        _patch_info(data, cubin, kernel, moved)
        _patch_relocations(data, kernel, moved)
    if regcount is not None and regcount != kernel.regcount:
        _patch_regcount(data, cubin, kernel, regcount)
    out = bytes(data)
    parse_cubin(out, f"patched {kernel.name}")  # the result must read back
    return out


def _patch_info(data: bytearray, cubin: Cubin, kernel: Kernel, moved: dict[int, int]) -> None:
    if kernel.info_section is None:
        return
    section = cubin.sections[kernel.info_section]
    records = tuple(remap_record(r, moved) for r in kernel.attrs)
    blob = encode_nv_info(records)
    if len(blob) != section.size:
        raise EncodingError(f"{kernel.name}: .nv.info size changed while remapping offsets")
    data[section.offset : section.offset + section.size] = blob


def _patch_relocations(data: bytearray, kernel: Kernel, moved: dict[int, int]) -> None:
    for rel in kernel.relocations:
        slot, within = rel.offset - rel.offset % 16, rel.offset % 16
        if slot in moved:
            struct.pack_into("<Q", data, rel.record_offset, moved[slot] + within)


def _patch_regcount(data: bytearray, cubin: Cubin, kernel: Kernel, regcount: int) -> None:
    if not 1 <= regcount <= 255:
        raise EncodingError(f"{kernel.name}: register count {regcount} out of range")
    if cubin.global_info_section is not None:
        section = cubin.sections[cubin.global_info_section]
        for record in cubin.global_attrs:
            if record.attr == ATTR_REGCOUNT and record.words()[0] == kernel.symbol_index:
                struct.pack_into("<I", data, section.offset + record.offset + 8, regcount)
    if kernel.regcount_in_sh_info:
        text = cubin.sections[kernel.text_section]
        info = (text.info & 0xFFFFFF) | (regcount << 24)
        struct.pack_into("<I", data, text.header_offset + 44, info)  # sh_info in Elf64_Shdr
