"""Structure-aware mutations for benchmarks.fuzz: edits that break one rule of a cubin's tables or
of a launch spec on purpose, each known corrupt by construction, so the fuzzer can require
more than "no traceback": every command that reads such an input must refuse it (exit 2, one
line). A corrupt file judged as if valid (exit 0, or a verdict of 1) is a failure.

One family per rule the reader checks (reorder.binary.elfcheck, nvinfocheck, cubincheck; the
spec's dtypes and size, timing.params and timing.spec):

- `elf`: section headers and symbols: a `.text` pointed into another section or past the end,
  its `sh_info` naming another symbol, a header copied over another, two sections of one name,
  `sh_link`/`sh_info` out of range or naming a section of the wrong type, a kernel's section
  naming another kernel's `.text`, a kernel symbol moved, resized, retyped or renamed, the
  symbol table's size, entry size and first-global index, a `.text` made data.
- `nvinfo`: `.nv.info` records: a length that swallows the records after it (the section still
  parses to its end) or comes up short, an unknown format, KPARAM_INFO ordinals twice or past
  the count, offsets past the parameter space or onto another parameter, REGCOUNT 0 or past
  255 or for a symbol that is not a function, an exit offset off an instruction or past the code.
- `dtype`: a buffer, scalar or struct field of a dtype CuPy cannot draw (float128, complex,
  big-endian, datetime...), a struct field of an unknown type, a spec over the size limit.

Each function is pure: (base, random generator) -> (kind, bytes), the bytes always corrupt.
"""

from __future__ import annotations

import random
import re
import struct
from collections.abc import Callable

from benchmarks.fuzz_inputs import Base
from reorder.binary.elf import SHF_EXECINSTR, SHF_INFO_LINK, SHT_NOBITS, SHT_SYMTAB, Section
from reorder.binary.nvinfo import (
    ATTR_EXIT_INSTR_OFFSETS,
    ATTR_KPARAM_INFO,
    ATTR_REGCOUNT,
    FMT_SVAL,
    OFFSET_LIST_ATTRS,
    NvAttr,
    parse_nv_info,
)
from reorder.binary.nvinfocheck import PAYLOAD_BYTES

SH_NAME, SH_TYPE, SH_FLAGS, SH_OFFSET, SH_SIZE, SH_LINK, SH_INFO, SH_ENTSIZE = 0, 4, 8, 24, 32, 40, 44, 56
ST_NAME, ST_INFO, ST_SHNDX, ST_VALUE, ST_SIZE = 0, 4, 6, 8, 16
LINKED = ("symtab", "rel", "nv.info", "text")  # sections whose sh_link must name a given type


def _texts(base: Base) -> list[Section]:
    return [s for s in base.cubin.sections if s.name.startswith(".text.")]


def _occupying(base: Base) -> list[Section]:
    return [s for s in base.cubin.sections[1:] if s.type != SHT_NOBITS and s.size > 0]


def _put(data: bytearray, pos: int, fmt: str, value: int) -> None:
    struct.pack_into("<" + fmt, data, pos, value)


# ---------------------------------------------------------------- elf: section headers and symbols


