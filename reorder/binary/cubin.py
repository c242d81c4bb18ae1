"""Read a cubin (a CUDA ELF) into frozen values: sections, kernels, attributes, relocations.

pyelftools reads; it cannot write (its authors say so), so writing is done elsewhere as
a patched copy of these bytes (`reorder.sass.writer`). Everything that could make a
malformed file crash the reader is turned into `InputError` at `read_cubin`, the one
boundary where untrusted bytes come in.
"""

from __future__ import annotations

import io
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

from reorder.base.errors import InputError, ReorderError
from reorder.base.files import read_input
from reorder.binary.arches import SUPPORTED_ARCHS
from reorder.binary.cubincheck import check_kernel_limits, check_relocations
from reorder.binary.elf import SHT_NOBITS, Section, Symbol, read_sections, read_symbols
from reorder.binary.elfcheck import check_section_table, check_sections, check_symbols
from reorder.binary.names import resolve
from reorder.binary.nvinfo import (
    ATTR_KPARAM_INFO,
    ATTR_REGCOUNT,
    KernelParam,
    NvAttr,
    decode_kparam,
    parse_nv_info,
)
from reorder.binary.nvinfocheck import check_global_records, check_kernel_records

EM_CUDA = 190
SHT_CUDA_INFO = 0x70000000
FATBIN_MAGIC = 0xBA55ED50
# REGCOUNT is always the highest general register used + 1 + 2: true of every kernel of
# the corpus and the suite (107 kernels, ptxas 13.0, sm_80 and sm_90). A kernel that used
# a register at REGCOUNT-2 (REGCOUNT raised to highest + 1 only) raised
# cudaErrorIllegalInstruction on the H200 (benchmarks/results/2026-11-29_sass_moves/README.md).
RESERVED_REGISTERS = 2
# R1 holds the stack pointer: every kernel opens with `LDC R1, c[0x0][0x28]`, and ptxas writes R1
# only for stack arithmetic, never for a value.
STACK_POINTER = 1


@dataclass(frozen=True, slots=True)
class Relocation:
    """One relocation against a kernel's .text, with where its record sits in the file."""

    offset: int  # r_offset: byte offset inside .text
    type: int
    symbol: int
    addend: int | None
    record_offset: int  # file offset of this Elf64_Rel(a) record
    section: int  # index of the .rel(a) section


@dataclass(frozen=True, slots=True)
class Kernel:
    """One function of the cubin (an entry kernel or a device function)."""

    name: str
    symbol_index: int
    is_entry: bool
    text_section: int
    text_offset: int  # file offset of .text
    text: bytes
    regcount: int  # from EIATTR_REGCOUNT (or sh_info on sm_80-style cubins)
    regcount_in_sh_info: int  # top byte of the .text sh_info (0 on sm_90 with CUDA 13)
    shared_bytes: int
    params: tuple[KernelParam, ...]
    attrs: tuple[NvAttr, ...]  # records of .nv.info.<name>
    info_section: int | None
    relocations: tuple[Relocation, ...]

    @property
    def instruction_count(self) -> int:
        return len(self.text) // 16

    def attr(self, attr_id: int) -> tuple[NvAttr, ...]:
        return tuple(a for a in self.attrs if a.attr == attr_id)


@dataclass(frozen=True)
class Cubin:
    """A whole cubin: its bytes, arch, sections, global attributes and functions."""

    data: bytes
    arch: int
    abi_version: int
    e_flags: int
    sections: tuple[Section, ...]
    global_attrs: tuple[NvAttr, ...]
    global_info_section: int | None
    kernels: tuple[Kernel, ...] = field(default_factory=tuple)
    path: str = ""

    @property
    def arch_name(self) -> str:
        return f"sm_{self.arch}"

    def kernel(self, name: str | None = None) -> Kernel:
        """The named kernel, or the only / first entry kernel when name is None."""
        if name is None:
            entries = [k for k in self.kernels if k.is_entry] or list(self.kernels)
            if not entries:
                raise InputError(f"{self.path or 'cubin'}: no kernels in this cubin")
            return entries[0]
        for k in self.kernels:
            if k.name == name:
                return k
        # a C++ signature or a unique part of one (reorder.binary.names); entry kernels first
        pool = [k.name for k in self.kernels if k.is_entry] or [k.name for k in self.kernels]
        symbol = resolve(name, pool, self.path or "cubin")
        return next(k for k in self.kernels if k.name == symbol)

    def section(self, name: str) -> Section | None:
        return next((s for s in self.sections if s.name == name), None)


