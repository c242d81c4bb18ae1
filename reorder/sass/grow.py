"""Insert new instructions into a kernel: the .text section grows and the cubin is laid out again.

Same-size patching (reorder.sass.writer) only rewrites bytes in place. Growing .text moves
every later byte, so this module rebuilds the file: sections keep their order and
alignment, later ones shift, the section and program header tables follow, and every
segment's p_offset/p_filesz/p_memsz is recomputed from the sections it covered. Inside
the kernel the fix-ups are those of a move (reference/sass_hopper_facts.md §6, "what an
instruction-moving tool must fix"): EIATTR offset lists, relocation offsets, PC-relative
branch immediates whose span crosses an insertion, the function symbols' value/size,
REGCOUNT. A trailing 8-byte kernel parameter can be added as well (KPARAM_INFO, the
c-bank parameter sizes and .nv.constant0), so inserted code can reach a buffer.

Original instructions keep their bits; only branches whose span changed are re-encoded,
and `changed_originals` proves it after every build.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from reorder.base.errors import EncodingError
from reorder.binary import branches
from reorder.binary.cubin import RESERVED_REGISTERS, SHT_NOBITS, Cubin, Kernel, parse_cubin
from reorder.binary.nvinfo import (
    ATTR_CBANK_PARAM_SIZE,
    ATTR_INDIRECT_BRANCH_TARGETS,
    ATTR_KPARAM_INFO,
    ATTR_PARAM_CBANK,
    ATTR_REGCOUNT,
    FMT_SVAL,
    NvAttr,
    encode_nv_info,
    remap_record,
)
from reorder.sass.model import Instruction, KernelCode

TEXT_ALIGN = 128  # .text sizes are padded to this with NOPs (ref §1.3)
NOP_WORD = (0x000FC00000000000 << 64) | 0x7918  # ptxas's padding NOP, S00 DRAIN (ref §1.1)
_SHDR = struct.Struct("<IIQQQQIIQQ")
_PHDR = struct.Struct("<IIQQQQQQ")
_SYM = struct.Struct("<IBBHQQ")
PT_PHDR = 6


@dataclass(frozen=True, slots=True)
class Insertion:
    """New instruction words placed before the original instruction at index `before`.

    Branches that targeted that instruction still land on it, so the new words run only
    on the fall-through path from the instruction before (a probe "after k" is an
    insertion before k + 1).
    """

    before: int
    words: tuple[int, ...]


@dataclass(frozen=True)
class Grown:
    """A grown cubin and the facts a caller checks it with."""

    data: bytes
    kernel: str
    new_offset_of: dict[int, int]  # original instruction offset -> its new offset
    inserted: tuple[int, ...]  # new offsets of inserted words
    retargeted: tuple[int, ...]  # original offsets of branches re-encoded for a changed span
    regcount_before: int
    regcount_after: int
    param_offset: int | None  # c-bank byte offset of the added pointer parameter, e.g. 0x230


def grow_kernel(
    code: KernelCode, insertions: Sequence[Insertion], regcount: int | None = None, add_pointer_param: bool = False
) -> Grown:
    """The cubin of `code` with `insertions` placed, every dependent structure fixed up.

    `regcount` raises EIATTR_REGCOUNT (never lowers it). The result is re-parsed as a check.
    """
    cubin, kernel = code.cubin, code.kernel
    if kernel.attr(ATTR_INDIRECT_BRANCH_TARGETS):
        raise EncodingError(f"{kernel.name}: indirect branches (jump tables) are not supported when growing .text")
    text, new_offset_of, inserted, retargeted = grown_text(code, insertions)
    contents: dict[int, bytes] = {kernel.text_section: text}
    attrs = tuple(remap_record(r, new_offset_of) for r in kernel.attrs)
    param_offset = None
    if add_pointer_param:
        attrs, param_offset, cbank_bytes = with_pointer_param(attrs, len(kernel.params))
        const = cubin.section(f".nv.constant0.{kernel.name}")
        if const is not None:
            old = cubin.data[const.offset : const.offset + const.size]
            contents[const.index] = old + bytes(max(0, cbank_bytes - len(old)))
    if kernel.info_section is not None:
        contents[kernel.info_section] = encode_nv_info(attrs)
    contents.update(_relocation_contents(cubin, kernel, new_offset_of))
    contents.update(_symbol_contents(cubin, kernel, new_offset_of, len(text)))
    new_regcount = max(kernel.regcount, regcount or 0)
    infos: dict[int, int] = {}
    if new_regcount != kernel.regcount:
        contents.update(_regcount_contents(cubin, kernel, new_regcount))
        if kernel.regcount_in_sh_info:
            text_sec = cubin.sections[kernel.text_section]
            infos[kernel.text_section] = (text_sec.info & 0xFFFFFF) | (new_regcount << 24)
    data = relayout(cubin, contents, infos)
    parse_cubin(data, f"grown {kernel.name}")
    return Grown(data, kernel.name, new_offset_of, inserted, retargeted, kernel.regcount, new_regcount, param_offset)


# ---------------------------------------------------------------- the kernel's own bytes


def grown_text(
    code: KernelCode, insertions: Sequence[Insertion]
) -> tuple[bytes, dict[int, int], tuple[int, ...], tuple[int, ...]]:
    """New .text bytes, the old->new offset map, inserted offsets and re-encoded branches."""
    n = len(code.instructions)
    at: dict[int, list[int]] = {}
    for ins in insertions:
        if not 0 <= ins.before < n:
            raise EncodingError(f"insertion before instruction {ins.before}: out of range 0..{n - 1}")
        at.setdefault(ins.before, []).extend(ins.words)
    new_offset_of: dict[int, int] = {}
    slots: list[int | None] = []  # None = an original, placed below
    inserted: list[int] = []
    for i, original in enumerate(code.instructions):
        for word in at.get(i, ()):
            inserted.append(16 * len(slots))
            slots.append(word)
        new_offset_of[original.offset] = 16 * len(slots)
        slots.append(None)
    words, retargeted = _place_originals(code, slots, new_offset_of)
    pad = (-len(words)) % (TEXT_ALIGN // 16)
    words += [_nop_word(code)] * pad
    return b"".join(w.to_bytes(16, "little") for w in words), new_offset_of, tuple(inserted), tuple(retargeted)


def _place_originals(code: KernelCode, slots: list[int | None], new_offset_of: dict[int, int]):
    originals = iter(enumerate(code.instructions))
    returns = return_moves(code.instructions)
    words: list[int] = []
    retargeted: list[int] = []
    for slot in slots:
        if slot is not None:
            words.append(slot)
            continue
        k, ins = next(originals)
        word = ins.word
        if k in returns and new_offset_of[returns[k]] != returns[k]:
            word = with_return_address(ins, new_offset_of[returns[k]])
            retargeted.append(ins.offset)
        target = pc_target(ins, code.arch)
        if target is not None:
            if target not in new_offset_of:
                raise EncodingError(f"branch target {target:#x} is not an instruction", ins.offset, ins.opcode)
            here, there = new_offset_of[ins.offset], new_offset_of[target]
            if there - here != target - ins.offset:
                word = branches.encode_target(word, code.arch, here, there, ins.base)
                retargeted.append(ins.offset)
        words.append(word)
    return words, retargeted


def return_moves(ins: tuple[Instruction, ...]) -> dict[int, int]:
    """index of a `MOV Rx, imm` -> the call's return site it names: in the block of a relative
    call, before it, unguarded, its immediate the offset right after the call (how ptxas hands a
    subroutine its return address). A shift of the code re-encodes these immediates."""
    out = {}
    for k, x in enumerate(ins):
        if x.base != "CALL" or not x.opcode.startswith("CALL.REL"):
            continue
        back = x.offset + 16
        for j in range(k - 1, max(-1, k - 8), -1):
            y = ins[j]
            if y.base in ("BRA", "EXIT", "CALL", "RET", "BSSY", "BSYNC") or not y.known:
                break
            ops = [t.replace(".reuse", "") for t in y.operands]
            if y.opcode == "MOV" and not y.guard and len(ops) == 2 and ops[1] == f"{back:#x}":
                out[j] = back
                break
    return out


def with_return_address(ins: Instruction, new: int) -> int:
    """A return-address `MOV Rx, imm32`'s word with the immediate (bits [63:32]) set to `new`."""
    old = (ins.word >> 32) & 0xFFFFFFFF
    if f"{old:#x}" != ins.operands[-1].replace(".reuse", ""):
        raise EncodingError(f"the return address of {ins.text!r} is not at bits 32-63", ins.offset, ins.opcode)
    return (ins.word & ~(0xFFFFFFFF << 32)) | (new << 32)


