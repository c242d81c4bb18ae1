"""The values of a launch spec (`LaunchSpec` and its parameters) and the checks its fields
pass, below `timing.spec` (which reads the TOML), `timing.structs` (the struct forms) and
`timing.inputs` (the input sets), so those three build on it without importing each other.
The format is described in timing.spec."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from reorder.base.errors import SpecError
from timing.layout import POINTER, PRIMITIVES, FieldValue, StructType, StructValue

POINTER_BYTES = 8
MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK_DIMS = (1024, 1024, 64)
MAX_GRID_DIMS = (2**31 - 1, 65535, 65535)
MAX_DYNAMIC_SHARED = 227 * 1024  # sm_90 per-block opt-in maximum
# All buffers of one spec together. Every input set is drawn on the host (normal and uniform
# in float64 before the cast) and each kernel of a pair gets its own copy on the GPU, so a
# spec near the GPU's memory could not be checked; the largest suite spec needs 192 MiB.
MAX_BUFFER_BYTES = 16 * 2**30
ROLES = ("in", "out", "inout", "zeros")  # zeros: a counter cleared before every launch (timing.gpu)
KINDS = ("buffer", "scalar", "struct")
DISTS: dict[str, dict[str, float | None]] = {
    # name -> {argument: default (None = required)}
    "uniform": {"low": 0.0, "high": 1.0},
    "normal": {"mean": 0.0, "std": 1.0},
    "integers": {"low": 0, "high": None},
    "index": {"low": 0, "high": None},
    "arange": {},
    "permutation": {},
    "const": {"value": None},
}
_KERNEL_KEYS = {"name", "grid", "block", "shared", "seed", "hook"}
_BUFFER_KEYS = {"name", "kind", "dtype", "shape", "role", "init"}
_SCALAR_KEYS = {"name", "kind", "dtype", "value"}
TOP_LEVEL_KEYS = {"kernel", "param", "type", "buffer", "grid_sweep"}  # grid_sweep: read by reorder.suite.sweep
_HOOK_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


@dataclass(frozen=True, slots=True)
class Init:
    """How to fill one input buffer: a distribution name and its (name, value) arguments."""

    dist: str
    args: tuple[tuple[str, float], ...] = ()

    def arg(self, name: str) -> float:
        """The argument's value; the loader has already filled defaults in."""
        return dict(self.args)[name]