def read_cubin(path: str | Path) -> Cubin:
    """Read a cubin file; every problem with it becomes one InputError line."""
    return parse_cubin(read_input(path), str(path))


def parse_cubin(data: bytes, where: str = "cubin") -> Cubin:
    """Parse cubin bytes. Malformed input raises InputError, never anything else."""
    _check_magic(data, where)
    try:
        from elftools.elf.elffile import ELFFile
    except ImportError as exc:  # not the input's fault: say what is broken, not "malformed ELF"
        raise ReorderError(
            f"reorder's installation is broken: cannot import pyelftools ({exc}); reinstall it (pip install -e .)"
        ) from None
    try:
        return _parse(ELFFile, data, where)
    except ReorderError:
        raise
    except Exception as exc:  # noqa: BLE001 - untrusted bytes: whatever pyelftools trips over is an input problem
        raise InputError(f"{where}: malformed ELF ({type(exc).__name__}: {exc})") from None


def _check_magic(data: bytes, where: str) -> None:
    if not data:
        raise InputError(f"{where}: empty file")
    if len(data) >= 4 and struct.unpack_from("<I", data)[0] == FATBIN_MAGIC:
        raise InputError(f"{where}: a fatbinary, not a cubin (extract one with `cuobjdump -xelf all`)")
    if data[:4] != b"\x7fELF":
        raise InputError(f"{where}: {_what_else(data, where)}")
    if len(data) < 64 or data[4] != 2:
        raise InputError(f"{where}: truncated or 32-bit ELF header; cubins are 64-bit ELF")


PTX_DIRECTIVES = (".version", ".target", ".address_size", ".entry", ".func", ".visible", ".reg")


def _what_else(data: bytes, where: str) -> str:
    """What a file that is not an ELF seems to be, and what reorder needs instead: PTX without
    its `.version`/`.target` head was called "not an ELF file", as was a CUDA source."""
    try:
        text = data[:65536].decode("utf-8")
    except UnicodeDecodeError:
        return "not an ELF file (a cubin is one: nvcc -cubin, or cuobjdump -xelf from a binary)"
    if not text.strip():
        return "holds only whitespace: not a cubin, PTX or CUDA source"
    if where.endswith((".cu", ".cuh")) or "__global__" in text:
        return (
            "CUDA source: only `reorder optimize` compiles it; "
            "for this command give its cubin (nvcc -cubin) or PTX (nvcc -ptx)"
        )
    missing = [d for d in (".version", ".target") if not re.search(rf"^\s*\{d}\s", text, re.MULTILINE)]
    if missing and any(d in text for d in PTX_DIRECTIVES):
        lines = f"{' and '.join(missing)} line{'s' if len(missing) > 1 else ''}"
        return f"PTX without its {lines}: PTX opens with .version and .target (as nvcc -ptx and Triton write it)"
    return "a text file, not a cubin (nor PTX: no .version and .target lines)"


def arch_from_flags(e_flags: int, abi_version: int) -> int:
    """SM number from e_flags: bits 15:8 from ELF ABI version 8 (CUDA 13) on, bits 7:0 before."""
    return (e_flags >> 8) & 0xFF if abi_version >= 8 else e_flags & 0xFF