def pc_target(ins: Instruction, arch: int) -> int | None:
    """The code offset a PC-relative instruction names: a branch's or BSSY's target, or the
    callee of a relative call, or the base a relative return adds its register to (CALL.REL and
    RET.REL, which the model gives no target: they name a function, not a block; the
    displacement is baked into the word when no relocation carries it)."""
    if ins.target is not None:
        return ins.target
    if ins.opcode.startswith(("CALL.REL", "RET.REL")) and not ins.has_relocation:
        return branches.decode_target(ins.word, arch, ins.offset, ins.base)
    return None


def _nop_word(code: KernelCode) -> int:
    """The kernel's own padding NOP when it has one (bit-identical to ptxas's), else the reference one."""
    return next((i.word for i in reversed(code.instructions) if i.opcode == "NOP"), NOP_WORD)


def with_pointer_param(attrs: tuple[NvAttr, ...], ordinal: int) -> tuple[tuple[NvAttr, ...], int, int]:
    """Records with one trailing 8-byte parameter added; its absolute c-bank offset; c-bank bytes.

    KPARAM_INFO payload: u32 index, u16 ordinal, u16 offset, u32 flags with the size in
    bits 31:18 (reorder.binary.nvinfo.decode_kparam). The flags of an existing parameter are
    kept (ptxas writes 0x1f000 below the size); ptxas lists the highest ordinal first, so
    the new record goes before the others. PARAM_CBANK = {u32 symbol, u16 base, u16 size}.
    """
    size_rec = next((a for a in attrs if a.attr == ATTR_CBANK_PARAM_SIZE), None)
    cbank_rec = next((a for a in attrs if a.attr == ATTR_PARAM_CBANK and a.fmt == FMT_SVAL), None)
    if size_rec is None or cbank_rec is None:
        raise EncodingError("kernel has no EIATTR_CBANK_PARAM_SIZE / PARAM_CBANK; cannot add a parameter")
    old_bytes = size_rec.value
    offset = (old_bytes + 7) // 8 * 8
    new_bytes = offset + 8
    flags = next(
        (struct.unpack_from("<I", a.payload, 8)[0] & 0x3FFFF for a in attrs if a.attr == ATTR_KPARAM_INFO), 0x1F000
    )
    kparam = NvAttr(0, FMT_SVAL, ATTR_KPARAM_INFO, struct.pack("<IHHI", 0, ordinal, offset, (8 << 18) | flags))
    symbol, base, _ = struct.unpack_from("<IHH", cbank_rec.payload)
    out: list[NvAttr] = []
    for a in attrs:
        if a.attr == ATTR_KPARAM_INFO and kparam not in out:
            out.append(kparam)
        if a is size_rec:
            a = NvAttr(a.offset, a.fmt, a.attr, struct.pack("<H", new_bytes))
        elif a is cbank_rec:
            a = NvAttr(a.offset, a.fmt, a.attr, struct.pack("<IHH", symbol, base, new_bytes) + a.payload[8:])
        out.append(a)
    if kparam not in out:
        out.insert(0, kparam)
    return tuple(out), base + offset, base + new_bytes


