"""Launch specs built in code, from what a test harness holds: device arrays and numpy structs.

A harness that already calls its kernel has the arguments at hand: cupy or torch arrays,
numpy scalars, and for struct parameters numpy structured scalars (`np.dtype([...],
align=True)`) whose pointer fields hold device addresses. `Spec.build` turns them into a
`timing.spec.LaunchSpec` (a `Spec` is one, so it goes wherever a TOML spec's value goes:
timing.check.check_pair, timing.paired.time_pair, the search's scorer, spec_toml for the CLI):

- a device array becomes a buffer of its dtype and shape: 'out' when named in `outputs`,
  'zeros' in `zeros`, else 'inout' drawn fresh for every check (floats N(0, 1), integers
  between the live array's minimum and maximum, bools 0/1; `inits` names others);
- a numpy scalar becomes a scalar parameter of its exact width (a Python number is refused:
  its width would be a guess);
- a numpy structured scalar becomes a struct parameter whose type follows the dtype; an
  8-byte integer field holding the address of (an element of) a known array becomes a
  pointer to that buffer, so the tool can point it at fresh buffers of its own;
- `buffers` names device memory the kernel reaches only through pointers; one listed in
  `structs` with its structured dtype holds descriptors: its live bytes are read back and
  its pointer fields mapped the same way.

The dtype's offsets must be the C layout (timing.layout): build it with align=True.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from reorder.base.errors import SpecError
from timing.layout import POINTER, Field, FieldValue, Pointer, StructType, placed_fields, size_align
from timing.params import StructBuffer
from timing.spec import BufferParam, Extra, Init, LaunchSpec, Param, ScalarParam, StructParam, parse_spec
from timing.spectoml import spec_dict, spec_toml


@dataclass(frozen=True, slots=True)
class DeviceArray:
    """What the spec needs of a live device array: address, bytes, dtype, shape."""

    address: int
    dtype: np.dtype
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize


def device_array(value: Any) -> DeviceArray | None:
    """A cupy/numba array (__cuda_array_interface__) or a torch CUDA tensor; None otherwise."""
    face = getattr(value, "__cuda_array_interface__", None)
    if face is not None:
        return DeviceArray(int(face["data"][0]), np.dtype(face["typestr"]), tuple(int(d) for d in face["shape"]))
    if callable(getattr(value, "data_ptr", None)) and getattr(value, "is_cuda", False):
        dtype = np.dtype(str(value.dtype).removeprefix("torch."))
        return DeviceArray(int(value.data_ptr()), dtype, tuple(int(d) for d in value.shape))
    return None


def host_copy(value: Any) -> np.ndarray:
    """The live contents of a device array (cupy .get(), torch .cpu().numpy())."""
    if callable(getattr(value, "get", None)):
        return np.asarray(value.get())
    return np.asarray(value.detach().cpu().numpy())


class _Arrays:
    """Known device arrays by name, to turn addresses into pointers."""

    def __init__(self, arrays: Mapping[str, DeviceArray]) -> None:
        self.arrays = dict(arrays)

    def pointer(self, address: int) -> Pointer | None:
        """The buffer element at `address`, or None when it is in no known array."""
        for name, a in self.arrays.items():
            offset = address - a.address
            if 0 <= offset <= a.nbytes and offset % a.dtype.itemsize == 0:
                return Pointer(name, offset // a.dtype.itemsize)
        return None


def _pointer_fields(dtype: np.dtype, records: np.ndarray, arrays: _Arrays) -> set[str]:
    """Fields of 8-byte integers whose value is a known array's address in some record."""
    out = set()
    fields: Mapping[str, tuple] = dtype.fields or {}
    for name in dtype.names or ():
        sub = fields[name][0]
        if (
            sub.kind in "iu"
            and sub.itemsize == 8
            and sub.subdtype is None
            and any(int(v) and arrays.pointer(int(v)) for v in records[name].reshape(-1))
        ):
            out.add(name)
    return out


