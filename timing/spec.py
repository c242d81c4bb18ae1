"""Launch specs: how to call one kernel, read from a small TOML file.

A cubin says nothing about how its kernel should be launched or what its inputs
mean, so checking and timing need this side file. It is validated up front, with
one-line errors naming the file and the parameter, because a wrong spec silently
produces meaningless timings (or a fault that looks like a bad candidate).

Format::

    [kernel]
    name = "rmsnorm_f32"      # symbol name in the cubin
    grid = [16, 1, 1]         # 1..3 positive ints (missing dims are 1)
    block = [256, 1, 1]       # 1..3 positive ints, at most 1024 threads in all
    shared = 0                # dynamic shared memory bytes (optional, default 0)
    seed = 1234               # base seed; input set i uses seed + i (optional, default 0)
    hook = "pkg.module:func"  # optional: func(spec, rng) -> {param name: array | scalar}

    [[param]]                 # one table per kernel parameter, in parameter order
    name = "x"
    kind = "buffer"           # buffer | scalar
    dtype = "float32"         # numpy dtype name (bool, ints, uints, floats)
    shape = [16, 4096]        # positive ints
    role = "in"               # in | out | inout
    init = { dist = "normal", mean = 0.0, std = 1.0 }

    [[param]]
    name = "n"
    kind = "scalar"
    dtype = "int32"
    value = 4096

Distributions for ``init`` (keys other than ``dist`` are its arguments):

- ``uniform``  low=0.0, high=1.0       floats in [low, high), cast to dtype
- ``normal``   mean=0.0, std=1.0       cast to dtype
- ``integers`` low=0, high (required)  ints in [low, high); ``index`` is an alias
- ``arange``                           0, 1, 2, ... in flat order
- ``permutation``                      a random permutation of 0..size-1
- ``const``    value (required)

Rules: ``out`` buffers take no ``init`` (they are filled with the poison byte
0xFF before every run, see timing.check); ``in``/``inout`` buffers and scalars
need an ``init``/``value`` unless the hook supplies them. Values the hook
returns take precedence over the table; they must match the declared dtype and
shape exactly (no silent casts). Seeding is described in timing.inputs.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence, Union

import numpy as np

from reorder.base.errors import SpecError
from timing.layout import FieldValue, StructType, StructValue, size_align

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - 3.10
    import tomli as tomllib  # type: ignore[no-redef]

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
TOP_LEVEL_KEYS = {"kernel", "param", "type", "buffer", "grid_sweep"}  # grid_sweep: read by benchmarks.kernels.sweep
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


Param = Union[BufferParam, ScalarParam, StructParam]
Extra = Union[BufferParam, StructBuffer]  # a [[buffer]]: device memory that is not itself a parameter


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


# ---------------------------------------------------------------- loading


def load_spec(path: str | Path) -> LaunchSpec:
    """Read and validate a spec file; every problem is one SpecError line. A hook must
    import here, up front, not in a GPU worker after the search has started."""
    from reorder.base.files import read_input

    path = Path(path)
    src = str(path)
    if not path.exists():
        raise SpecError(f"{src}: spec file not found")
    try:
        raw = tomllib.loads(read_input(path, SpecError).decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise SpecError(f"{src}: not valid TOML: {e}") from None
    except RecursionError:  # tomllib recurses once per nesting level of arrays and inline tables
        raise SpecError(f"{src}: not valid TOML: nested too deeply") from None
    spec = parse_spec(raw, source=src)
    if spec.hook is not None:
        from timing.inputs import load_hook

        try:
            load_hook(spec.hook)
        except SpecError as e:
            raise SpecError(f"{src}: [kernel] {e}") from None
    return spec


def parse_spec(raw: dict[str, Any], source: str = "<spec>") -> LaunchSpec:
    """Validate an already-parsed TOML document (split out so tests need no files)."""
    kernel = raw.get("kernel")
    if not isinstance(kernel, dict):
        raise SpecError(f"{source}: missing [kernel] table")
    extra = set(raw) - TOP_LEVEL_KEYS
    if extra:
        raise SpecError(f"{source}: unknown top-level key(s) {sorted(extra)}")
    _no_unknown(kernel, _KERNEL_KEYS, f"{source}: [kernel]")
    where = f"{source}: [kernel]"
    name = _required(kernel, "name", str, where)
    if not name:
        raise SpecError(f"{where}: 'name' is empty")
    grid = _dims(kernel.get("grid"), "grid", where, MAX_GRID_DIMS)
    block = _dims(kernel.get("block"), "block", where, MAX_BLOCK_DIMS)
    threads = block[0] * block[1] * block[2]
    if threads > MAX_THREADS_PER_BLOCK:
        raise SpecError(f"{where}: block {list(block)} has {threads} threads, more than {MAX_THREADS_PER_BLOCK}")
    shared = _int_in(kernel.get("shared", 0), "shared", where, 0, MAX_DYNAMIC_SHARED)
    seed = _int_in(kernel.get("seed", 0), "seed", where, 0, 2**63 - 1)
    hook = kernel.get("hook")
    if hook is not None and (not isinstance(hook, str) or not _HOOK_RE.match(hook)):
        raise SpecError(f"{where}: 'hook' must look like 'pkg.module:func', got {hook!r}")
    from timing import structs  # the struct forms build on this module's field checks

    types = structs.parse_types(_tables(raw, "type", source), source)
    has_hook = hook is not None
    params = tuple(_parse_param(p, i, source, has_hook, types)
                   for i, p in enumerate(_tables(raw, "param", source)))
    extra = tuple(structs.parse_extra(b, i, source, has_hook, types)
                  for i, b in enumerate(_tables(raw, "buffer", source)))
    seen: set[str] = set()
    for p in params + extra:
        if p.name in seen:
            raise SpecError(f"{source}: param '{p.name}': name used twice")
        seen.add(p.name)
    spec = LaunchSpec(name, grid, block, params, shared, seed, hook, source, types, extra)
    _check_total_size(spec, source)
    structs.check_references(spec)
    return spec


def _tables(raw: dict[str, Any], key: str, source: str) -> list[dict[str, Any]]:
    """An array of tables ([[key]]), or [] when absent."""
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(p, dict) for p in value):
        raise SpecError(f"{source}: '{key}' must be an array of tables ([[{key}]])")
    return value


def _check_total_size(spec: LaunchSpec, source: str) -> None:
    total = sum(p.nbytes for p in spec.buffers) + sum(
        size_align(spec.type_map, b.type)[0] * len(b.values) for b in spec.struct_buffers)
    if total > MAX_BUFFER_BYTES:
        raise SpecError(f"{source}: buffers of {total / 2**30:.3g} GiB in all; a spec may ask for at most "
                        f"{MAX_BUFFER_BYTES // 2**30} GiB (timing.spec.MAX_BUFFER_BYTES)")


def _parse_param(raw: dict[str, Any], index: int, source: str, has_hook: bool,
                 types: tuple[StructType, ...] = ()) -> Param:
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise SpecError(f"{source}: param #{index}: missing or empty 'name'")
    where = f"{source}: param '{name}'"
    kind = _required(raw, "kind", str, where)
    if kind not in KINDS:
        raise SpecError(f"{where}: kind must be one of {list(KINDS)}, got {kind!r}")
    if kind == "struct":
        from timing import structs

        return structs.parse_struct_param(raw, where, types)
    _no_unknown(raw, _BUFFER_KEYS if kind == "buffer" else _SCALAR_KEYS, where)
    dtype = _dtype(_required(raw, "dtype", str, where), where)
    if kind == "scalar":
        value = raw.get("value")
        if value is None and not has_hook:
            raise SpecError(f"{where}: scalar needs a 'value' (or a kernel hook that supplies it)")
        if value is not None:
            _check_fits(value, dtype, where, "value")
        return ScalarParam(name, dtype, value)
    shape = _shape(raw.get("shape"), where)
    role = _required(raw, "role", str, where)
    if role not in ROLES:
        raise SpecError(f"{where}: role must be one of {list(ROLES)}, got {role!r}")
    init_raw = raw.get("init")
    if role == "out" and init_raw is not None:
        raise SpecError(f"{where}: an 'out' buffer takes no 'init' (it is poisoned before every run)")
    if role == "zeros" and init_raw is not None:
        raise SpecError(f"{where}: a 'zeros' buffer takes no 'init' (it is cleared before every launch)")
    if role not in ("out", "zeros") and init_raw is None and not has_hook:
        raise SpecError(f"{where}: '{role}' buffer needs an 'init' (or a kernel hook that supplies it)")
    buffer = BufferParam(name, dtype, shape, role)
    if buffer.nbytes > MAX_BUFFER_BYTES:
        raise SpecError(f"{where}: shape {list(shape)} of {dtype} is {buffer.nbytes} bytes; a spec may ask for at "
                        f"most {MAX_BUFFER_BYTES // 2**30} GiB (timing.spec.MAX_BUFFER_BYTES)")
    init = None if init_raw is None else _init(init_raw, dtype, shape, where)
    return BufferParam(name, dtype, shape, role, init)


def _init(raw: Any, dtype: str, shape: tuple[int, ...], where: str) -> Init:
    if not isinstance(raw, dict):
        raise SpecError(f"{where}: 'init' must be a table like {{ dist = \"normal\" }}")
    dist = raw.get("dist")
    if dist not in DISTS:
        raise SpecError(f"{where}: init dist must be one of {sorted(DISTS)}, got {dist!r}")
    defaults = DISTS[dist]
    unknown = set(raw) - {"dist"} - set(defaults)
    if unknown:
        raise SpecError(f"{where}: init dist '{dist}' takes {sorted(defaults) or 'no arguments'}, got {sorted(unknown)}")
    args: list[tuple[str, float]] = []
    for key, default in defaults.items():
        value = raw.get(key, default)
        if value is None:
            raise SpecError(f"{where}: init dist '{dist}' needs '{key}'")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SpecError(f"{where}: init '{key}' must be a number, got {value!r}")
        args.append((key, value))
    init = Init(dist, tuple(args))
    _check_init_range(init, dtype, math.prod(shape), where)
    return init


def _check_init_range(init: Init, dtype: str, size: int, where: str) -> None:
    """Refuse draws that cannot be made or represented (numpy would raise OverflowError or
    ValueError when the inputs are drawn, on the GPU host, after the search has started)."""
    kind = np.dtype(dtype).kind
    if init.dist not in ("const",):
        for key, value in init.args:
            if not _finite(value):
                raise SpecError(f"{where}: init '{init.dist}' {key} must be finite, got {value!r}")
    if init.dist in ("integers", "index"):
        low, high = init.arg("low"), init.arg("high")
        if not (float(low).is_integer() and float(high).is_integer()):
            raise SpecError(f"{where}: init '{init.dist}' bounds must be integers")
        if high <= low:
            raise SpecError(f"{where}: init '{init.dist}' needs low < high, got [{low}, {high})")
        _check_fits(low, dtype if kind in "iu" else "int64", where, "init low")
        _check_fits(high - 1, dtype if kind in "iu" else "int64", where, "init high-1")
    elif init.dist in ("uniform",):
        low, high = init.arg("low"), init.arg("high")
        if high <= low:
            raise SpecError(f"{where}: init 'uniform' needs low < high")
        if not _finite(high - low):
            raise SpecError(f"{where}: init 'uniform' range [{low}, {high}) is wider than a float64 holds")
    elif init.dist == "normal":
        if init.arg("std") < 0:
            raise SpecError(f"{where}: init 'normal' needs std >= 0")
    elif init.dist in ("arange", "permutation"):
        if kind in "iu" and size - 1 > np.iinfo(dtype).max:
            raise SpecError(f"{where}: {size} elements do not fit '{init.dist}' in {dtype}")
    elif init.dist == "const":
        _check_fits(init.arg("value"), dtype, where, "init value")


# ---------------------------------------------------------------- field helpers


def _no_unknown(raw: dict[str, Any], allowed: set[str], where: str) -> None:
    unknown = set(raw) - allowed
    if unknown:
        raise SpecError(f"{where}: unknown key(s) {sorted(unknown)} (allowed: {sorted(allowed)})")


def _required(raw: dict[str, Any], key: str, typ: type, where: str) -> Any:
    if key not in raw:
        raise SpecError(f"{where}: missing '{key}'")
    value = raw[key]
    if not isinstance(value, typ) or isinstance(value, bool) and typ is not bool:
        raise SpecError(f"{where}: '{key}' must be a {typ.__name__}, got {value!r}")
    return value


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _int_in(v: Any, key: str, where: str, lo: int, hi: int) -> int:
    if not _is_int(v) or not lo <= v <= hi:
        raise SpecError(f"{where}: '{key}' must be an integer in [{lo}, {hi}], got {v!r}")
    return v


def _dims(v: Any, key: str, where: str, limits: tuple[int, int, int]) -> tuple[int, int, int]:
    if v is None:
        raise SpecError(f"{where}: missing '{key}'")
    if _is_int(v):
        v = [v]
    if not isinstance(v, list) or not 1 <= len(v) <= 3 or not all(_is_int(x) for x in v):
        raise SpecError(f"{where}: '{key}' must be a list of 1 to 3 integers, got {v!r}")
    dims = list(v) + [1] * (3 - len(v))
    for axis, (d, lim) in enumerate(zip(dims, limits)):
        if d <= 0:
            raise SpecError(f"{where}: '{key}' dimension {'xyz'[axis]} must be positive, got {d}")
        if d > lim:
            raise SpecError(f"{where}: '{key}' dimension {'xyz'[axis]} = {d} exceeds the limit {lim}")
    return (dims[0], dims[1], dims[2])


def _shape(v: Any, where: str) -> tuple[int, ...]:
    if _is_int(v):
        v = [v]
    if not isinstance(v, list) or not v or not all(_is_int(x) for x in v):
        raise SpecError(f"{where}: 'shape' must be a non-empty list of integers, got {v!r}")
    if any(x <= 0 for x in v):
        raise SpecError(f"{where}: 'shape' dimensions must be positive, got {v}")
    return tuple(v)


def _dtype(name: str, where: str) -> str:
    try:
        dt = np.dtype(name)
    except TypeError:
        raise SpecError(f"{where}: unknown dtype {name!r}") from None
    if dt.kind not in "biuf" or dt.byteorder == ">":
        raise SpecError(f"{where}: dtype {name!r} is not a plain numeric type (bool, int, uint, float)")
    return dt.name


def _finite(value: float) -> bool:
    """True for a number a float64 holds finitely (TOML integers may be of any size)."""
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _check_fits(value: Any, dtype: str, where: str, what: str) -> None:
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
    elif dt.kind == "f" and (not _finite(value) and isinstance(value, int) or
                             _finite(value) and abs(float(value)) > np.finfo(dt).max):
        raise SpecError(f"{where}: {what} {value!r} is beyond the range of {dtype} (inf and nan may be given "
                        "as such)")


# ---------------------------------------------------------------- cubin cross-check


def param_size(p: Param, types: dict[str, StructType] | None = None) -> int:
    """Bytes the parameter occupies in the kernel's parameter buffer."""
    return _size_align(p, types or {})[0]