def _relocation_contents(cubin: Cubin, kernel: Kernel, new_offset_of: dict[int, int]) -> dict[int, bytes]:
    out: dict[int, bytearray] = {}
    for rel in kernel.relocations:
        section = cubin.sections[rel.section]
        blob = out.setdefault(rel.section, bytearray(cubin.data[section.offset : section.offset + section.size]))
        slot = rel.offset - rel.offset % 16
        struct.pack_into("<Q", blob, rel.record_offset - section.offset, new_offset_of[slot] + rel.offset % 16)
    return {k: bytes(v) for k, v in out.items()}


def _symbol_contents(cubin: Cubin, kernel: Kernel, new_offset_of: dict[int, int], new_size: int) -> dict[int, bytes]:
    """st_value / st_size of every symbol inside the grown .text (the kernel, internal functions)."""
    symtab = cubin.section(".symtab")
    if symtab is None:
        return {}
    old_size = len(kernel.text)
    blob = bytearray(cubin.data[symtab.offset : symtab.offset + symtab.size])

    def moved(offset: int) -> int:
        return new_size if offset >= old_size else new_offset_of.get(offset, offset)

    for pos in range(0, len(blob) - _SYM.size + 1, _SYM.size):
        name, info, other, shndx, value, size = _SYM.unpack_from(blob, pos)
        if shndx != kernel.text_section:
            continue
        start = moved(value)
        end = moved(value + size) if size else start
        _SYM.pack_into(blob, pos, name, info, other, shndx, start, end - start)
    return {symtab.index: bytes(blob)}


