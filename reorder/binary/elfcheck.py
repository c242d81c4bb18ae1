"""A cubin's ELF tables checked against each other, before anything reads the file through them.

Hand-edited cubins (pyelftools and struct edits) showed what a reader that trusts one table
at a time does: a `.text` whose `sh_offset` pointed at another kernel's code was judged under
its own name (`verify` said legal, `stalls` wrote an output); a `.text` whose `sh_info` named
symbol 999 of 15, two section headers for one kernel's `.text`, and `sh_link` 0xFFFF on
`.text`, `.symtab` or `.nv.info` all passed as valid. Every rule here holds for each of the
103 cubins of the corpus, the suite and nvcc 13.0 builds (sm_75 to sm_90, -G, -lineinfo,
printf, constant and global variables, Triton's): no section overlaps another or the ELF
headers, section names are unique, every `.text.<k>` is named by exactly one function
symbol `<k>` defined in it, and every section that belongs to a kernel names that kernel's
`.text` in `sh_info`. Each failure is one InputError line naming the table and the entry.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Iterable

from reorder.base.errors import InputError
from reorder.binary.elf import (
    SHDR_BYTES,
    SHF_EXECINSTR,
    SHF_INFO_LINK,
    SHN_LORESERVE,
    SHT_NOBITS,
    SHT_PROGBITS,
    SHT_REL,
    SHT_RELA,
    SHT_STRTAB,
    SHT_SYMTAB,
    STT_FUNC,
    SYM_BYTES,
    Section,
    Symbol,
)

ELF64_HEADER_BYTES = 64
ELF64_PHDR_BYTES = 56
SHT_CUDA_INFO, SHT_CUDA_CALLGRAPH = 0x70000000, 0x70000001
INSTRUCTION_BYTES = 16
# Sections that belong to one kernel by name; their sh_info is that kernel's .text index.
KERNEL_PREFIXES = (".nv.info.", ".nv.constant0.", ".nv.shared.", ".rela.text.", ".rel.text.")
SHARED_RESERVED = ".nv.shared.reserved."


def check_section_table(data: bytes, where: str) -> None:
    """The section and program header tables lie inside the file, with entries of the ELF64
    sizes and a name table among them (a count of 0 reads as a file with no sections at all)."""
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if shentsize != SHDR_BYTES:
        raise InputError(f"{where}: corrupt ELF header: section header size {shentsize}, ELF64 has 64")
    if shnum < 2 or shoff < ELF64_HEADER_BYTES or shoff + shnum * shentsize > len(data):
        raise InputError(
            f"{where}: corrupt section table: {shnum} section headers at byte {shoff} "
            f"(a cubin has 2 or more, inside its {len(data)} bytes)"
        )
    if not 0 < shstrndx < shnum:
        raise InputError(f"{where}: corrupt ELF header: section name table index {shstrndx} of {shnum} sections")
    (phoff,) = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    if phnum and (phentsize != ELF64_PHDR_BYTES or phoff < ELF64_HEADER_BYTES or phoff + phnum * phentsize > len(data)):
        raise InputError(
            f"{where}: corrupt program header table: {phnum} entries of {phentsize} bytes at byte {phoff} "
            f"(ELF64 entries are 56 bytes, inside the file's {len(data)})"
        )


def check_sections(data: bytes, sections: tuple[Section, ...], where: str) -> None:
    """Every section inside the file and apart from the others and the headers; names unique;
    sh_link and sh_info in range and naming a section of the right type."""
    for s in sections[1:]:
        if s.type != SHT_NOBITS and s.offset + s.size > len(data):
            raise InputError(f"{where}: section {s.label} runs past the end of the file (truncated?)")
    _check_apart(data, sections, where)
    _check_unique_names(sections, where)
    symtabs = [s for s in sections if s.type == SHT_SYMTAB]
    if len(symtabs) > 1:
        raise InputError(
            f"{where}: corrupt section table: {len(symtabs)} symbol tables (sections "
            f"{', '.join(str(s.index) for s in symtabs)}); a cubin has one"
        )
    for s in sections[1:]:
        _check_links(s, sections, where)
    for s in symtabs:
        _check_symtab(s, sections, where)
    for s in sections:
        if s.name.startswith(".text."):
            _check_text_header(s, sections, where)
        kernel = _kernel_of(s)
        if kernel is not None:
            _check_belongs(s, kernel, sections, where)


MERCURY = ".nv.merc."


def _spans(data: bytes, sections: tuple[Section, ...]) -> list[tuple[int, int, str]]:
    """(start, end, what) of every range of the file something claims: the headers, the
    header tables and each section holding bytes."""
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    (phoff,) = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    spans = [
        (0, ELF64_HEADER_BYTES, "the ELF header"),
        (shoff, shoff + SHDR_BYTES * len(sections), "the section headers"),
    ]
    if phnum:
        spans.append((phoff, phoff + phentsize * phnum, "the program headers"))
    held = [s for s in sections[1:] if s.occupies_file]
    ranges = {(s.offset, s.size) for s in held if not s.name.startswith(MERCURY)}
    # nvcc 13 writes some of an sm_100+ kernel's Capsule Mercury tables over the very bytes of the
    # section they copy (`.nv.merc.nv.constant.pic` is `.nv.constant4`): such a twin claims nothing new
    spans += [
        (s.offset, s.offset + s.size, s.label)
        for s in held
        if not (s.name.startswith(MERCURY) and (s.offset, s.size) in ranges)
    ]
    return sorted(spans)


def _check_apart(data: bytes, sections: tuple[Section, ...], where: str) -> None:
    """No two ranges overlap: a `.text` pointed into another kernel's code would be judged
    (and patched) as this kernel's."""
    spans = _spans(data, sections)
    for (start, end, first), (later, _, second) in itertools.pairwise(spans):
        if later < end:
            raise InputError(
                f"{where}: corrupt section table: {second} (from byte {later}) overlaps {first} "
                f"(bytes {start} to {end})"
            )


