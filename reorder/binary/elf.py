"""The ELF64 tables of a cubin, read from its bytes with `struct` alone: section headers and symbols.

pyelftools follows `sh_offset`, `sh_link` and `sh_name` wherever they point (a `.symtab` whose
`sh_link` is 0xFFFF raised "Reading section 65535 ... past EOF"; a string offset past its
table read the next section's bytes as a name). These readers take only what lies inside the
file and hand it to `reorder.binary.elfcheck`, which checks the tables against each other
before pyelftools, nvdisasm or any move reads the cubin.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from reorder.base.errors import InputError

SHDR_FORMAT = (
    "<IIQQQQIIQQ"  # sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, sh_link, sh_info, sh_addralign, sh_entsize
)
SYM_FORMAT = "<IBBHQQ"  # st_name, st_info, st_other, st_shndx, st_value, st_size
SHDR_BYTES, SYM_BYTES = 64, 24
SHT_NULL, SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_RELA, SHT_NOBITS, SHT_REL = 0, 1, 2, 3, 4, 8, 9
SHF_EXECINSTR, SHF_INFO_LINK = 0x4, 0x40
STT_SECTION, STT_FUNC = 3, 2
STO_CUDA_ENTRY = 0x10  # bit 4 of st_other marks a kernel entry (pyelftools drops it)
SHN_LORESERVE = 0xFF00


@dataclass(frozen=True, slots=True)
class Section:
    """A section header, with the byte offset of that header in the file (for patching)."""

    index: int
    name: str
    type: int
    flags: int
    offset: int
    size: int
    link: int
    info: int
    header_offset: int
    entsize: int = 0

    @property
    def occupies_file(self) -> bool:
        """Whether the section's bytes are in the file (NOBITS and empty sections hold none)."""
        return self.type not in (SHT_NULL, SHT_NOBITS) and self.size > 0

    @property
    def label(self) -> str:
        return self.name or f"section {self.index}"


@dataclass(frozen=True, slots=True)
class Symbol:
    """One Elf64_Sym, with its raw st_other (STO_CUDA_ENTRY) and its index in `.symtab`."""

    index: int
    name: str
    kind: int  # STT_*
    other: int
    shndx: int
    value: int
    size: int

    @property
    def is_entry(self) -> bool:
        return bool(self.other & STO_CUDA_ENTRY)


def read_sections(data: bytes, where: str) -> tuple[Section, ...]:
    """Every section header, named from the section name table. The header table itself was
    checked to lie inside the file (elfcheck.check_section_table); names are read only from
    a string table that lies inside the file too."""
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shnum, shstrndx = struct.unpack_from("<HH", data, 0x3C)
    raw = [struct.unpack_from(SHDR_FORMAT, data, shoff + i * SHDR_BYTES) for i in range(shnum)]
    _, strtype, _, _, stroff, strsize, *_ = raw[shstrndx]
    if strtype != SHT_STRTAB or stroff + strsize > len(data):
        raise InputError(
            f"{where}: corrupt ELF header: section name table {shstrndx} is not a string table inside the file"
        )
    names = data[stroff : stroff + strsize]
    out = []
    for i, (name, kind, flags, _addr, offset, size, link, info, _align, entsize) in enumerate(raw):
        out.append(
            Section(
                index=i,
                name=string_at(names, name, f"{where}: corrupt section header {i}: its name"),
                type=kind,
                flags=flags,
                offset=offset,
                size=size,
                link=link,
                info=info,
                header_offset=shoff + i * SHDR_BYTES,
                entsize=entsize,
            )
        )
    return tuple(out)


def string_at(table: bytes, offset: int, what: str) -> str:
    """The NUL-terminated string at `offset` of a string table; InputError when it starts
    past the table or runs off its end."""
    end = table.find(b"\0", offset) if offset < len(table) else -1
    if end < 0:
        raise InputError(f"{what} starts at byte {offset} of a {len(table)}-byte string table and does not end in it")
    return table[offset:end].decode("utf-8", errors="replace")


def read_symbols(data: bytes, sections: tuple[Section, ...], where: str) -> tuple[Symbol, ...]:
    """The symbols of `.symtab` (the only SHT_SYMTAB; elfcheck made sure there is one, inside
    the file, linked to a string table inside the file)."""
    symtab = next((s for s in sections if s.type == SHT_SYMTAB), None)
    if symtab is None:
        return ()
    strtab = sections[symtab.link]
    names = data[strtab.offset : strtab.offset + strtab.size]
    out = []
    for i in range(symtab.size // SYM_BYTES):
        name, info, other, shndx, value, size = struct.unpack_from(SYM_FORMAT, data, symtab.offset + i * SYM_BYTES)
        label = string_at(names, name, f"{where}: corrupt .symtab: symbol {i}'s name")
        out.append(Symbol(i, label, info & 0xF, other, shndx, value, size))
    return tuple(out)