def _regcount_contents(cubin: Cubin, kernel: Kernel, regcount: int) -> dict[int, bytes]:
    if not 1 <= regcount <= 255:
        raise EncodingError(f"{kernel.name}: register count {regcount} out of range (at most 255)")
    if cubin.global_info_section is None:
        return {}
    section = cubin.sections[cubin.global_info_section]
    blob = bytearray(cubin.data[section.offset : section.offset + section.size])
    for record in cubin.global_attrs:
        if record.attr == ATTR_REGCOUNT and record.words()[0] == kernel.symbol_index:
            struct.pack_into("<I", blob, record.offset + 8, regcount)
    return {section.index: bytes(blob)}


def regcount_for(highest_register: int) -> int:
    """REGCOUNT a kernel needs when it names R<highest>: two above it are reserved (reorder.binary.cubin)."""
    return highest_register + 1 + RESERVED_REGISTERS


# ---------------------------------------------------------------- file layout


@dataclass(frozen=True, slots=True)
class _Item:
    """A run of file bytes that moves as one: a section, or a header table."""

    key: str | int
    old_offset: int
    old_size: int  # bytes in the file (0 for NOBITS)
    data: bytes | None  # None: NOBITS (no file bytes)
    align: int


def _items(cubin: Cubin, contents: dict[int, bytes]) -> list[_Item]:
    data = cubin.data
    e_phoff, e_shoff = struct.unpack_from("<QQ", data, 0x20)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", data, 0x36)
    items = [_Item("shdr", e_shoff, shentsize * shnum, data[e_shoff : e_shoff + shentsize * shnum], 8)]
    if phnum:
        items.append(_Item("phdr", e_phoff, phentsize * phnum, data[e_phoff : e_phoff + phentsize * phnum], 8))
    for s in cubin.sections[1:]:
        align = max(1, _SHDR.unpack_from(data, s.header_offset)[8])
        if s.type == SHT_NOBITS:
            items.append(_Item(s.index, s.offset, 0, None, align))
        else:
            items.append(
                _Item(s.index, s.offset, s.size, contents.get(s.index, data[s.offset : s.offset + s.size]), align)
            )
    return sorted(
        items,
        key=lambda it: (
            it.old_offset,
            it.data is not None and it.old_size > 0,
            it.key if isinstance(it.key, int) else 1 << 20,
        ),
    )


def relayout(cubin: Cubin, contents: dict[int, bytes], infos: dict[int, int] | None = None) -> bytes:
    """The file with some sections' bytes replaced (possibly longer), everything after shifted.

    Each item keeps its alignment; gaps are zero padding, as ptxas writes them.
    `infos` overrides sh_info of some sections (the sm_80 register count byte).
    """
    items = _items(cubin, contents)
    out = bytearray(cubin.data[:64])
    placed: dict[str | int, tuple[int, int]] = {}  # key -> (new offset, new size)
    shift = 0
    for it in items:
        start = _align(max(it.old_offset + shift, len(out) if it.data is not None else 0), it.align)
        if it.data is None:
            placed[it.key] = (start, 0)
            continue
        out += bytes(start - len(out))
        out += it.data
        placed[it.key] = (start, len(it.data))
        shift = len(out) - (it.old_offset + it.old_size)
    _write_headers(cubin, out, items, placed, infos or {})
    return bytes(out)