def _struct_types(dtype: np.dtype, name: str, records: np.ndarray, arrays: _Arrays, out: dict[str, StructType]) -> str:
    """Declare the struct type of `dtype` (and nested ones) in `out`; returns its name."""
    pointers = _pointer_fields(dtype, records, arrays)
    fields = []
    given: Mapping[str, tuple] = dtype.fields or {}
    for field in dtype.names or ():
        sub, _ = given[field][:2]
        base, shape = sub.subdtype if sub.subdtype else (sub, ())
        count = math.prod(shape) if shape else 1
        if base.names:
            ty = _struct_types(base, f"{name}_{field}", records[field].reshape(-1), arrays, out)
        else:
            ty = POINTER if field in pointers else base.name
        fields.append(Field(field, ty, count))
    out[name] = StructType(name, tuple(fields))
    _check_offsets(dtype, out, name)
    return name


def _check_offsets(dtype: np.dtype, types: Mapping[str, StructType], name: str) -> None:
    fields: Mapping[str, tuple] = dtype.fields or {}
    for placed in placed_fields(types, name):
        given = fields[placed.field.name][1]
        if given != placed.offset:
            raise SpecError(
                f"struct {name}: field '{placed.field.name}' is at offset {given} in the dtype, "
                f"{placed.offset} by the C layout; build the dtype with align=True"
            )
    size = size_align(types, name)[0]
    if dtype.itemsize != size:
        raise SpecError(
            f"struct {name}: the dtype is {dtype.itemsize} bytes, the C layout {size}; build the dtype with align=True"
        )


def _value(types: Mapping[str, StructType], ty: str, record: Any, arrays: _Arrays, where: str) -> FieldValue:
    if ty == POINTER:
        address = int(record)
        if address == 0:
            return Pointer(None)
        ptr = arrays.pointer(address)
        if ptr is None:
            raise SpecError(f"{where}: {address:#x} is the address of no array given to the spec")
        return ptr
    if ty in types:
        out = []
        for f in types[ty].fields:
            items = np.asarray(record[f.name]).reshape(-1) if f.count > 1 else (record[f.name],)
            values = tuple(_value(types, f.type, v, arrays, f"{where}.{f.name}") for v in items)
            out.append((f.name, values if f.count > 1 else values[0]))
        return tuple(out)
    return np.asarray(record).item()


class Spec(LaunchSpec):
    """A LaunchSpec built in code (module docstring). Use `Spec.build(...)`."""

    __slots__ = ()

    @classmethod
    def build(
        cls,
        kernel: str,
        grid: int | Sequence[int],
        block: int | Sequence[int],
        args: Mapping[str, Any] | Sequence[Any],
        *,
        buffers: Mapping[str, Any] | None = None,
        structs: Mapping[str, np.dtype] | None = None,
        outputs: Sequence[str] = (),
        zeros: Sequence[str] = (),
        inits: Mapping[str, Mapping[str, Any]] | None = None,
        shared: int = 0,
        seed: int = 0,
    ) -> Spec:
        named = dict(args) if isinstance(args, Mapping) else {f"arg{i}": v for i, v in enumerate(args)}
        extra_arrays = dict(buffers or {})
        structs = dict(structs or {})
        inits = dict(inits or {})
        clash = set(named) & set(extra_arrays)
        if clash:
            raise SpecError(f"{kernel}: {sorted(clash)} named both as argument and buffer")
        live = {n: a for n, v in {**named, **extra_arrays}.items() if (a := device_array(v)) is not None}
        unknown = (set(outputs) | set(zeros) | set(inits) | set(structs)) - set(live)
        if unknown:
            raise SpecError(f"{kernel}: outputs/zeros/inits/structs name no device array: {sorted(unknown)}")
        arrays = _Arrays(live)
        types: dict[str, StructType] = {}
        params = tuple(_param(n, v, live, arrays, types, outputs, zeros, inits) for n, v in named.items())
        extra = tuple(
            _extra(n, v, live.get(n), structs.get(n), arrays, types, outputs, zeros, inits)
            for n, v in extra_arrays.items()
        )
        dims = tuple([grid] if isinstance(grid, int) else grid)
        bdims = tuple([block] if isinstance(block, int) else block)
        base = LaunchSpec(
            kernel,
            _three(dims),
            _three(bdims),
            params,
            shared,
            seed,
            None,
            f"<launch {kernel}>",
            tuple(types.values()),
            extra,
        )
        checked = parse_spec(spec_dict(base), source=base.source)  # the validation a TOML spec gets
        return cls(*(getattr(checked, f) for f in LaunchSpec.__dataclass_fields__))

    def toml(self) -> str:
        """The spec as a file for `reorder check/time/optimize --launch`."""
        return spec_toml(self, header=f"launch of {self.name}, written by timing.launch")


