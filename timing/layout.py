"""C struct layout for launch specs: named struct types, their byte layout, and packing.

Kernels as their libraries build them take structs by value (FAISS's `Tensor<T, 2, true>`,
cuPHY's `__grid_constant__` descriptors, CUTLASS's `Params`) and read arrays of structs
from device memory whose pointer fields point at other buffers. To launch one, the tool
has to produce the exact bytes the compiler expects, so the layout follows the C rules
nvcc applies on a 64-bit host (System V / the CUDA ABI, which agree for these types):

- a field of type T starts at the next multiple of alignof(T) (padding in between);
- alignof(struct) = the largest alignof of its fields; sizeof(struct) is rounded up to a
  multiple of it (tail padding), so arrays of the struct keep every element aligned;
- an array field `T x[n]` has T's alignment and n * sizeof(T) bytes;
- a pointer is 8 bytes, 8-aligned; primitive types are their numpy widths, naturally aligned.

Padding bytes are written as zero. The cubin's parameter table (EIATTR_KPARAM_INFO) gives
every by-value parameter's size and offset, which is what the layout is checked against
(timing.spec.check_against_params). Values are frozen: a struct value is a tuple of
(field name, value) pairs in field order, arrays are tuples, pointers are `Pointer`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

POINTER = "ptr"
PTR_BYTES = 8
# numpy dtype name -> struct module format (little-endian, no padding)
PRIMITIVES: dict[str, str] = {
    "bool": "?",
    "int8": "b",
    "uint8": "B",
    "int16": "h",
    "uint16": "H",
    "int32": "i",
    "uint32": "I",
    "int64": "q",
    "uint64": "Q",
    "float16": "e",
    "float32": "f",
    "float64": "d",
    POINTER: "Q",
}


@dataclass(frozen=True, slots=True)
class Pointer:
    """A pointer field's value: the buffer it points into (None = NULL) and an element index
    into it (in the buffer's elements: dtype items, or structs of a struct buffer)."""

    buffer: str | None
    index: int = 0

    def describe(self) -> str:
        if self.buffer is None:
            return "NULL"
        return self.buffer if self.index == 0 else f"{self.buffer}[{self.index}]"


FieldValue = int | float | bool | Pointer | tuple  # a tuple is an array or a nested struct value
StructValue = tuple[tuple[str, FieldValue], ...]


@dataclass(frozen=True, slots=True)
class Field:
    """One member: its name, its type (a primitive, 'ptr', or a struct type's name), and
    its array length (1 = a plain member)."""

    name: str
    type: str
    count: int = 1


@dataclass(frozen=True, slots=True)
class StructType:
    """A named C struct: its fields in declaration order."""

    name: str
    fields: tuple[Field, ...]


@dataclass(frozen=True, slots=True)
class Placed:
    """A field with its byte offset inside the struct and the size of one element."""

    field: Field
    offset: int
    element_size: int


Types = Mapping[str, StructType]


def _align_up(n: int, align: int) -> int:
    return -(-n // align) * align


def size_align(types: Types, type_name: str) -> tuple[int, int]:
    """(sizeof, alignof) of a primitive, a pointer or a struct type."""
    if type_name in PRIMITIVES:
        size = PTR_BYTES if type_name == POINTER else np.dtype(type_name).itemsize
        return size, size
    placed = placed_fields(types, type_name)
    align = max(size_align(types, p.field.type)[1] for p in placed)
    end = max(p.offset + p.element_size * p.field.count for p in placed)
    return _align_up(end, align), align


def placed_fields(types: Types, type_name: str) -> tuple[Placed, ...]:
    """Every field of a struct type at its C offset (see the module docstring)."""
    cursor, out = 0, []
    for f in types[type_name].fields:
        size, align = size_align(types, f.type)
        cursor = _align_up(cursor, align)
        out.append(Placed(f, cursor, size))
        cursor += size * f.count
    return tuple(out)


def describe_layout(types: Types, type_name: str) -> str:
    """'{data@0:ptr, stride@8:int64[2], ...} 40 bytes, align 8', for error lines."""
    size, align = size_align(types, type_name)
    if type_name in PRIMITIVES:
        return f"{type_name} {size} bytes"
    parts = [
        f"{p.field.name}@{p.offset}:{p.field.type}" + (f"[{p.field.count}]" if p.field.count > 1 else "")
        for p in placed_fields(types, type_name)
    ]
    return f"struct {type_name} {{{', '.join(parts)}}} {size} bytes, align {align}"


# ---------------------------------------------------------------- packing

Address = Callable[[Pointer], int]


def pack(types: Types, type_name: str, value: FieldValue, address: Address) -> bytes:
    """The bytes of one value of `type_name` (padding zero), pointers through `address`."""
    size, _ = size_align(types, type_name)
    out = bytearray(size)
    _pack_into(out, 0, types, type_name, value, address)
    return bytes(out)


def pack_array(types: Types, type_name: str, values: tuple[FieldValue, ...], address: Address) -> bytes:
    """An array of values of `type_name`, element after element (each sizeof apart)."""
    return b"".join(pack(types, type_name, v, address) for v in values)


def _pack_into(out: bytearray, at: int, types: Types, type_name: str, value: FieldValue, address: Address) -> None:
    if type_name == POINTER:
        assert isinstance(value, Pointer)
        struct.pack_into("<Q", out, at, address(value))
    elif type_name in PRIMITIVES:
        struct.pack_into("<" + PRIMITIVES[type_name], out, at, value)
    else:
        values = dict(value)  # type: ignore[arg-type]
        for p in placed_fields(types, type_name):
            items = values[p.field.name] if p.field.count > 1 else (values[p.field.name],)
            for i, item in enumerate(items):
                _pack_into(out, at + p.offset + i * p.element_size, types, p.field.type, item, address)


def pointer_slots(types: Types, type_name: str, value: FieldValue, at: int = 0) -> tuple[tuple[int, Pointer], ...]:
    """(byte offset, pointer) of every pointer inside one value, in memory order."""
    if type_name == POINTER:
        assert isinstance(value, Pointer)
        return ((at, value),)
    if type_name in PRIMITIVES:
        return ()
    values = dict(value)  # type: ignore[arg-type]
    out: list[tuple[int, Pointer]] = []
    for p in placed_fields(types, type_name):
        items = values[p.field.name] if p.field.count > 1 else (values[p.field.name],)
        for i, item in enumerate(items):
            out += pointer_slots(types, p.field.type, item, at + p.offset + i * p.element_size)
    return tuple(out)


def pointers_in(types: Types, type_name: str, value: FieldValue) -> tuple[Pointer, ...]:
    """Every pointer a value holds (which buffers it needs allocated first)."""
    return tuple(ptr for _, ptr in pointer_slots(types, type_name, value))


def numpy_dtype(types: Types, type_name: str) -> np.dtype:
    """The numpy structured dtype with the same offsets and size (pointers as uint64), for
    reading a struct's bytes back as named fields."""
    if type_name in PRIMITIVES:
        return np.dtype("uint64" if type_name == POINTER else type_name)
    names, formats, offsets = [], [], []
    for p in placed_fields(types, type_name):
        element = numpy_dtype(types, p.field.type)
        names.append(p.field.name)
        formats.append(element if p.field.count == 1 else np.dtype((element, (p.field.count,))))
        offsets.append(p.offset)
    return np.dtype(
        {"names": names, "formats": formats, "offsets": offsets, "itemsize": size_align(types, type_name)[0]}
    )