def _align(value: int, align: int) -> int:
    return (value + align - 1) // align * align


def _write_headers(cubin: Cubin, out: bytearray, items: list[_Item], placed, infos: dict[int, int]) -> None:
    data = cubin.data
    e_phoff = struct.unpack_from("<Q", data, 0x20)[0]
    phentsize, phnum, shentsize, _ = struct.unpack_from("<HHHH", data, 0x36)
    shoff = placed["shdr"][0]
    struct.pack_into("<Q", out, 0x28, shoff)
    for s in cubin.sections[1:]:
        fields = list(_SHDR.unpack_from(data, s.header_offset))
        fields[4], size = placed[s.index]
        if s.type != SHT_NOBITS:
            fields[5] = size
        fields[7] = infos.get(s.index, fields[7])
        _SHDR.pack_into(out, shoff + s.index * shentsize, *fields)
    if not phnum:
        return
    phoff = placed["phdr"][0]
    struct.pack_into("<Q", out, 0x20, phoff)
    for k in range(phnum):
        fields = list(_PHDR.unpack_from(data, e_phoff + k * phentsize))
        fields[2], fields[5], fields[6] = _segment(fields, items, placed)
        _PHDR.pack_into(out, phoff + k * phentsize, *fields)


def _segment(fields: list[int], items: list[_Item], placed) -> tuple[int, int, int]:
    """New (p_offset, p_filesz, p_memsz): the segment keeps covering the same items."""
    p_type, _, p_offset, _, _, p_filesz, p_memsz, _ = fields
    following = [it for it in items if it.old_offset >= p_offset]
    delta = placed[following[0].key][0] - following[0].old_offset if following else 0
    if p_type == PT_PHDR:
        return placed["phdr"][0], p_filesz, p_memsz
    covered = [
        it
        for it in items
        if it.data is not None
        and it.old_size > 0
        and it.old_offset >= p_offset
        and it.old_offset + it.old_size <= p_offset + p_filesz
    ]
    new_offset = p_offset + delta
    if not covered:
        return new_offset, p_filesz, p_memsz
    last = max(covered, key=lambda it: it.old_offset + it.old_size)
    new_end = placed[last.key][0] + placed[last.key][1]
    new_filesz = new_end - new_offset
    return new_offset, new_filesz, p_memsz + (new_filesz - p_filesz)


# ---------------------------------------------------------------- checks


def changed_originals(before: KernelCode, after_text: bytes, grown: Grown) -> tuple[int, ...]:
    """Original offsets whose 16 bytes differ in the grown .text, re-targeted branches excepted.

    A re-targeted branch must still reach the same original instruction, and differ only
    in its immediate: both are checked here too.
    """
    bad: list[int] = []
    retargeted = set(grown.retargeted)
    returns = return_moves(before.instructions)
    for k, ins in enumerate(before.instructions):
        new = grown.new_offset_of[ins.offset]
        word = int.from_bytes(after_text[new : new + 16], "little")
        if ins.offset not in retargeted:
            if word != ins.word:
                bad.append(ins.offset)
            continue
        if k in returns:  # a return address: the same MOV naming where its call now returns to
            if word != with_return_address(ins, grown.new_offset_of[returns[k]]):
                bad.append(ins.offset)
            continue
        old_target = pc_target(ins, before.arch)
        assert old_target is not None  # only PC-relative instructions are retargeted
        target = branches.decode_target(word, before.arch, new, ins.base)
        same_rest = branches.encode_target(word, before.arch, new, old_target, ins.base) == branches.encode_target(
            ins.word, before.arch, new, old_target, ins.base
        )
        if target != grown.new_offset_of[old_target] or not same_rest:
            bad.append(ins.offset)
    return tuple(bad)
