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
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from reorder.base.errors import SpecError
from timing import structs
from timing.inputs import load_hook
from timing.layout import StructType, size_align
from timing.params import (
    _BUFFER_KEYS,
    _HOOK_RE,
    _KERNEL_KEYS,
    _SCALAR_KEYS,
    DISTS,
    KINDS,
    MAX_BLOCK_DIMS,
    MAX_BUFFER_BYTES,
    MAX_DYNAMIC_SHARED,
    MAX_GRID_DIMS,
    MAX_THREADS_PER_BLOCK,
    POINTER_BYTES,
    ROLES,
    TOP_LEVEL_KEYS,
    BufferParam,
    Extra,
    Init,
    LaunchSpec,
    Param,
    ScalarParam,
    StructParam,
    check_dims,
    check_dtype,
    check_fits,
    check_shape,
    finite,
    int_in,
    no_unknown,
    required,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - 3.10
    import tomli as tomllib

# ---------------------------------------------------------------- loading

# The largest spec read: the project's largest is 5.3 KB (cfo_ta_descr, struct values and all);
# tomllib reads about 1.5 MB a second here, so a 50 MB file took 87 s before it was refused.
MAX_SPEC_BYTES = 2**20


def load_spec(path: str | Path) -> LaunchSpec:
    """Read and validate a spec file; every problem is one SpecError line. A hook must
    import here, up front, not in a GPU worker after the search has started."""
    from reorder.base.files import read_input

    path = Path(path)
    src = str(path)
    if not path.exists():
        raise SpecError(f"{src}: spec file not found")
    text = read_input(path, SpecError, limit=MAX_SPEC_BYTES)
    if path.suffix == ".json":  # the same document as JSON (e.g. a Triton build's manifest entry)
        raw = _json_document(text, src)
    else:
        try:
            raw = tomllib.loads(text.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise SpecError(f"{src}: not valid TOML: {e}") from None
        except RecursionError:  # tomllib recurses once per nesting level of arrays and inline tables
            raise SpecError(f"{src}: not valid TOML: nested too deeply") from None
    spec = parse_spec(raw, source=src)
    if spec.hook is not None:
        try:
            load_hook(spec.hook)
        except SpecError as e:
            raise SpecError(f"{src}: [kernel] {e}") from None
    return spec


def _json_document(text: bytes, src: str) -> dict[str, Any]:
    import json

    try:
        raw = json.loads(text.decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise SpecError(f"{src}: not valid JSON: {str(e)[:120]}") from None
    if not isinstance(raw, dict):
        raise SpecError(f"{src}: a spec is an object with [kernel] and [[param]]")
    return raw


def parse_spec(raw: dict[str, Any], source: str = "<spec>") -> LaunchSpec:
    """Validate an already-parsed TOML document (split out so tests need no files)."""
    kernel = raw.get("kernel")
    if not isinstance(kernel, dict):
        raise SpecError(f"{source}: missing [kernel] table")
    unknown = set(raw) - TOP_LEVEL_KEYS
    if unknown:
        raise SpecError(f"{source}: unknown top-level key(s) {sorted(unknown)}")
    no_unknown(kernel, _KERNEL_KEYS, f"{source}: [kernel]")
    where = f"{source}: [kernel]"
    name = required(kernel, "name", str, where)
    if not name:
        raise SpecError(f"{where}: 'name' is empty")
    grid = check_dims(kernel.get("grid"), "grid", where, MAX_GRID_DIMS)
    block = check_dims(kernel.get("block"), "block", where, MAX_BLOCK_DIMS)
    threads = block[0] * block[1] * block[2]
    if threads > MAX_THREADS_PER_BLOCK:
        raise SpecError(f"{where}: block {list(block)} has {threads} threads, more than {MAX_THREADS_PER_BLOCK}")
    shared = int_in(kernel.get("shared", 0), "shared", where, 0, MAX_DYNAMIC_SHARED)
    seed = int_in(kernel.get("seed", 0), "seed", where, 0, 2**63 - 1)
    hook = kernel.get("hook")
    if hook is not None and (not isinstance(hook, str) or not _HOOK_RE.match(hook)):
        raise SpecError(f"{where}: 'hook' must look like 'pkg.module:func', got {hook!r}")
    types = structs.parse_types(_tables(raw, "type", source), source)
    has_hook = hook is not None
    params = tuple(_parse_param(p, i, source, has_hook, types) for i, p in enumerate(_tables(raw, "param", source)))
    extra = tuple(_parse_extra(b, i, source, has_hook, types) for i, b in enumerate(_tables(raw, "buffer", source)))
    seen: set[str] = set()
    for p in (*params, *extra):
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
        size_align(spec.type_map, b.type)[0] * len(b.values) for b in spec.struct_buffers
    )
    if total > MAX_BUFFER_BYTES:
        raise SpecError(
            f"{source}: buffers of {total / 2**30:.3g} GiB in all; a spec may ask for at most "
            f"{MAX_BUFFER_BYTES // 2**30} GiB (timing.spec.MAX_BUFFER_BYTES)"
        )


def _parse_extra(raw: dict[str, Any], index: int, source: str, has_hook: bool, types: tuple[StructType, ...]) -> Extra:
    """A [[buffer]]: plain (dtype/shape/role, read like a buffer parameter) or holding structs
    (type/values, timing.structs)."""
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise SpecError(f"{source}: buffer #{index}: missing or empty 'name'")
    where = f"{source}: buffer '{name}'"
    if "type" in raw:
        return structs.parse_struct_buffer(raw, where, types)
    if "kind" in raw:
        raise SpecError(f"{where}: a [[buffer]] takes no 'kind' (it is always a buffer)")
    return _parse_param({**raw, "kind": "buffer"}, index, source, has_hook)  # type: ignore[return-value]


def _parse_param(
    raw: dict[str, Any], index: int, source: str, has_hook: bool, types: tuple[StructType, ...] = ()
) -> Param:
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise SpecError(f"{source}: param #{index}: missing or empty 'name'")
    where = f"{source}: param '{name}'"
    kind = required(raw, "kind", str, where)
    if kind not in KINDS:
        raise SpecError(f"{where}: kind must be one of {list(KINDS)}, got {kind!r}")
    if kind == "struct":
        return structs.parse_struct_param(raw, where, types)
    no_unknown(raw, _BUFFER_KEYS if kind == "buffer" else _SCALAR_KEYS, where)
    dtype = check_dtype(required(raw, "dtype", str, where), where)
    if kind == "scalar":
        value = raw.get("value")
        if value is None and not has_hook:
            raise SpecError(f"{where}: scalar needs a 'value' (or a kernel hook that supplies it)")
        if value is not None:
            check_fits(value, dtype, where, "value")
        return ScalarParam(name, dtype, value)
    shape = check_shape(raw.get("shape"), where)
    role = required(raw, "role", str, where)
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
        raise SpecError(
            f"{where}: shape {list(shape)} of {dtype} is {buffer.nbytes} bytes; a spec may ask for at "
            f"most {MAX_BUFFER_BYTES // 2**30} GiB (timing.spec.MAX_BUFFER_BYTES)"
        )
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
        raise SpecError(
            f"{where}: init dist '{dist}' takes {sorted(defaults) or 'no arguments'}, got {sorted(unknown)}"
        )
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
            if not finite(value):
                raise SpecError(f"{where}: init '{init.dist}' {key} must be finite, got {value!r}")
    if init.dist in ("integers", "index"):
        low, high = init.arg("low"), init.arg("high")
        if not (float(low).is_integer() and float(high).is_integer()):
            raise SpecError(f"{where}: init '{init.dist}' bounds must be integers")
        if high <= low:
            raise SpecError(f"{where}: init '{init.dist}' needs low < high, got [{low}, {high})")
        check_fits(low, dtype if kind in "iu" else "int64", where, "init low")
        check_fits(high - 1, dtype if kind in "iu" else "int64", where, "init high-1")
    elif init.dist in ("uniform",):
        low, high = init.arg("low"), init.arg("high")
        if high <= low:
            raise SpecError(f"{where}: init 'uniform' needs low < high")
        if not finite(high - low):
            raise SpecError(f"{where}: init 'uniform' range [{low}, {high}) is wider than a float64 holds")
    elif init.dist == "normal":
        if init.arg("std") < 0:
            raise SpecError(f"{where}: init 'normal' needs std >= 0")
    elif init.dist in ("arange", "permutation"):
        if kind in "iu" and size - 1 > np.iinfo(dtype).max:
            raise SpecError(f"{where}: {size} elements do not fit '{init.dist}' in {dtype}")
    elif init.dist == "const":
        check_fits(init.arg("value"), dtype, where, "init value")


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


def check_against_params(spec: LaunchSpec, param_sizes: Sequence[int], offsets: Sequence[int] | None = None) -> None:
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
