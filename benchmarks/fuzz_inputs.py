"""Mutated inputs for benchmarks.fuzz: cubins, PTX files and launch specs, each a pure function
of (base input, random generator), so a case is reproduced from its seed alone.

Cubin mutations know the file's layout (taken from the unmutated base): ELF and section
header fields, `.nv.info` records, relocation and symbol records, `.text` words, sizes
inflated to absurd values, truncations, bit flips anywhere. PTX and spec mutations work on
the text: directives, tokens, numbers, nesting, truncation.
"""

from __future__ import annotations

import random
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass

from reorder.binary.cubin import Cubin, parse_cubin

# Values that find edges: zero, one, off-by-one at the boundaries of each field width, huge.
SPECIAL = (0, 1, 2, 3, 7, 8, 15, 16, 63, 64, 255, 256, 0x7FFF, 0x8000, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000,
           0xFFFFFFFF, 0x100000000, 0x7FFFFFFFFFFFFFFF, 0x8000000000000000, 0xFFFFFFFFFFFFFFFF)
# (offset, struct format) of the ELF64 header fields and of Elf64_Shdr / Elf64_Sym / Elf64_Rela fields
ELF_FIELDS = {"ei_class": (4, "B"), "ei_data": (5, "B"), "ei_abiversion": (8, "B"), "e_type": (16, "H"),
              "e_machine": (18, "H"), "e_entry": (24, "Q"), "e_phoff": (32, "Q"), "e_shoff": (40, "Q"),
              "e_flags": (48, "I"), "e_ehsize": (52, "H"), "e_phentsize": (54, "H"), "e_phnum": (56, "H"),
              "e_shentsize": (58, "H"), "e_shnum": (60, "H"), "e_shstrndx": (62, "H")}
SHDR_FIELDS = {"sh_name": (0, "I"), "sh_type": (4, "I"), "sh_flags": (8, "Q"), "sh_addr": (16, "Q"),
               "sh_offset": (24, "Q"), "sh_size": (32, "Q"), "sh_link": (40, "I"), "sh_info": (44, "I"),
               "sh_addralign": (48, "Q"), "sh_entsize": (56, "Q")}
SYM_FIELDS = {"st_name": (0, "I"), "st_info": (4, "B"), "st_other": (5, "B"), "st_shndx": (6, "H"),
              "st_value": (8, "Q"), "st_size": (16, "Q")}
RELA_FIELDS = {"r_offset": (0, "Q"), "r_type": (8, "I"), "r_sym": (12, "I"), "r_addend": (16, "q")}


@dataclass(frozen=True)
class Base:
    """An unmutated input and what its mutations need to know of it."""

    name: str
    data: bytes
    cubin: Cubin | None = None  # parsed layout, for cubins


def cubin_base(name: str, data: bytes) -> Base:
    return Base(name, data, parse_cubin(data, name))


def _value(rng: random.Random, fmt: str, old: int) -> int:
    """A new value for a field: a special one, a nearby one, or random bits, fitted to `fmt`."""
    bits = struct.calcsize(fmt) * 8
    pick = rng.random()
    if pick < 0.5:
        value = rng.choice(SPECIAL)
    elif pick < 0.75:
        value = old + rng.choice((-17, -16, -8, -1, 1, 8, 16, 17, 4096, 1 << 20))
    else:
        value = rng.getrandbits(bits)
    value &= (1 << bits) - 1
    if fmt.islower() and value >= 1 << (bits - 1):  # signed field
        value -= 1 << bits
    return value


def _patch(data: bytearray, pos: int, fmt: str, rng: random.Random) -> None:
    if pos < 0 or pos + struct.calcsize(fmt) > len(data):
        return
    old = struct.unpack_from("<" + fmt, data, pos)[0]
    struct.pack_into("<" + fmt, data, pos, _value(rng, fmt, old))


# ---------------------------------------------------------------- cubin mutations


def bit_flips(base: Base, rng: random.Random) -> bytes:
    data = bytearray(base.data)
    for _ in range(rng.choice((1, 1, 2, 4, 8, 32))):
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    return bytes(data)


def byte_runs(base: Base, rng: random.Random) -> bytes:
    data = bytearray(base.data)
    start = rng.randrange(len(data))
    length = rng.choice((1, 2, 4, 8, 16, 64, 512))
    fill = rng.choice((0x00, 0xFF, 0x7F, 0x80, None))
    for i in range(start, min(len(data), start + length)):
        data[i] = rng.randrange(256) if fill is None else fill
    return bytes(data)


def truncation(base: Base, rng: random.Random) -> bytes:
    cut = rng.choice((rng.randrange(len(base.data)), rng.randrange(128), len(base.data) - rng.randrange(1, 256)))
    return base.data[: max(0, cut)]


def elf_header(base: Base, rng: random.Random) -> bytes:
    data = bytearray(base.data)
    for _ in range(rng.choice((1, 1, 2))):
        pos, fmt = ELF_FIELDS[rng.choice(sorted(ELF_FIELDS))]
        _patch(data, pos, fmt, rng)
    return bytes(data)


