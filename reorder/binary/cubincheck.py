"""Plausibility of a cubin's tables, checked before anything (pyelftools, nvdisasm) trusts them.

Fuzzed cubins showed what a reader that trusts its input does: a section-header count of 0 or 3
read as a cubin with no kernels (`disasm` printed nothing and exited 0); a register count of
60,437 or 4 GiB of shared memory passed `verify` and reached `stalls`' output; a relocation of
`.debug_frame` whose addend points past its function made nvdisasm spin for over 11 minutes.
Each check here names the table and the entry that is wrong, as one InputError line.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from reorder.base.errors import InputError

ELF64_HEADER_BYTES = 64
ELF64_SHDR_BYTES = 64
ELF64_SYM_BYTES = 24
SHT_SYMTAB, SHT_RELA, SHT_REL = 2, 4, 9
SHN_LORESERVE = 0xFF00
STT_FUNC = 2


@dataclass(frozen=True, slots=True)
class ArchLimits:
    """What one architecture allows a kernel: registers per thread, shared memory per block
    (the opt-in maximum, static and dynamic together), and bytes of kernel parameters."""

    registers: int
    shared_bytes: int
    param_bytes: int


# CUDA C++ Programming Guide, "Technical Specifications per Compute Capability": 255 registers
# per thread; maximum shared memory per thread block 64 KB (7.5), 163 KB (8.0, 8.7), 99 KB
# (8.6, 8.9), 227 KB (9.0); kernel parameters up to 32,764 bytes (CUDA 12.1 on, Volta and later).
ARCH_LIMITS: dict[int, ArchLimits] = {
    75: ArchLimits(255, 64 * 1024, 32764),
    80: ArchLimits(255, 163 * 1024, 32764),
    86: ArchLimits(255, 99 * 1024, 32764),
    87: ArchLimits(255, 163 * 1024, 32764),
    89: ArchLimits(255, 99 * 1024, 32764),
    90: ArchLimits(255, 227 * 1024, 32764),
}


def check_section_table(data: bytes, where: str) -> None:
    """The section header table lies inside the file, with entries of the ELF64 size and a
    name table among them (a count of 0 reads as a file with no sections at all)."""
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if shentsize != ELF64_SHDR_BYTES:
        raise InputError(f"{where}: corrupt ELF header: section header size {shentsize}, ELF64 has 64")
    if shnum < 2 or shoff < ELF64_HEADER_BYTES or shoff + shnum * shentsize > len(data):
        raise InputError(
            f"{where}: corrupt section table: {shnum} section headers at byte {shoff} "
            f"(a cubin has 2 or more, inside its {len(data)} bytes)"
        )
    if not 0 < shstrndx < shnum:
        raise InputError(f"{where}: corrupt ELF header: section name table index {shstrndx} of {shnum} sections")


def check_symbols_and_relocations(data: bytes, sections, where: str) -> None:
    """Every relocation patches a byte of its section and points, through a symbol that
    exists, inside the section that symbol is defined in; every function symbol lies inside
    its section. nvdisasm follows these without bounds (the `.rela.debug_frame` spins)."""
    symtab = next((s for s in sections if s.type == SHT_SYMTAB), None)
    symbols = _symbol_table(data, symtab) if symtab else []
    for index, (kind, shndx, value, size) in enumerate(symbols):
        home = _defined_in(sections, shndx)
        if kind == STT_FUNC and home is not None and value + size > home.size:
            raise InputError(
                f"{where}: corrupt .symtab: function symbol {index} ends at byte {value + size} "
                f"of {home.name or shndx}, which holds {home.size}"
            )
    for s in sections:
        if s.type in (SHT_RELA, SHT_REL):
            _check_relocations(data, s, sections, symbols, where)


def _symbol_table(data: bytes, symtab) -> list[tuple[int, int, int, int]]:
    """(type, st_shndx, st_value, st_size) of each Elf64_Sym."""
    out = []
    for pos in range(symtab.offset, symtab.offset + symtab.size - ELF64_SYM_BYTES + 1, ELF64_SYM_BYTES):
        info, _other, shndx, value, size = struct.unpack_from("<BBHQQ", data, pos + 4)
        out.append((info & 0xF, shndx, value, size))
    return out


def _defined_in(sections, shndx: int):
    """The section a symbol is defined in; None for undefined, absolute and common symbols."""
    return sections[shndx] if 0 < shndx < min(len(sections), SHN_LORESERVE) else None


def _check_relocations(data: bytes, rel, sections, symbols, where: str) -> None:
    if not 0 < rel.info < len(sections):
        raise InputError(
            f"{where}: corrupt {rel.name or 'relocation section'}: it applies to section {rel.info} of {len(sections)}"
        )
    target = sections[rel.info]
    width = 24 if rel.type == SHT_RELA else 16
    for n, pos in enumerate(range(rel.offset, rel.offset + rel.size - width + 1, width)):
        r_offset, r_info = struct.unpack_from("<QQ", data, pos)
        symbol = r_info >> 32
        bad = ""
        if r_offset >= target.size:
            bad = f"patches byte {r_offset} of {target.name}, which holds {target.size}"
        elif symbol >= max(len(symbols), 1):
            bad = f"names symbol {symbol}; .symtab holds {len(symbols)}"
        elif rel.type == SHT_RELA and (home := _defined_in(sections, symbols[symbol][1])) is not None:
            addend = struct.unpack_from("<q", data, pos + 16)[0]
            place = symbols[symbol][2] + addend
            if not 0 <= place <= home.size:
                bad = f"points to byte {place} of {home.name}, which holds {home.size}"
        if bad:
            raise InputError(f"{where}: corrupt {rel.name}: relocation {n} {bad}")


def check_kernel_limits(kernel, arch: int, where: str) -> None:
    """Register count, shared memory and parameter bytes within what the architecture allows
    (a mutated header would otherwise pass `verify` as legal and reach a written output)."""
    limits = ARCH_LIMITS[arch]
    if not 0 <= kernel.regcount <= limits.registers:
        raise InputError(
            f"{where}: {kernel.name}: register count {kernel.regcount}; sm_{arch} allows at most "
            f"{limits.registers} (corrupt EIATTR_REGCOUNT?)"
        )
    if kernel.shared_bytes > limits.shared_bytes:
        raise InputError(
            f"{where}: {kernel.name}: {kernel.shared_bytes} bytes of shared memory; sm_{arch} allows "
            f"at most {limits.shared_bytes} per block (corrupt .nv.shared.{kernel.name}?)"
        )
    end = max((p.offset + p.size for p in kernel.params), default=0)
    if end > limits.param_bytes:
        raise InputError(
            f"{where}: {kernel.name}: parameters end at byte {end}; sm_{arch} allows at most "
            f"{limits.param_bytes} (corrupt EIATTR_KPARAM_INFO?)"
        )