def _check_unique_names(sections: tuple[Section, ...], where: str) -> None:
    seen: dict[str, int] = {}
    for s in sections[1:]:
        if s.name and s.name in seen:
            raise InputError(
                f"{where}: corrupt section table: sections {seen[s.name]} and {s.index} are both named {s.name}"
            )
        seen[s.name] = s.index


def _check_links(s: Section, sections: tuple[Section, ...], where: str) -> None:
    count = len(sections)
    if s.link >= count:
        raise InputError(f"{where}: corrupt {s.label}: sh_link {s.link} names no section (the file has {count})")
    if s.flags & SHF_INFO_LINK and s.info >= count:
        raise InputError(f"{where}: corrupt {s.label}: sh_info {s.info} names no section (the file has {count})")
    wanted = _link_type(s)
    if wanted is not None and sections[s.link].type != wanted:
        kind = "symbol table" if wanted == SHT_SYMTAB else "string table"
        raise InputError(f"{where}: corrupt {s.label}: sh_link {s.link} names {sections[s.link].label}, not the {kind}")


def _link_type(s: Section) -> int | None:
    """The type of section s's sh_link must name, where the ELF (or CUDA's use of it) fixes one."""
    if s.type == SHT_SYMTAB:
        return SHT_STRTAB
    if s.type in (SHT_REL, SHT_RELA, SHT_CUDA_INFO, SHT_CUDA_CALLGRAPH) or s.name.startswith(".text."):
        return SHT_SYMTAB
    return None


def _check_symtab(s: Section, sections: tuple[Section, ...], where: str) -> None:
    if s.entsize not in (0, SYM_BYTES) or s.size % SYM_BYTES:
        raise InputError(
            f"{where}: corrupt .symtab: {s.size} bytes of {s.entsize}-byte entries; ELF64 symbols are 24 bytes"
        )
    if s.info > s.size // SYM_BYTES:
        raise InputError(
            f"{where}: corrupt .symtab: sh_info says its first global symbol is {s.info} of {s.size // SYM_BYTES}"
        )