def section_header(base: Base, rng: random.Random) -> bytes:
    data = bytearray(base.data)
    section = rng.choice(base.cubin.sections)
    pos, fmt = SHDR_FIELDS[rng.choice(sorted(SHDR_FIELDS))]
    _patch(data, section.header_offset + pos, fmt, rng)
    return bytes(data)


def inflated_size(base: Base, rng: random.Random) -> bytes:
    """A section (often .nv.shared.*, .text.*, a relocation table) claiming an absurd size."""
    data = bytearray(base.data)
    section = rng.choice(base.cubin.sections)
    size = rng.choice((section.size * 2 + 16, 1 << 20, 1 << 31, 1 << 32, 4 * 2**30, (1 << 63) - 1, (1 << 64) - 1))
    struct.pack_into("<Q", data, section.header_offset + 32, size)
    return bytes(data)


def _info_records(base: Base) -> list[tuple[int, object]]:
    """(file offset of the record, NvAttr) for every .nv.info and .nv.info.<kernel> record."""
    from reorder.binary.nvinfo import parse_nv_info

    out = []
    for s in base.cubin.sections:
        if s.name.startswith(".nv.info"):
            for record in parse_nv_info(base.data[s.offset : s.offset + s.size], s.name):
                out.append((s.offset + record.offset, record))
    return out


