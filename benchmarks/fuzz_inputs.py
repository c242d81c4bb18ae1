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
SPECIAL = (
    0,
    1,
    2,
    3,
    7,
    8,
    15,
    16,
    63,
    64,
    255,
    256,
    0x7FFF,
    0x8000,
    0xFFFF,
    0x10000,
    0x7FFFFFFF,
    0x80000000,
    0xFFFFFFFF,
    0x100000000,
    0x7FFFFFFFFFFFFFFF,
    0x8000000000000000,
    0xFFFFFFFFFFFFFFFF,
)
# (offset, struct format) of the ELF64 header fields and of Elf64_Shdr / Elf64_Sym / Elf64_Rela fields
ELF_FIELDS = {
    "ei_class": (4, "B"),
    "ei_data": (5, "B"),
    "ei_abiversion": (8, "B"),
    "e_type": (16, "H"),
    "e_machine": (18, "H"),
    "e_entry": (24, "Q"),
    "e_phoff": (32, "Q"),
    "e_shoff": (40, "Q"),
    "e_flags": (48, "I"),
    "e_ehsize": (52, "H"),
    "e_phentsize": (54, "H"),
    "e_phnum": (56, "H"),
    "e_shentsize": (58, "H"),
    "e_shnum": (60, "H"),
    "e_shstrndx": (62, "H"),
}
SHDR_FIELDS = {
    "sh_name": (0, "I"),
    "sh_type": (4, "I"),
    "sh_flags": (8, "Q"),
    "sh_addr": (16, "Q"),
    "sh_offset": (24, "Q"),
    "sh_size": (32, "Q"),
    "sh_link": (40, "I"),
    "sh_info": (44, "I"),
    "sh_addralign": (48, "Q"),
    "sh_entsize": (56, "Q"),
}
SYM_FIELDS = {
    "st_name": (0, "I"),
    "st_info": (4, "B"),
    "st_other": (5, "B"),
    "st_shndx": (6, "H"),
    "st_value": (8, "Q"),
    "st_size": (16, "Q"),
}
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
    "bit_flips": bit_flips,
    "byte_runs": byte_runs,
    "truncation": truncation,
    "elf_header": elf_header,
    "section_header": section_header,
    "inflated_size": inflated_size,
    "nv_info": nv_info_record,
    "relocation": relocation,
    "symbol": symbol,
    "text_words": text_words,
    "appended": appended,
}


# ---------------------------------------------------------------- PTX mutations


def _lines(text: str) -> list[str]:
    return text.split("\n")


def ptx_mutation(base: Base, rng: random.Random) -> tuple[str, bytes]:
    """(kind, mutated PTX): directives, deleted/duplicated/swapped lines, tokens, numbers, bytes."""
    text = base.data.decode("utf-8", errors="replace")
    lines = _lines(text)
    kind = rng.choice(
        ("target", "version", "delete", "duplicate", "swap", "token", "number", "truncate", "bit_flips", "register")
    )
    i = rng.randrange(len(lines))
    if kind == "target":
        text = re.sub(
            r"\.target\s+\S+",
            ".target "
            + rng.choice(("sm_90", "sm_80", "sm_52", "sm_100a", "sm_9", "sm_90a", "compute_90", "sm_", "sm_99999")),
            text,
        )
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
        text = re.sub(
            r"\b\d+\b",
            lambda m: str(rng.choice((0, 1, 2**31, 2**32, 2**64, 10**40))) if rng.random() < 0.05 else m.group(0),
            text,
        )
    elif kind == "register":
        text = re.sub(
            r"%r(\d+)",
            lambda m: f"%r{int(m.group(1)) * rng.choice((1, 7, 1000))}" if rng.random() < 0.1 else m.group(0),
            text,
        )
    elif kind == "truncate":
        text = text[: rng.randrange(len(text))]
    else:
        return kind, bit_flips(Base(base.name, base.data), rng)
    return kind, text.encode()


# ---------------------------------------------------------------- launch-spec mutations