def _parse(ELFFile, data: bytes, where: str) -> Cubin:  # ELFFile: the class, imported by the caller
    check_section_table(data, where)
    sections = read_sections(data, where)
    check_sections(data, sections, where)
    symbols = read_symbols(data, sections, where)
    check_symbols(sections, symbols, where)
    check_relocations(data, sections, symbols, where)
    elf = ELFFile(io.BytesIO(data))  # the tables it follows are checked: now it reads the header
    header = elf.header
    if header["e_machine"] not in ("EM_CUDA", EM_CUDA):
        raise InputError(f"{where}: a host ELF ({header['e_machine']}), not a CUDA cubin")
    if header["e_type"] != "ET_EXEC":
        raise InputError(f"{where}: {header['e_type']} cubin; only linked (ET_EXEC) cubins are supported")
    abi = header["e_ident"]["EI_ABIVERSION"]
    arch = arch_from_flags(header["e_flags"], abi)
    if arch not in SUPPORTED_ARCHS:
        supported = ", ".join(f"sm_{a}" for a in sorted(SUPPORTED_ARCHS))
        raise InputError(f"{where}: unsupported arch sm_{arch} (supported: {supported})")
    global_info = next((s for s in sections if s.name == ".nv.info"), None)
    global_attrs = parse_nv_info(_bytes(data, global_info), f"{where} .nv.info") if global_info else ()
    check_global_records(global_attrs, symbols, f"{where} .nv.info")
    kernels = tuple(
        _kernel(data, s, sections, symbols, global_attrs, where) for s in sections if s.name.startswith(".text.")
    )
    if not kernels:
        raise InputError(
            f"{where}: no kernel can be read: none of its {len(sections)} sections is a .text.<kernel> "
            "section (corrupt section table or section names?)"
        )
    for kernel in kernels:
        check_kernel_limits(kernel, arch, where)
    return Cubin(
        data=data,
        arch=arch,
        abi_version=abi,
        e_flags=header["e_flags"],
        sections=sections,
        global_attrs=global_attrs,
        global_info_section=global_info.index if global_info else None,
        kernels=kernels,
        path=where,
    )


def _bytes(data: bytes, section: Section | None) -> bytes:
    if section is None or section.type == SHT_NOBITS:
        return b""
    return data[section.offset : section.offset + section.size]


def _kernel(data, text: Section, sections, symbols: tuple[Symbol, ...], global_attrs, where) -> Kernel:
    name = text.name[len(".text.") :]
    sym_index = text.info & 0xFFFFFF
    by_name = {s.name: s for s in sections}
    info = by_name.get(f".nv.info.{name}")
    attrs: tuple[NvAttr, ...] = ()
    if info:
        attrs = parse_nv_info(_bytes(data, info), f"{where} .nv.info.{name}")
        check_kernel_records(attrs, text.size, f"{where} .nv.info.{name}")
    params = tuple(sorted((decode_kparam(a) for a in attrs if a.attr == ATTR_KPARAM_INFO), key=lambda p: p.ordinal))
    recorded = next((a.words()[1] for a in global_attrs if a.attr == ATTR_REGCOUNT and a.words()[0] == sym_index), None)
    in_sh_info = text.info >> 24
    if recorded is not None and in_sh_info and recorded != in_sh_info:  # the two agree in all 644 kernels
        raise InputError(
            f"{where}: {name}: EIATTR_REGCOUNT says {recorded} registers, .text.{name}'s sh_info {in_sh_info}"
        )
    shared = by_name.get(f".nv.shared.{name}")
    return Kernel(
        name=name,
        symbol_index=sym_index,
        is_entry=symbols[sym_index].is_entry,
        text_section=text.index,
        text_offset=text.offset,
        text=_bytes(data, text),
        regcount=in_sh_info if recorded is None else recorded,  # a REGCOUNT of 0 is refused, not replaced
        regcount_in_sh_info=in_sh_info,
        shared_bytes=shared.size if shared else 0,
        params=params,
        attrs=attrs,
        info_section=info.index if info else None,
        relocations=_relocations(data, text, sections),
    )


def _relocations(data: bytes, text: Section, sections) -> tuple[Relocation, ...]:
    out = []
    for s in sections:
        if s.type not in (4, 9) or s.info != text.index:  # SHT_RELA = 4, SHT_REL = 9
            continue
        size = 24 if s.type == 4 else 16
        for pos in range(s.offset, s.offset + s.size - size + 1, size):
            r_offset, r_info = struct.unpack_from("<QQ", data, pos)
            addend = struct.unpack_from("<q", data, pos + 16)[0] if s.type == 4 else None
            out.append(Relocation(r_offset, r_info & 0xFFFFFFFF, r_info >> 32, addend, pos, s.index))
    return tuple(out)