def _size_align(p: Param, types: dict[str, StructType]) -> tuple[int, int]:
    if isinstance(p, BufferParam):
        return POINTER_BYTES, POINTER_BYTES
    if isinstance(p, StructParam):
        return size_align(types, p.type)
    size = np.dtype(p.dtype).itemsize
    return size, size


def param_offsets(spec: LaunchSpec) -> tuple[int, ...]:
    """Where each parameter starts in the parameter buffer, by the C rules (each aligned to
    its own alignment, in order): what the cubin's KPARAM_INFO offsets must say."""
    types, cursor, out = spec.type_map, 0, []
    for p in spec.params:
        size, align = _size_align(p, types)
        cursor = -(-cursor // align) * align
        out.append(cursor)
        cursor += size
    return tuple(out)


def _what(p: Param, types: dict[str, StructType]) -> str:
    if isinstance(p, BufferParam):
        return "buffer (pointer)"
    if isinstance(p, StructParam):
        from timing.layout import describe_layout

        return describe_layout(types, p.type)
    return f"scalar {p.dtype}"


def check_against_params(spec: LaunchSpec, param_sizes: Sequence[int],
                         offsets: Sequence[int] | None = None) -> None:
    """Refuse a spec whose parameter list disagrees with the cubin's KPARAM_INFO sizes (and,
    when given, offsets: a struct laid out differently from the compiler's would pass
    fields at the wrong bytes even when its total size happens to agree).

    A mismatch here would make the launch read garbage arguments, which shows up
    later as a fault or wrong output blamed on the candidate.
    """
    sizes = list(param_sizes)
    if len(sizes) != len(spec.params):
        raise SpecError(
            f"{spec.source}: kernel '{spec.name}' takes {len(sizes)} parameter(s) "
            f"(sizes {sizes}) but the spec lists {len(spec.params)}"
        )
    types = spec.type_map
    wanted_offsets = param_offsets(spec)
    for i, (p, size) in enumerate(zip(spec.params, sizes)):
        want = param_size(p, types)
        at = "" if offsets is None else f" at offset {offsets[i]}"
        if want != size:
            raise SpecError(
                f"{spec.source}: param '{p.name}' (#{i}): spec says {_what(p, types)} = {want} bytes, "
                f"kernel parameter is {size} bytes{at}"
            )
        if offsets is not None and wanted_offsets[i] != offsets[i]:
            raise SpecError(
                f"{spec.source}: param '{p.name}' (#{i}): spec's layout puts {_what(p, types)} at offset "
                f"{wanted_offsets[i]}, kernel parameter is at offset {offsets[i]} ({size} bytes)"
            )


def draw_inputs(spec: LaunchSpec, set_index: int) -> dict[str, np.ndarray | np.generic]:
    """Host values for input set `set_index` (see timing.inputs; re-exported for one entry point)."""
    from timing.inputs import draw_inputs as _draw

    return _draw(spec, set_index)