WEIRD_VALUES = (
    "0",
    "-1",
    "1e400",
    "-inf",
    "inf",
    "nan",
    "9223372036854775808",
    "99999999999999999999999",
    "4294967296",
    "[]",
    "[0]",
    "[-1]",
    "[1, 2, 3, 4]",
    "[1000000, 1000000]",
    "[4611686018427387904, 4]",
    '"x"',
    '""',
    "true",
    "{}",
    "1.5",
    "[1.5]",
    "[[1]]",
    '"float128"',
    '"complex64"',
    '">f4"',
    "[" * 50 + "1" + "]" * 50,
    "[" * 3000 + "]" * 3000,
)
INITS = (
    '{ dist = "uniform", low = -inf, high = inf }',
    '{ dist = "uniform", low = -1e308, high = 1e308 }',
    '{ dist = "normal", std = nan }',
    '{ dist = "normal", mean = inf }',
    '{ dist = "integers", high = 0 }',
    '{ dist = "integers", low = -5, high = 99999999999999999999 }',
    '{ dist = "const", value = nan }',
    '{ dist = "const", value = 1e300 }',
    '{ dist = "permutation" }',
    '{ dist = "arange" }',
    '{ dist = "index", high = 2.5 }',
    '{ dist = "zipf" }',
    '{ dist = "uniform", low = 1, high = 1 }',
)


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
        lines.insert(
            at + 1,
            "hook = "
            + rng.choice(
                (
                    '"no_such_module_zz:f"',
                    '"os:getcwd"',
                    '"math:nope"',
                    '"reorder.base.errors:ReorderError"',
                    '"json:loads"',
                    '"bad hook"',
                )
            ),
        )
    elif kind == "table":
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(("[[param]]", "[kernel]", "[grid_sweep]", "[x]")))
    elif kind == "bit_flips":
        return kind, bit_flips(Base(base.name, base.data), rng)
    else:
        kind = "truncate"
        text = "\n".join(lines)
        return kind, text[: rng.randrange(len(text) + 1)].encode()
    return kind, "\n".join(lines).encode()


# ---------------------------------------------------------------- struct-spec mutations

FIELD_TYPES = (
    "ptr",
    "int8",
    "uint16",
    "int32",
    "int64",
    "float32",
    "float64",
    "bool",
    "float16",
    "nope",
    "",
    "int128",
    "void",
    7,
    ["ptr"],
    {"name": "x"},
)
COUNTS = (0, -1, 1, 2, 3, 1.5, "2", 2**31, 2**40, 10**6, True)
POINTERS = (
    0,
    1,
    4096,
    -1,
    "no_such_buffer",
    "",
    {"buffer": "BUF"},
    {"buffer": "BUF", "index": -1},
    {"buffer": "BUF", "index": 2**40},
    {"buffer": "BUF", "index": 1.5},
    {"index": 3},
    {"buffer": 7},
    {"buffer": "BUF", "index": 0, "extra": 1},
    ["BUF"],
    True,
    1e300,
    "SELF",
    "SCALAR",
)
FIELD_VALUES = (
    0,
    -1,
    2**63,
    2**64,
    -(2**63) - 1,
    65536,
    256,
    1.5,
    float("nan"),
    float("inf"),
    1e308,
    "x",
    [],
    [1, 2, 3, 4, 5],
    [[1]],
    {},
    {"a": 1},
    True,
)


def _toml_document(raw: dict) -> bytes:
    """A parsed spec written back: [kernel] first, then arrays of tables; any other top-level
    key as a plain value (a mutation may have put anything anywhere)."""
    from timing.spectoml import toml_value

    def entry(key: str, value) -> str:
        try:
            return f"{key} = {toml_value(value)}"
        except TypeError:
            return f"{key} = {toml_value(repr(value))}"

    lines = [
        entry(k, v)
        for k, v in raw.items()
        if not isinstance(v, (dict, list)) or (isinstance(v, list) and not all(isinstance(x, dict) for x in v))
    ]
    for key, value in raw.items():
        if isinstance(value, dict):
            lines += ["", f"[{key}]", *(entry(k, v) for k, v in value.items())]
        elif isinstance(value, list) and value and all(isinstance(x, dict) for x in value):
            for table in value:
                lines += ["", f"[[{key}]]", *(entry(k, v) for k, v in table.items())]
    return ("\n".join(lines) + "\n").encode()


def _named(raw: dict, key: str) -> list[dict]:
    tables = raw.get(key)
    return [t for t in tables if isinstance(t, dict)] if isinstance(tables, list) else []