@dataclass(frozen=True, slots=True)
class BufferParam:
    """A pointer parameter backed by a device buffer the tool allocates."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    role: str
    init: Init | None = None

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)  # Python ints: a shape that overflows int64 cannot wrap

    @property
    def nbytes(self) -> int:
        return self.size * np.dtype(self.dtype).itemsize


@dataclass(frozen=True, slots=True)
class ScalarParam:
    """A by-value parameter; `value` is None only when the hook supplies it."""

    name: str
    dtype: str
    value: int | float | bool | None = None


@dataclass(frozen=True, slots=True)
class StructParam:
    """A struct passed by value (a `[[type]]` of the spec), its bytes built at launch time,
    after the buffers its pointer fields name are allocated (timing.layout)."""

    name: str
    type: str
    value: StructValue


@dataclass(frozen=True, slots=True)
class StructBuffer:
    """Device memory holding an array of structs (or of pointers, type 'ptr'), such as a
    descriptor array whose pointer fields point at other buffers of the spec. Filled after
    every buffer is allocated; read back and compared with its pointers made symbolic."""

    name: str
    type: str
    values: tuple[FieldValue, ...]


Param = BufferParam | ScalarParam | StructParam
Extra = BufferParam | StructBuffer  # a [[buffer]]: device memory that is not itself a parameter


@dataclass(frozen=True, slots=True)
class LaunchSpec:
    """Everything needed to launch one kernel on reproducible inputs."""

    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    params: tuple[Param, ...]
    shared: int = 0
    seed: int = 0
    hook: str | None = None
    source: str = "<spec>"
    types: tuple[StructType, ...] = ()  # [[type]] tables
    extra: tuple[Extra, ...] = ()  # [[buffer]] tables

    @property
    def buffers(self) -> tuple[BufferParam, ...]:
        """Every plain buffer, parameters first, then [[buffer]] ones."""
        return tuple(p for p in self.params + self.extra if isinstance(p, BufferParam))

    @property
    def struct_buffers(self) -> tuple[StructBuffer, ...]:
        return tuple(b for b in self.extra if isinstance(b, StructBuffer))

    @property
    def type_map(self) -> dict[str, StructType]:
        return {t.name: t for t in self.types}

    @property
    def zeros(self) -> tuple[BufferParam, ...]:
        """The counters cleared before every launch."""
        return tuple(b for b in self.buffers if b.role == "zeros")

    def param(self, name: str) -> Param | Extra:
        """A parameter or a [[buffer]] by name."""
        for p in self.params + self.extra:
            if p.name == name:
                return p
        raise KeyError(name)


def no_unknown(raw: dict[str, Any], allowed: set[str], where: str) -> None:
    unknown = set(raw) - allowed
    if unknown:
        raise SpecError(f"{where}: unknown key(s) {sorted(unknown)} (allowed: {sorted(allowed)})")


def required(raw: dict[str, Any], key: str, typ: type, where: str) -> Any:
    if key not in raw:
        raise SpecError(f"{where}: missing '{key}'")
    value = raw[key]
    if not isinstance(value, typ) or (isinstance(value, bool) and typ is not bool):
        raise SpecError(f"{where}: '{key}' must be a {typ.__name__}, got {value!r}")
    return value


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def int_in(v: Any, key: str, where: str, lo: int, hi: int) -> int:
    if not is_int(v) or not lo <= v <= hi:
        raise SpecError(f"{where}: '{key}' must be an integer in [{lo}, {hi}], got {v!r}")
    return v


def check_dims(v: Any, key: str, where: str, limits: tuple[int, int, int]) -> tuple[int, int, int]:
    if v is None:
        raise SpecError(f"{where}: missing '{key}'")
    if is_int(v):
        v = [v]
    if not isinstance(v, list) or not 1 <= len(v) <= 3 or not all(is_int(x) for x in v):
        raise SpecError(f"{where}: '{key}' must be a list of 1 to 3 integers, got {v!r}")
    dims = list(v) + [1] * (3 - len(v))
    for axis, (d, lim) in enumerate(zip(dims, limits)):
        if d <= 0:
            raise SpecError(f"{where}: '{key}' dimension {'xyz'[axis]} must be positive, got {d}")
        if d > lim:
            raise SpecError(f"{where}: '{key}' dimension {'xyz'[axis]} = {d} exceeds the limit {lim}")
    return (dims[0], dims[1], dims[2])


def check_shape(v: Any, where: str) -> tuple[int, ...]:
    if is_int(v):
        v = [v]
    if not isinstance(v, list) or not v or not all(is_int(x) for x in v):
        raise SpecError(f"{where}: 'shape' must be a non-empty list of integers, got {v!r}")
    if any(x <= 0 for x in v):
        raise SpecError(f"{where}: 'shape' dimensions must be positive, got {v}")
    return tuple(v)


# The dtypes a buffer, scalar or struct field may have: what CuPy can allocate and draw into and
# the struct packer can write (numpy also knows float128, complex and datetime types; CuPy has no
# float128, and none of the others is a plain number).
DTYPES: tuple[str, ...] = tuple(name for name in PRIMITIVES if name != POINTER)


def check_dtype(name: str, where: str) -> str:
    """The numpy name of a dtype the spec may use (aliases such as 'f4' or 'double' allowed)."""
    try:
        dt = np.dtype(name)
    except (TypeError, ValueError):
        dt = None
    if dt is None or dt.byteorder == ">" or dt.name not in DTYPES:
        what = "unknown dtype" if dt is None else "dtype"
        raise SpecError(f"{where}: {what} {name!r}: a spec's dtypes are the ones CuPy draws: {', '.join(DTYPES)}")
    return dt.name


def finite(value: float) -> bool:
    """True for a number a float64 holds finitely (TOML integers may be of any size)."""
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def check_fits(value: Any, dtype: str, where: str, what: str) -> None:
    dt = np.dtype(dtype)
    if isinstance(value, bool):
        if dt.kind != "b":
            raise SpecError(f"{where}: {what} is a boolean but dtype is {dtype}")
        return
    if not isinstance(value, (int, float)):
        raise SpecError(f"{where}: {what} must be a number, got {value!r}")
    if dt.kind in "iu":
        info = np.iinfo(dt)
        whole = isinstance(value, int) or (math.isfinite(value) and value.is_integer())
        if not whole or not info.min <= value <= info.max:
            raise SpecError(f"{where}: {what} {value!r} does not fit {dtype} [{info.min}, {info.max}]")
    elif dt.kind == "b" and value not in (0, 1):
        raise SpecError(f"{where}: {what} {value!r} is not a boolean")
    elif dt.kind == "f" and (
        (not finite(value) and isinstance(value, int)) or (finite(value) and abs(float(value)) > np.finfo(dt).max)
    ):
        raise SpecError(f"{where}: {what} {value!r} is beyond the range of {dtype} (inf and nan may be given as such)")
