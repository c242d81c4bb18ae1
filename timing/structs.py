"""The struct forms of a launch spec: `[[type]]`, `kind = "struct"` parameters, `[[buffer]]`.

Format (beside timing.spec's [kernel] and [[param]])::

    [[type]]                          # a C struct, laid out by timing.layout's rules
    name = "Tensor2"
    fields = [ { name = "data", type = "ptr" },
               { name = "stride", type = "int64", count = 2 },
               { name = "size", type = "int64", count = 2 } ]

    [[buffer]]                        # device memory that is not itself a parameter
    name = "dist"                     # same keys as a buffer [[param]], without 'kind'
    dtype = "float32"
    shape = [512, 32768]
    role = "in"
    init = { dist = "uniform" }

    [[buffer]]                        # device memory holding structs (a descriptor array)
    name = "descs"
    type = "Tensor2"                  # a [[type]], or "ptr" for an array of pointers
    values = [ { data = "dist", stride = [32768, 1], size = [512, 32768] } ]

    [[param]]
    name = "in"
    kind = "struct"                   # passed by value
    type = "Tensor2"
    value = { data = "dist", stride = [32768, 1], size = [512, 32768] }

A field's type is a numpy dtype name, "ptr", or another [[type]] (nested; no cycles);
`count` makes it an array. Every field needs a value: a number (fitting the type), a list
of `count` of them, a table for a nested struct, and for a pointer the name of a buffer of
the spec ("dist"), a table `{ buffer = "dist", index = 4096 }` pointing at that element
(a struct buffer's index counts structs), or 0 for NULL. Buffers are allocated first and
pointers filled after, so a descriptor may point at any buffer, itself included.
"""

from __future__ import annotations

from typing import Any

from reorder.base.errors import SpecError
from timing.layout import POINTER, PRIMITIVES, Field, FieldValue, Pointer, StructType, pointers_in, size_align
from timing.params import (
    DTYPES,
    BufferParam,
    LaunchSpec,
    StructBuffer,
    StructParam,
    check_dtype,
    check_fits,
    no_unknown,
    required,
)

_TYPE_KEYS = {"name", "fields"}
_FIELD_KEYS = {"name", "type", "count"}
_STRUCT_PARAM_KEYS = {"name", "kind", "type", "value"}
_STRUCT_BUFFER_KEYS = {"name", "type", "values"}
MAX_COUNT = 1 << 20
MAX_NESTING = 16  # structs inside structs; deeper is no real descriptor and would recurse without end


def parse_types(raw: list[dict[str, Any]], source: str) -> tuple[StructType, ...]:
    """The [[type]] tables: unique names, fields of known types, no struct containing itself."""
    names = [t.get("name") for t in raw]
    types: list[StructType] = []
    for t in raw:
        name = t.get("name")
        where = f"{source}: type {name!r}"
        if not isinstance(name, str) or not name.isidentifier():
            raise SpecError(f"{where}: a [[type]] needs a 'name' that is an identifier")
        if name in PRIMITIVES or names.count(name) > 1:
            raise SpecError(f"{where}: name is a primitive type or used twice")
        no_unknown(t, _TYPE_KEYS, where)
        fields = t.get("fields")
        if not isinstance(fields, list) or not fields or not all(isinstance(f, dict) for f in fields):
            raise SpecError(f"{where}: 'fields' must be a non-empty list of tables")
        types.append(StructType(name, tuple(_field(f, where, names) for f in fields)))
        if len({f.name for f in types[-1].fields}) != len(fields):
            raise SpecError(f"{where}: a field name is used twice")
    _refuse_cycles(types, source)
    return tuple(types)


def _field(raw: dict[str, Any], where: str, type_names: list[Any]) -> Field:
    no_unknown(raw, _FIELD_KEYS, f"{where} field")
    name = required(raw, "name", str, f"{where} field")
    where = f"{where} field '{name}'"
    if not name.isidentifier():
        raise SpecError(f"{where}: a field name must be an identifier")
    ty = required(raw, "type", str, where)
    if ty not in type_names and ty != POINTER:
        try:
            ty = check_dtype(ty, where)
        except SpecError:
            declared = ", ".join(sorted(n for n in type_names if isinstance(n, str))) or "none declared"
            raise SpecError(
                f"{where}: unknown field type {ty!r}: a field is a dtype CuPy draws ({', '.join(DTYPES)}), "
                f"'{POINTER}', or a [[type]] ({declared})"
            ) from None
    count = raw.get("count", 1)
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= MAX_COUNT:
        raise SpecError(f"{where}: 'count' must be an integer in [1, {MAX_COUNT}], got {count!r}")
    return Field(name, ty, count)


def _refuse_cycles(types: list[StructType], source: str) -> None:
    by_name = {t.name: t for t in types}

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in path:
            raise SpecError(
                f"{source}: type '{name}' contains itself ({' -> '.join(path + (name,))}); "
                "a struct can only point at itself"
            )
        if len(path) >= MAX_NESTING:
            raise SpecError(f"{source}: type '{path[0]}' nests structs more than {MAX_NESTING} deep")
        for f in by_name[name].fields:
            if f.type in by_name:
                visit(f.type, path + (name,))

    for t in types:
        visit(t.name, ())


def _type_known(ty: Any, types: tuple[StructType, ...], where: str, allow_pointer: bool) -> str:
    names = {t.name for t in types}
    if not isinstance(ty, str) or not (ty in names or (allow_pointer and ty == POINTER)):
        choices = sorted(names) + ([POINTER] if allow_pointer else [])
        raise SpecError(f"{where}: 'type' must name a [[type]] ({', '.join(choices) or 'none declared'}), got {ty!r}")
    return ty