def _buffers(raw: dict) -> list[str]:
    return [
        t.get("name", "") for t in _named(raw, "buffer") + _named(raw, "param") if t.get("kind", "buffer") == "buffer"
    ]


def _pointer(raw: dict, rng: random.Random, here: str):
    """A pointer value: a real buffer (whole or at an index), or one of the odd forms."""
    names = _buffers(raw) or ["x"]
    pick = rng.choice(POINTERS) if rng.random() < 0.7 else rng.choice(names)
    if pick == "SELF":
        return here
    if pick == "SCALAR":
        scalars = [t.get("name") for t in _named(raw, "param") if t.get("kind") == "scalar"]
        return rng.choice(scalars) if scalars else "k"
    if isinstance(pick, dict) and pick.get("buffer") == "BUF":
        return {**pick, "buffer": rng.choice(names)}
    if isinstance(pick, list):
        return [rng.choice(names)]
    return pick


def _mutate_value(value, raw: dict, rng: random.Random, here: str):
    """One field of a struct value (recursing into nested structs and arrays) made odd."""
    if isinstance(value, dict) and value:
        key = rng.choice(sorted(value))
        out = dict(value)
        roll = rng.random()
        if roll < 0.15:
            del out[key]
        elif roll < 0.25:
            out[f"{key}_extra"] = 1
        elif roll < 0.6 and isinstance(value[key], (dict, list)):
            out[key] = _mutate_value(value[key], raw, rng, here)
        elif roll < 0.8:
            out[key] = _pointer(raw, rng, here)
        else:
            out[key] = rng.choice(FIELD_VALUES)
        return out
    if isinstance(value, list) and value:
        out = list(value)
        i = rng.randrange(len(out))
        roll = rng.random()
        if roll < 0.2:
            del out[i]
        elif roll < 0.35:
            out.append(out[i])
        else:
            out[i] = _mutate_value(out[i], raw, rng, here)
        return out
    return rng.choice((_pointer(raw, rng, here), rng.choice(FIELD_VALUES)))


def _struct_types(raw: dict, rng: random.Random) -> str:
    types = _named(raw, "type")
    if not types:
        return "none"
    ty = rng.choice(types)
    fields = ty.get("fields") if isinstance(ty.get("fields"), list) else []
    roll = rng.random()
    if roll < 0.1:
        raw["type"] = [t for t in raw["type"] if t is not ty]
        return "type_drop"
    if roll < 0.2 and len(types) >= 1:
        other = rng.choice(types)
        fields.append({"name": "loop", "type": ty.get("name")})
        if other is not ty and isinstance(other.get("fields"), list):
            other["fields"].append({"name": "back", "type": ty.get("name")})
        return "type_cycle"
    if roll < 0.3:
        raw["type"].append(dict(ty))  # the same name twice
        return "type_twice"
    if not fields:
        return "none"
    field_ = rng.choice(fields)
    if not isinstance(field_, dict):
        return "none"
    if roll < 0.55:
        names = [t.get("name") for t in types]
        field_["type"] = rng.choice((*FIELD_TYPES, *names))
        return "field_type"
    if roll < 0.75:
        field_["count"] = rng.choice(COUNTS)
        return "field_count"
    if roll < 0.85:
        fields.remove(field_)
        return "field_drop"
    if roll < 0.92:
        fields.append(dict(field_))
        return "field_twice"
    field_["name"] = rng.choice(("", "x y", 7, "a" * 300, "__proto__"))
    return "field_name"


def _struct_values(raw: dict, rng: random.Random) -> str:
    holders = [t for t in _named(raw, "param") if t.get("kind") == "struct"]
    holders += [t for t in _named(raw, "buffer") if "values" in t]
    if not holders:
        return "none"
    table = rng.choice(holders)
    here = table.get("name", "")
    if "values" in table and rng.random() < 0.3:
        values = table["values"] if isinstance(table["values"], list) else []
        table["values"] = rng.choice(([], values * 3, values[:1], "x", [1], values + [values[0]] if values else [0]))
        return "values_count"
    key = "value" if "value" in table else "values"
    table[key] = _mutate_value(table.get(key), raw, rng, here)
    return "value"