def nv_info_record(base: Base, rng: random.Random) -> bytes:
    """A record's format, id, length or one payload word (REGCOUNT, KPARAM_INFO, offset lists...)."""
    data = bytearray(base.data)
    records = _info_records(base)
    if not records:
        return bit_flips(base, rng)
    pos, record = rng.choice(records)
    part = rng.random()
    if part < 0.15:
        _patch(data, pos, "B", rng)  # fmt
    elif part < 0.3:
        _patch(data, pos + 1, "B", rng)  # attribute id
    elif part < 0.5:
        _patch(data, pos + 2, "H", rng)  # SVAL length / short value
    elif len(record.payload) >= 4:
        _patch(data, pos + 4 + 4 * rng.randrange(len(record.payload) // 4), "I", rng)
    else:
        _patch(data, pos + 2, "H", rng)
    return bytes(data)


def _records(base: Base, types: tuple[int, ...], width_of: Callable[[int], int]) -> list[tuple[int, int]]:
    """(file offset, section type) of each fixed-size record in sections of the given types."""
    out = []
    for s in base.cubin.sections:
        if s.type in types:
            width = width_of(s.type)
            out += [(pos, s.type) for pos in range(s.offset, s.offset + s.size - width + 1, width)]
    return out


def relocation(base: Base, rng: random.Random) -> bytes:
    data = bytearray(base.data)
    records = _records(base, (4, 9), lambda t: 24 if t == 4 else 16)
    if not records:
        return section_header(base, rng)
    pos, kind = rng.choice(records)
    fields = RELA_FIELDS if kind == 4 else {k: v for k, v in RELA_FIELDS.items() if k != "r_addend"}
    offset, fmt = fields[rng.choice(sorted(fields))]
    _patch(data, pos + offset, fmt, rng)
    return bytes(data)


def symbol(base: Base, rng: random.Random) -> bytes:
    data = bytearray(base.data)
    records = _records(base, (2,), lambda t: 24)
    if not records:
        return section_header(base, rng)
    pos, _ = rng.choice(records)
    offset, fmt = SYM_FIELDS[rng.choice(sorted(SYM_FIELDS))]
    _patch(data, pos + offset, fmt, rng)
    return bytes(data)


def text_words(base: Base, rng: random.Random) -> bytes:
    """Bits of instruction words: opcodes, operands, control codes (stalls, barriers, yield)."""
    data = bytearray(base.data)
    kernel = rng.choice(base.cubin.kernels)
    if not kernel.text:
        return bit_flips(base, rng)
    for _ in range(rng.choice((1, 1, 2, 3))):
        word = rng.randrange(len(kernel.text) // 16)
        bit = rng.choice((rng.randrange(128), 105 + rng.randrange(23)))  # anywhere, or the control bits
        pos = kernel.text_offset + 16 * word + bit // 8
        data[pos] ^= 1 << (bit % 8)
    return bytes(data)


def appended(base: Base, rng: random.Random) -> bytes:
    tail = rng.choice((b"\0" * 64, bytes(rng.getrandbits(8) for _ in range(64)), base.data[:64], base.data))
    return base.data + tail


CUBIN_MUTATIONS: dict[str, Callable[[Base, random.Random], bytes]] = {
    "bit_flips": bit_flips, "byte_runs": byte_runs, "truncation": truncation, "elf_header": elf_header,
    "section_header": section_header, "inflated_size": inflated_size, "nv_info": nv_info_record,
    "relocation": relocation, "symbol": symbol, "text_words": text_words, "appended": appended,
}


# ---------------------------------------------------------------- PTX mutations


def _lines(text: str) -> list[str]:
    return text.split("\n")


def ptx_mutation(base: Base, rng: random.Random) -> tuple[str, bytes]:
    """(kind, mutated PTX): directives, deleted/duplicated/swapped lines, tokens, numbers, bytes."""
    text = base.data.decode("utf-8", errors="replace")
    lines = _lines(text)
    kind = rng.choice(("target", "version", "delete", "duplicate", "swap", "token", "number", "truncate",
                       "bit_flips", "register"))
    i = rng.randrange(len(lines))
    if kind == "target":
        text = re.sub(r"\.target\s+\S+", ".target " + rng.choice(("sm_90", "sm_80", "sm_52", "sm_100a", "sm_9",
                                                                   "sm_90a", "compute_90", "sm_", "sm_99999")), text)
    elif kind == "version":
        text = re.sub(r"\.version\s+\S+", ".version " + rng.choice(("1.0", "9.9", "99.0", "8.0", "x", "7.8")), text)
    elif kind == "delete":
        del lines[i : i + rng.choice((1, 1, 3, 20))]
        text = "\n".join(lines)
    elif kind == "duplicate":
        lines.insert(i, lines[rng.randrange(len(lines))])
        text = "\n".join(lines)
    elif kind == "swap":
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
        text = "\n".join(lines)
    elif kind == "token":
        words = re.findall(r"[A-Za-z_.][\w.]*", text)
        old, new = rng.choice(words), rng.choice(words)
        text = text.replace(old, new, rng.choice((1, 5, -1)))
    elif kind == "number":
        text = re.sub(r"\b\d+\b", lambda m: str(rng.choice((0, 1, 2**31, 2**32, 2**64, 10**40)))
                      if rng.random() < 0.05 else m.group(0), text)
    elif kind == "register":
        text = re.sub(r"%r(\d+)", lambda m: f"%r{int(m.group(1)) * rng.choice((1, 7, 1000))}"
                      if rng.random() < 0.1 else m.group(0), text)
    elif kind == "truncate":
        text = text[: rng.randrange(len(text))]
    else:
        return kind, bit_flips(Base(base.name, base.data), rng)
    return kind, text.encode()


# ---------------------------------------------------------------- launch-spec mutations

WEIRD_VALUES = ("0", "-1", "1e400", "-inf", "inf", "nan", "9223372036854775808", "99999999999999999999999",
                "4294967296", "[]", "[0]", "[-1]", "[1, 2, 3, 4]", "[1000000, 1000000]", "[4611686018427387904, 4]",
                '"x"', '""', "true", "{}", "1.5", "[1.5]", "[[1]]", '"float128"', '"complex64"', '">f4"',
                "[" * 50 + "1" + "]" * 50, "[" * 3000 + "]" * 3000)
INITS = ('{ dist = "uniform", low = -inf, high = inf }', '{ dist = "uniform", low = -1e308, high = 1e308 }',
         '{ dist = "normal", std = nan }', '{ dist = "normal", mean = inf }', '{ dist = "integers", high = 0 }',
         '{ dist = "integers", low = -5, high = 99999999999999999999 }', '{ dist = "const", value = nan }',
         '{ dist = "const", value = 1e300 }', '{ dist = "permutation" }', '{ dist = "arange" }',
         '{ dist = "index", high = 2.5 }', '{ dist = "zipf" }', '{ dist = "uniform", low = 1, high = 1 }')


def spec_mutation(base: Base, rng: random.Random) -> tuple[str, bytes]:
    """(kind, mutated TOML): a key's value replaced, a key dropped or added, an init swapped,
    the hook pointed somewhere, nesting, bytes flipped, the text cut."""
    text = base.data.decode("utf-8")
    lines = _lines(text)
    keyed = [i for i, line in enumerate(lines) if re.match(r"\s*\w+\s*=", line)]
    kind = rng.choice(("value", "value", "drop", "unknown", "init", "hook", "bit_flips", "truncate", "table"))
    if kind == "value" and keyed:
        i = rng.choice(keyed)
        key = lines[i].split("=", 1)[0]
        lines[i] = f"{key}= {rng.choice(WEIRD_VALUES)}"
    elif kind == "drop" and keyed:
        del lines[rng.choice(keyed)]
    elif kind == "unknown":
        lines.insert(rng.randrange(len(lines) + 1), f"{rng.choice(('extra', 'grid', 'param', 'kernel'))} = 1")
    elif kind == "init":
        inits = [i for i in keyed if lines[i].lstrip().startswith("init")]
        if inits:
            lines[rng.choice(inits)] = f"init = {rng.choice(INITS)}"
    elif kind == "hook":
        at = next((i for i, line in enumerate(lines) if line.strip() == "[kernel]"), 0)
        lines.insert(at + 1, "hook = " + rng.choice(('"no_such_module_zz:f"', '"os:getcwd"', '"math:nope"',
                                                     '"reorder.base.errors:ReorderError"', '"json:loads"', '"bad hook"')))
    elif kind == "table":
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(("[[param]]", "[kernel]", "[grid_sweep]", "[x]")))
    elif kind == "bit_flips":
        return kind, bit_flips(Base(base.name, base.data), rng)
    else:
        kind = "truncate"
        text = "\n".join(lines)
        return kind, text[: rng.randrange(len(text) + 1)].encode()
    return kind, "\n".join(lines).encode()