def _three(dims: tuple[int, ...]) -> tuple[int, int, int]:
    full = tuple(int(d) for d in dims) + (1,) * (3 - len(dims))
    return (full[0], full[1], full[2])


def _buffer(name: str, value: Any, a: DeviceArray, outputs, zeros, inits) -> BufferParam:
    if a.dtype.kind not in "biuf":
        raise SpecError(f"buffer '{name}': dtype {a.dtype} is not a plain numeric type")
    shape = a.shape or (1,)
    if name in outputs:
        return BufferParam(name, a.dtype.name, shape, "out")
    if name in zeros:
        return BufferParam(name, a.dtype.name, shape, "zeros")
    init = (
        Init(str(inits[name]["dist"]), tuple((k, v) for k, v in inits[name].items() if k != "dist"))
        if name in inits
        else _default_init(name, value, a)
    )
    return BufferParam(name, a.dtype.name, shape, "inout", init)


def _default_init(name: str, value: Any, a: DeviceArray) -> Init:
    if a.dtype.kind == "f":
        return Init("normal", (("mean", 0.0), ("std", 1.0)))
    if a.dtype.kind == "b":
        return Init("integers", (("low", 0), ("high", 2)))
    live = host_copy(value)
    if live.size == 0:
        raise SpecError(f"buffer '{name}': empty; give inits={{'{name}': ...}}")
    return Init("integers", (("low", int(live.min())), ("high", int(live.max()) + 1)))


def _param(
    name: str,
    value: Any,
    live: Mapping[str, DeviceArray],
    arrays: _Arrays,
    types: dict[str, StructType],
    outputs,
    zeros,
    inits,
) -> Param:
    if name in live:
        return _buffer(name, value, live[name], outputs, zeros, inits)
    record = value[0] if isinstance(value, np.ndarray) and value.size == 1 and value.dtype.names else value
    if isinstance(record, np.void) and record.dtype.names:
        ty = _struct_types(record.dtype, f"{name}_t", np.asarray(record).reshape(-1), arrays, types)
        return StructParam(name, ty, _value(types, ty, record, arrays, f"param '{name}'"))  # type: ignore[arg-type]
    if isinstance(record, np.generic) and record.dtype.kind in "biuf":
        return ScalarParam(name, record.dtype.name, record.item())
    raise SpecError(
        f"param '{name}': {type(value).__name__} is no device array, numpy scalar or numpy "
        "structured scalar (give Python numbers as numpy scalars of the kernel's width)"
    )


def _extra(
    name: str,
    value: Any,
    a: DeviceArray | None,
    dtype: np.dtype | None,
    arrays: _Arrays,
    types: dict[str, StructType],
    outputs,
    zeros,
    inits,
) -> Extra:
    if a is None:
        raise SpecError(f"buffer '{name}': {type(value).__name__} is no device array")
    if dtype is None:
        return _buffer(name, value, a, outputs, zeros, inits)
    dtype = np.dtype(dtype)
    raw = np.ascontiguousarray(host_copy(value)).reshape(-1).view(np.uint8)
    if not dtype.names or raw.size % dtype.itemsize:
        raise SpecError(f"buffer '{name}': {raw.size} bytes are no whole number of {dtype} structs")
    records = raw.view(dtype)
    ty = _struct_types(dtype, f"{name}_t", records, arrays, types)
    return StructBuffer(
        name,
        ty,
        tuple(_value(types, ty, r, arrays, f"buffer '{name}'[{i}]") for i, r in enumerate(records)),
    )