def _struct_roles(raw: dict, rng: random.Random) -> str:
    tables = _named(raw, "buffer") + _named(raw, "param")
    if not tables:
        return "none"
    table = rng.choice(tables)
    roll = rng.random()
    if roll < 0.4:
        table["role"] = rng.choice(("zeros", "zeros", "in", "out", "inout", "zero", ""))
        return "role"
    if roll < 0.7:
        table["kind"] = rng.choice(("struct", "buffer", "scalar", "descr"))
        if rng.random() < 0.5:
            table["type"] = rng.choice([t.get("name") for t in _named(raw, "type")] + ["ptr", "int32", "nope"])
        return "kind"
    if roll < 0.85:
        others = [t.get("name") for t in tables]
        table["name"] = rng.choice(others)  # two tables, one name
        return "name_twice"
    table["dtype" if "type" in table else "type"] = rng.choice(("float32", "ptr", "int64", "Tensor2", "SumArgs"))
    return "type_and_dtype"


KERNEL_NAMES = (
    "warpSelect",
    "void",
    "<",
    "float",
    "Kernel",
    "faiss::gpu::warpSelect",
    "warpSelect<float",
    "lastBlockSum<256>",
    "lastBlockSum<128>",
    "cfoTaEstDescrKernel",
    "pusch::",
    "_ZN",
    " ",
    "",
    "(",
    "*",
    ".*",
    "warpSelect<float, long, false, 32, 2, 128>",
    (
        "void faiss::gpu::warpSelect<float, long, false, 128, 4, 128>(faiss::gpu::Tensor<float, 2, true, long, "
        "faiss::gpu::traits::DefaultPtrTraits>, faiss::gpu::Tensor<float, 2, true, long, "
        "faiss::gpu::traits::DefaultPtrTraits>, faiss::gpu::Tensor<long, 2, true, long, "
        "faiss::gpu::traits::DefaultPtrTraits>, float, long, int)"
    ),
    "x" * 5000,
    "é",
    "\t",
)


def struct_spec_mutation(base: Base, rng: random.Random) -> tuple[str, bytes]:
    """(kind, mutated TOML) of a spec with [[type]], struct parameters, descriptor buffers or
    zeros counters: types (fields' types and counts, cycles, names twice), values (pointers
    to nothing, to themselves, past a buffer; fields missing, extra, of the wrong type),
    roles and kinds, the kernel's name; one to three of them, or a text mutation."""
    import copy

    import tomllib

    if rng.random() < 0.15:
        return spec_mutation(base, rng)
    raw = copy.deepcopy(tomllib.loads(base.data.decode()))
    kinds = []
    for _ in range(rng.choice((1, 1, 2, 3))):
        roll = rng.random()
        if roll < 0.3:
            kinds.append(_struct_types(raw, rng))
        elif roll < 0.65:
            kinds.append(_struct_values(raw, rng))
        elif roll < 0.85:
            kinds.append(_struct_roles(raw, rng))
        else:
            raw["kernel"]["name"] = rng.choice(KERNEL_NAMES)
            kinds.append("kernel_name")
    return "+".join(sorted(set(kinds))), _toml_document(raw)


# ---------------------------------------------------------------- kernel names


def name_query(symbols: tuple[str, ...], readable: tuple[str, ...], rng: random.Random) -> tuple[str, str]:
    """(kind, a --kernel value) for a cubin whose kernels are `symbols` (demangled: `readable`):
    exact, reformatted, partial, ambiguous, absent, odd."""
    i = rng.randrange(len(symbols))
    sym, sig = symbols[i], readable[i]
    roll = rng.random()
    if roll < 0.1:
        return "symbol", sym
    if roll < 0.2:
        return "signature", sig
    if roll < 0.3:
        return "spacing", rng.choice(
            (sig.replace(" ", ""), sig.replace(",", " , "), f"  {sig}  ", sig.replace(" ", "\t"))
        )
    if roll < 0.5:
        start = rng.randrange(len(sig))
        return "substring", sig[start : start + rng.randrange(1, 40)]
    if roll < 0.6:
        start = rng.randrange(len(sym))
        return "symbol_part", sym[start : start + rng.randrange(1, 30)]
    if roll < 0.7:
        return "case", rng.choice((sig.upper(), sig.lower(), sym.upper()))
    if roll < 0.8:
        cut = rng.randrange(len(sig))
        return "edited", sig[:cut] + rng.choice(("x", "", " ", "<", ">", "::", "0")) + sig[cut + 1 :]
    return "odd", rng.choice(KERNEL_NAMES)