def parse_struct_param(raw: dict[str, Any], where: str, types: tuple[StructType, ...]) -> StructParam:
    """A `kind = "struct"` parameter: a [[type]] and its value."""
    no_unknown(raw, _STRUCT_PARAM_KEYS, where)
    ty = _type_known(raw.get("type"), types, where, allow_pointer=False)
    if "value" not in raw:
        raise SpecError(f"{where}: a struct parameter needs a 'value' table")
    value = parse_value({t.name: t for t in types}, ty, raw["value"], where)
    return StructParam(raw["name"], ty, value)  # type: ignore[arg-type]


def parse_struct_buffer(raw: dict[str, Any], where: str, types: tuple[StructType, ...]) -> StructBuffer:
    """A [[buffer]] holding structs (type/values); a plain one is read by timing.spec."""
    no_unknown(raw, _STRUCT_BUFFER_KEYS, where)
    ty = _type_known(raw["type"], types, where, allow_pointer=True)
    values = raw.get("values")
    if not isinstance(values, list) or not values:
        raise SpecError(f"{where}: 'values' must be a non-empty list (one entry per element)")
    type_map = {t.name: t for t in types}
    parsed = tuple(parse_value(type_map, ty, v, f"{where} element {i}") for i, v in enumerate(values))
    return StructBuffer(raw["name"], ty, parsed)


def parse_value(types: dict[str, StructType], ty: str, raw: Any, where: str) -> FieldValue:
    """A value of type `ty` from TOML, checked against the type (see the module docstring)."""
    if ty == POINTER:
        return _pointer(raw, where)
    if ty in PRIMITIVES:
        check_fits(raw, ty, where, "value")
        return float(raw) if ty.startswith("float") else raw
    if not isinstance(raw, dict):
        raise SpecError(f"{where}: struct {ty} needs a table of its fields, got {raw!r}")
    fields = types[ty].fields
    unknown = set(raw) - {f.name for f in fields}
    missing = [f.name for f in fields if f.name not in raw]
    if unknown or missing:
        raise SpecError(
            f"{where}: struct {ty} has fields {[f.name for f in fields]}; unknown {sorted(unknown)}, missing {missing}"
        )
    out = []
    for f in fields:
        at = f"{where}.{f.name}"
        if f.count == 1:  # `T x[1]` lays out as `T x`: a one-element list is that value
            one = raw[f.name][0] if isinstance(raw[f.name], list) and len(raw[f.name]) == 1 else raw[f.name]
            out.append((f.name, parse_value(types, f.type, one, at)))
            continue
        items = raw[f.name]
        if not isinstance(items, list) or len(items) != f.count:
            raise SpecError(f"{at}: an array of {f.count} {f.type} needs a list of {f.count} values, got {items!r}")
        out.append((f.name, tuple(parse_value(types, f.type, v, f"{at}[{i}]") for i, v in enumerate(items))))
    return tuple(out)


def _pointer(raw: Any, where: str) -> Pointer:
    if isinstance(raw, int) and not isinstance(raw, bool) and raw == 0:
        return Pointer(None)
    if isinstance(raw, str) and raw:
        return Pointer(raw)
    if isinstance(raw, dict) and set(raw) <= {"buffer", "index"} and isinstance(raw.get("buffer"), str):
        index = raw.get("index", 0)
        if isinstance(index, int) and not isinstance(index, bool) and index >= 0:
            return Pointer(raw["buffer"], index)
    raise SpecError(
        f"{where}: a pointer is a buffer name, {{ buffer = NAME, index = N >= 0 }}, or 0 (NULL); got {raw!r}"
    )


# ---------------------------------------------------------------- cross references


def _elements(spec: LaunchSpec) -> dict[str, int]:
    """Buffer name -> element count (what a pointer index may reach)."""
    out = {b.name: b.size for b in spec.buffers}
    out.update({b.name: len(b.values) for b in spec.struct_buffers})
    return out


def check_references(spec: LaunchSpec) -> None:
    """Every pointer names a buffer of the spec and stays inside it (one past the end is
    allowed, as in C)."""
    elements = _elements(spec)
    types = spec.type_map
    holders: list[tuple[str, str, tuple[Any, ...]]] = [
        (f"param '{p.name}'", p.type, (p.value,)) for p in spec.params if isinstance(p, StructParam)
    ]
    holders += [(f"buffer '{b.name}'", b.type, b.values) for b in spec.struct_buffers]
    for where, ty, values in holders:
        for value in values:
            for ptr in pointers_in(types, ty, value):
                if ptr.buffer is None:
                    continue
                if ptr.buffer not in elements:
                    raise SpecError(
                        f"{spec.source}: {where}: pointer to '{ptr.buffer}', which is no buffer of the "
                        f"spec (have: {', '.join(sorted(elements)) or 'none'})"
                    )
                if ptr.index > elements[ptr.buffer]:
                    raise SpecError(
                        f"{spec.source}: {where}: pointer {ptr.describe()} is past the end of "
                        f"'{ptr.buffer}' ({elements[ptr.buffer]} elements)"
                    )


def element_bytes(spec: LaunchSpec, name: str) -> int:
    """Bytes of one element of a buffer (a pointer's index steps by this)."""
    p = spec.param(name)
    if isinstance(p, StructBuffer):
        return size_align(spec.type_map, p.type)[0]
    assert isinstance(p, BufferParam)
    return p.nbytes // p.size