def _check_text_header(s: Section, sections: tuple[Section, ...], where: str) -> None:
    """A kernel's code: program bits, executable, whole instructions, and (sh_info's low 24
    bits) a symbol index inside the symbol table it links to."""
    if s.type != SHT_PROGBITS or not s.flags & SHF_EXECINSTR:
        raise InputError(
            f"{where}: corrupt {s.name}: type {s.type:#x}, flags {s.flags:#x}; a kernel's code is "
            "executable program bits"
        )
    if s.size % INSTRUCTION_BYTES:
        raise InputError(f"{where}: {s.name} size {s.size} is not a multiple of 16")
    symbols = sections[s.link].size // SYM_BYTES
    if s.info & 0xFFFFFF >= symbols:
        raise InputError(
            f"{where}: corrupt {s.name}: sh_info names symbol {s.info & 0xFFFFFF}; .symtab holds {symbols}"
        )


def _kernel_of(s: Section) -> str | None:
    """The kernel a section belongs to by its name (`.nv.info.k`, `.rela.text.k`...), or None."""
    if s.name.startswith(SHARED_RESERVED):
        return None
    prefix = next((p for p in KERNEL_PREFIXES if s.name.startswith(p)), None)
    return s.name[len(prefix) :] if prefix else None


def _check_belongs(s: Section, kernel: str, sections: tuple[Section, ...], where: str) -> None:
    text = next((t for t in sections if t.name == f".text.{kernel}"), None)
    if text is None:
        raise InputError(f"{where}: corrupt section table: {s.name} belongs to a kernel {kernel} that has no .text")
    if s.info != text.index:
        raise InputError(
            f"{where}: corrupt {s.name}: sh_info {s.info} names section {s.info}, not .text.{kernel} ({text.index})"
        )


def check_symbols(sections: tuple[Section, ...], symbols: tuple[Symbol, ...], where: str) -> None:
    """Each symbol's section exists; each function symbol lies inside its section; each
    `.text.<k>` is named by its own function symbol `<k>`, defined in it; each kernel entry
    symbol has its own `.text` (exactly one: section names are unique)."""
    for sym in symbols[1:]:
        if len(sections) <= sym.shndx < SHN_LORESERVE:
            raise InputError(
                f"{where}: corrupt .symtab: symbol {sym.index} ({sym.name}) is in section {sym.shndx} "
                f"of {len(sections)}"
            )
        home = defined_in(sections, sym.shndx)
        if sym.kind == STT_FUNC and home is not None:
            _check_function(sym, home, where)
    for s in sections:
        if s.name.startswith(".text."):
            _check_text_symbol(s, symbols[s.info & 0xFFFFFF], where)


def defined_in(sections: Iterable[Section], shndx: int) -> Section | None:
    """The section a symbol is defined in; None for undefined, absolute and common symbols."""
    sections = tuple(sections)
    return sections[shndx] if 0 < shndx < min(len(sections), SHN_LORESERVE) else None


def _check_function(sym: Symbol, home: Section, where: str) -> None:
    if sym.value + sym.size > home.size:
        raise InputError(
            f"{where}: corrupt .symtab: function symbol {sym.index} ends at byte {sym.value + sym.size} "
            f"of {home.label}, which holds {home.size}"
        )
    if not home.flags & SHF_EXECINSTR:
        raise InputError(
            f"{where}: corrupt .symtab: function symbol {sym.index} ({sym.name}) is defined in {home.label}, "
            "which holds no code"
        )
    if sym.is_entry and home.name != f".text.{sym.name}":
        raise InputError(
            f"{where}: corrupt .symtab: kernel {sym.name} is defined in {home.label}, not in .text.{sym.name}"
        )


def _check_text_symbol(text: Section, sym: Symbol, where: str) -> None:
    kernel = text.name[len(".text.") :]
    if sym.kind != STT_FUNC or sym.name != kernel or sym.shndx != text.index:
        raise InputError(
            f"{where}: corrupt {text.name}: sh_info names symbol {sym.index} ({sym.name or 'unnamed'}, "
            f"in section {sym.shndx}), not the function {kernel} defined in section {text.index}"
        )