def text_into_other(base: Base, rng: random.Random) -> tuple[str, bytes]:
    """A .text's bytes said to start inside another section (another kernel's code, a table),
    over the ELF header, or so they run past the end."""
    data, text = bytearray(base.data), rng.choice(_texts(base))
    others = [s for s in _occupying(base) if s.index != text.index]
    roll = rng.random()
    if roll < 0.7 and others:
        other = rng.choice(others)
        start = other.offset + 16 * rng.randrange(max(1, min(other.size, text.size) // 16))
        kind = "text_into_code" if other.name.startswith(".text.") else "text_into_section"
        _put(data, text.header_offset + SH_OFFSET, "Q", min(start, other.offset + other.size - 1))
    elif roll < 0.85:
        kind = "text_over_header"
        _put(data, text.header_offset + SH_OFFSET, "Q", rng.choice((0, 16, 32, 48)))
    else:
        kind = "text_past_end"
        _put(data, text.header_offset + SH_OFFSET, "Q", len(base.data) - text.size // 2 + rng.randrange(1, 64))
    return kind, bytes(data)


def text_symbol(base: Base, rng: random.Random) -> tuple[str, bytes]:
    """A .text's sh_info (its symbol, low 24 bits) naming another symbol or none."""
    data, text = bytearray(base.data), rng.choice(_texts(base))
    count = base.cubin.section(".symtab").size // 24
    own = text.info & 0xFFFFFF
    pick = rng.choice([i for i in range(count) if i != own] + [count + rng.randrange(1, 1 << 20)] * 3)
    _put(data, text.header_offset + SH_INFO, "I", (text.info & 0xFF000000) | pick)
    return ("text_symbol_out_of_range" if pick >= count else "text_symbol_other"), bytes(data)


def header_twice(base: Base, rng: random.Random) -> tuple[str, bytes]:
    """One section header copied over another (two headers for one kernel's .text, often), or
    one section's name pointed at another's: two sections of one name."""
    data = bytearray(base.data)
    sections = base.cubin.sections
    texts = _texts(base)
    source = rng.choice(texts) if rng.random() < 0.6 else rng.choice(sections[1:])
    target = rng.choice([s for s in sections[1:] if s.index != source.index and s.index != _shstrndx(base)])
    if rng.random() < 0.5:
        data[target.header_offset : target.header_offset + 64] = data[source.header_offset : source.header_offset + 64]
        return "header_copied", bytes(data)
    name = struct.unpack_from("<I", data, source.header_offset + SH_NAME)[0]
    _put(data, target.header_offset + SH_NAME, "I", name)
    return "name_twice", bytes(data)


def _shstrndx(base: Base) -> int:
    return struct.unpack_from("<H", base.data, 0x3E)[0]


def _wanted_link(s: Section) -> int | None:
    if s.type == SHT_SYMTAB:
        return 3
    if s.type in (4, 9, 0x70000000, 0x70000001) or s.name.startswith(".text."):
        return SHT_SYMTAB
    return None


def links(base: Base, rng: random.Random) -> tuple[str, bytes]:
    """sh_link past the table or naming a section of the wrong type; sh_info of a section that
    links by it past the table, or a kernel's section naming another kernel's .text."""
    data, sections = bytearray(base.data), base.cubin.sections
    roll = rng.random()
    if roll < 0.35:
        s = rng.choice(sections[1:])
        _put(data, s.header_offset + SH_LINK, "I", rng.choice((0xFFFF, 0xFFFFFFFF, len(sections), len(sections) + 7)))
        return "link_out_of_range", bytes(data)
    if roll < 0.65:
        s = rng.choice([s for s in sections if _wanted_link(s) is not None])
        wrong = [t.index for t in sections if t.type != _wanted_link(s)]
        _put(data, s.header_offset + SH_LINK, "I", rng.choice(wrong))
        return "link_wrong_type", bytes(data)
    belonging = [s for s in sections if _belongs(s)]
    if roll < 0.85 or not belonging:
        s = rng.choice([s for s in sections if s.flags & SHF_INFO_LINK])
        _put(data, s.header_offset + SH_INFO, "I", rng.choice((0xFFFF, len(sections), len(sections) + 100)))
        return "info_out_of_range", bytes(data)
    s = rng.choice(belonging)
    own = base.cubin.section(".text." + _belongs(s)).index
    _put(data, s.header_offset + SH_INFO, "I", rng.choice([t.index for t in sections if t.index != own]))
    return "info_other_kernel", bytes(data)


def _belongs(s: Section) -> str:
    """The kernel a section belongs to by name ('' for none), as elfcheck reads it."""
    from reorder.binary.elfcheck import _kernel_of

    return _kernel_of(s) or ""


def symbols(base: Base, rng: random.Random) -> tuple[str, bytes]:
    """A kernel's symbol moved to another section, past its .text, made data, renamed or
    pointed past its string table; or the symbol table's own header made wrong."""
    data, cubin = bytearray(base.data), base.cubin
    symtab = cubin.section(".symtab")
    kernel = rng.choice(cubin.kernels)
    at = symtab.offset + 24 * kernel.symbol_index
    text = cubin.sections[kernel.text_section]
    roll = rng.random()
    if roll < 0.2:
        _put(data, at + ST_SHNDX, "H", rng.choice([s.index for s in cubin.sections if s.index != text.index]))
        return "symbol_section", bytes(data)
    if roll < 0.3:
        _put(data, at + ST_SHNDX, "H", rng.choice((len(cubin.sections), 0x7000, 0xFEFF)))
        return "symbol_no_section", bytes(data)
    if roll < 0.5:
        field, value = rng.choice(
            ((ST_VALUE, text.size), (ST_SIZE, text.size + 16), (ST_VALUE, 1 << 40), (ST_SIZE, (1 << 64) - 1))
        )
        _put(data, at + field, "Q", value)
        return "symbol_past_text", bytes(data)
    if roll < 0.6:
        _put(data, at + ST_INFO, "B", (data[at + ST_INFO] & 0xF0) | rng.choice((0, 1, 3, 4)))
        return "symbol_not_function", bytes(data)
    if roll < 0.75:
        strtab = cubin.sections[symtab.link]
        _put(data, at + ST_NAME, "I", strtab.size + rng.randrange(0, 1 << 16))
        return "symbol_name_past_table", bytes(data)
    if roll < 0.85:
        _put(data, symtab.header_offset + SH_SIZE, "Q", symtab.size - rng.randrange(1, 24))
        return "symtab_size", bytes(data)
    if roll < 0.92:
        _put(data, symtab.header_offset + SH_ENTSIZE, "Q", rng.choice((1, 16, 23, 25, 48)))
        return "symtab_entsize", bytes(data)
    _put(data, symtab.header_offset + SH_INFO, "I", symtab.size // 24 + rng.randrange(1, 1000))
    return "symtab_first_global", bytes(data)


def text_kind(base: Base, rng: random.Random) -> tuple[str, bytes]:
    """A kernel's .text made data (no SHF_EXECINSTR), of another type, or a size of part of an
    instruction."""
    data, text = bytearray(base.data), rng.choice(_texts(base))
    roll = rng.random()
    if roll < 0.4:
        _put(data, text.header_offset + SH_FLAGS, "Q", text.flags & ~SHF_EXECINSTR)
        return "text_not_code", bytes(data)
    if roll < 0.7:
        _put(data, text.header_offset + SH_TYPE, "I", rng.choice((3, 7, 0x70000000)))
        return "text_type", bytes(data)
    _put(data, text.header_offset + SH_SIZE, "Q", text.size - rng.randrange(1, 16))
    return "text_partial_instruction", bytes(data)


ELF_MUTATIONS: dict[str, Callable[[Base, random.Random], tuple[str, bytes]]] = {
    "text_into_other": text_into_other,
    "text_symbol": text_symbol,
    "header_twice": header_twice,
    "links": links,
    "symbols": symbols,
    "text_kind": text_kind,
}


# ---------------------------------------------------------------- nvinfo: .nv.info records


def _records(base: Base, kernel_only: bool = False) -> list[tuple[Section, NvAttr]]:
    out = []
    for s in base.cubin.sections:
        if s.name == ".nv.info" and kernel_only:
            continue
        if s.name == ".nv.info" or s.name.startswith(".nv.info."):
            out += [(s, r) for r in parse_nv_info(base.data[s.offset : s.offset + s.size], s.name)]
    return out


def _shaped(record: NvAttr) -> bool:
    """A record whose shape the reader checks (fixed size or instruction-offset list)."""
    return record.fmt == FMT_SVAL and (record.attr in PAYLOAD_BYTES or record.attr in OFFSET_LIST_ATTRS)


def record_length(base: Base, rng: random.Random) -> tuple[str, bytes]:
    """An SVAL length that swallows the next records whole (the section still parses to its
    end) or comes up 4 bytes short; or a record's format byte made unknown."""
    data = bytearray(base.data)
    records = _records(base)
    if rng.random() < 0.15:
        s, r = rng.choice(records)
        data[s.offset + r.offset] = rng.choice((0, 5, 6, 7, 0x10, 0x80, 0xFF))
        return "record_format", bytes(data)
    shaped = [(s, r, i) for s, r in records for i in [0] if _shaped(r)]
    s, r, _ = rng.choice(shaped)
    after = [x for t, x in records if t.index == s.index and x.offset > r.offset]
    if after and rng.random() < 0.75:
        swallowed = sum(len(x.encode()) for x in after[: rng.randrange(1, len(after) + 1)])
        _put(data, s.offset + r.offset + 2, "H", len(r.payload) + swallowed)
        return "record_swallows_next", bytes(data)
    _put(data, s.offset + r.offset + 2, "H", max(0, len(r.payload) - 4))
    return "record_short", bytes(data)


def kparams(base: Base, rng: random.Random) -> tuple[str, bytes]:
    """KPARAM_INFO: an ordinal twice or past the count, an offset past the parameter space or
    onto another parameter, a size past the space."""
    data = bytearray(base.data)
    kernels = [k for k in base.cubin.kernels if k.params]
    if not kernels:
        return regcounts(base, rng)
    kernel = rng.choice(kernels)
    section = base.cubin.sections[kernel.info_section]
    records = [r for r in kernel.attrs if r.attr == ATTR_KPARAM_INFO]
    record = rng.choice(records)
    _, ordinal, _offset, packed = struct.unpack_from("<IHHI", record.payload)
    at = section.offset + record.offset + 4
    roll = rng.random()
    others = [p for p in kernel.params if p.ordinal != ordinal and p.size]
    if roll < 0.2 and others:
        _put(data, at + 4, "H", rng.choice(others).ordinal)
        return "kparam_ordinal_twice", bytes(data)
    if roll < 0.35:
        _put(data, at + 4, "H", len(kernel.params) + rng.randrange(0, 0xFF00))
        return "kparam_ordinal_past_count", bytes(data)
    space = _param_space(kernel, base.cubin.arch)
    size = packed >> 18
    if roll < 0.6:
        _put(data, at + 6, "H", rng.choice((0xFFFF, space, space - size + 4 if size > 4 else space + 1)) & 0xFFFF)
        return "kparam_offset_past_space", bytes(data)
    if roll < 0.8 and others and size:
        other = rng.choice(others)
        _put(data, at + 6, "H", other.offset + rng.randrange(0, other.size))
        return "kparam_onto_another", bytes(data)
    _put(data, at + 8, "I", (packed & 0x3FFFF) | ((space + 1 + rng.randrange(0, 1 << 10)) << 18))
    return "kparam_size_past_space", bytes(data)


def _param_space(kernel, arch: int) -> int:
    from reorder.binary.arches import ARCHS
    from reorder.binary.cubincheck import param_space

    return param_space(kernel.attrs, ARCHS[arch].param_bytes)


def regcounts(base: Base, rng: random.Random) -> tuple[str, bytes]:
    """REGCOUNT 0 or past 255, for a symbol that is none or not a function."""
    data = bytearray(base.data)
    found = [(s, r) for s, r in _records(base) if r.attr == ATTR_REGCOUNT and r.fmt == FMT_SVAL]
    if not found:
        return offsets(base, rng)
    s, r = rng.choice(found)
    at = s.offset + r.offset + 4
    roll = rng.random()
    if roll < 0.5:
        _put(data, at + 4, "I", rng.choice((0, 256, 257, 1000, 0xFFFF, 0xFFFFFFFF)))
        return "regcount_value", bytes(data)
    count = base.cubin.section(".symtab").size // 24
    if roll < 0.75:
        _put(data, at, "I", count + rng.randrange(0, 1 << 20))
        return "regcount_no_symbol", bytes(data)
    not_functions = [i for i in range(count) if _symbol_kind(base, i) != 2]
    _put(data, at, "I", rng.choice(not_functions))
    return "regcount_not_function", bytes(data)


def _symbol_kind(base: Base, index: int) -> int:
    symtab = base.cubin.section(".symtab")
    return base.data[symtab.offset + 24 * index + ST_INFO] & 0xF


def offsets(base: Base, rng: random.Random) -> tuple[str, bytes]:
    """An instruction offset of an offset list (EXIT_INSTR_OFFSETS...) off an instruction or
    past the kernel's code."""
    data = bytearray(base.data)
    found = [
        (k, r)
        for k in base.cubin.kernels
        for r in k.attrs
        if r.attr in OFFSET_LIST_ATTRS and r.fmt == FMT_SVAL and r.payload
    ]
    if not found:
        return record_length(base, rng)
    kernel, record = rng.choice(found)
    section = base.cubin.sections[kernel.info_section]
    word = rng.randrange(len(record.payload) // 4)
    old = record.words()[word]
    new = rng.choice(
        (old + rng.choice((1, 2, 4, 8, 12)), len(kernel.text), len(kernel.text) + 16 * rng.randrange(1, 99))
    )
    _put(data, section.offset + record.offset + 4 + 4 * word, "I", new & 0xFFFFFFFF)
    return ("exit_offset" if record.attr == ATTR_EXIT_INSTR_OFFSETS else "offset_list"), bytes(data)


NVINFO_MUTATIONS: dict[str, Callable[[Base, random.Random], tuple[str, bytes]]] = {
    "record_length": record_length,
    "kparams": kparams,
    "regcounts": regcounts,
    "offsets": offsets,
}


# ---------------------------------------------------------------- dtype: what a spec may ask CuPy to draw

UNDRAWABLE = (
    "float128",
    "longdouble",
    "complex64",
    "complex128",
    "clongdouble",
    ">f4",
    ">i8",
    ">u2",
    "datetime64",
    "timedelta64[s]",
    "object",
    "U4",
    "S8",
    "V8",
    "bfloat16",
    "float8",
    "f4,f4",
    "int128",
    "",
    "Float32",
)
FIELD_TYPES = UNDRAWABLE + ("nope", "pointer", "struct", "float32 ", "ptr*", "Tensor", "SumArgs2")
SPEC_LIMIT_BYTES = 2**20  # timing.spec.MAX_SPEC_BYTES


def spec_dtype(base: Base, rng: random.Random) -> tuple[str, bytes]:
    """A buffer's, scalar's or [[buffer]]'s dtype, or a struct field's type, made one CuPy
    cannot draw or nobody declared; or the spec grown past the size limit."""
    text = base.data.decode()
    roll = rng.random()
    dtypes = list(re.finditer(r'^(\s*dtype\s*=\s*)"[^"]*"', text, re.MULTILINE))
    fields = list(re.finditer(r'(\{\s*name\s*=\s*"[^"]*"\s*,\s*type\s*=\s*)"(?!ptr")[^"]*"', text))
    fields += list(re.finditer(r'(\{\s*name\s*=\s*"[^"]*"\s*,\s*type\s*=\s*)"ptr"', text))
    if roll < 0.1:
        pad = "# " + "x" * 98 + "\n"
        extra = (SPEC_LIMIT_BYTES - len(base.data)) // len(pad) + 1 + rng.randrange(0, 2000)
        return "spec_over_limit", (text + pad * extra).encode()
    if (roll < 0.55 and dtypes) or not fields:
        m = rng.choice(dtypes)
        return "dtype_undrawable", (
            text[: m.start()] + f'{m.group(1)}"{rng.choice(UNDRAWABLE)}"' + text[m.end() :]
        ).encode()
    m = rng.choice(fields)
    declared = set(re.findall(r'^\[\[type\]\]\s*\nname\s*=\s*"([^"]*)"', text, re.MULTILINE))
    unknown = rng.choice([t for t in FIELD_TYPES if t not in declared])
    return "field_type_unknown", (text[: m.start()] + f'{m.group(1)}"{unknown}"' + text[m.end() :]).encode()
