"""A launch spec from a compiled Triton kernel and its live arguments: no TOML by hand.

reorder checks and times a cubin through a `timing.spec.LaunchSpec` (kernel name, grid,
block, dynamic shared memory, one entry per kernel parameter with the inputs to draw). For
a Triton kernel everything in it follows from the kernel's metadata and the arguments it
was called with (facts from Triton 3.2-3.9's launcher, checked against 3.6 and 3.9):

- parameters: the non-constexpr arguments in order (the JIT already turned an int equal to
  1 and None into constexprs, which the cubin does not take), then `global_scratch` (3.3+)
  and `profile_scratch` (3.5+) pointers, NULL when the kernel needs none, else a buffer of
  grid x num_ctas x the size the metadata names;
- block: 32 x num_warps threads (the cubin's `.reqntid` says the same);
- shared: all of it dynamic, `metadata.shared` bytes (reorder's loader opts in above 48 KiB);
- grid: the one given, or a callable of the bound arguments (as Triton calls it);
- clusters (num_ctas > 1), cooperative and PDL launches, TMA descriptors and tuple arguments
  are refused in one line: reorder's loader cannot launch them.

Inputs are drawn fresh for every check (that is the point of a byte check), shaped like the
live tensors: floats from N(0, 1), integers uniformly between the live tensor's minimum and
maximum (indices stay in range), bf16 as bit patterns of values in [1, 2); `inits` names
another distribution per argument. A 64-bit integer tensor whose every value lies between
2**32 and 2**48 is a table of device addresses (Triton's grouped GEMM passes its matrices so):
values drawn between two addresses point anywhere, so it is refused in one line (the user
may still give inits for it). Buffers named in `outputs` are poisoned before every run;
every other buffer is an input that is compared too (a kernel may write it; each run gets its
own copy, as an autotuner's `restore_value` gives each timing run), and buffers named in
`zeros` are cleared before every launch (its `reset_to_zero`). Scalars keep
their live values, since Triton may have specialized the code on them.

`spec_toml` writes the spec in the format `reorder optimize --launch` reads.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from reorder.base.errors import SpecError
from timing.spec import MAX_DYNAMIC_SHARED, BufferParam, Init, LaunchSpec, Param, ScalarParam, parse_spec
from timing.spectoml import spec_dict
from timing.spectoml import spec_toml as _spec_toml

GLOBAL_SCRATCH = "triton_global_scratch"
PROFILE_SCRATCH = "triton_profile_scratch"
SCRATCH_ALIGN = 256  # what cupy's allocator guarantees
# Triton element type -> numpy dtype of a buffer (bf16 is carried as its 16-bit pattern)
BUFFER_DTYPES = {
    "fp16": "float16",
    "bf16": "uint16",
    "fp32": "float32",
    "fp64": "float64",
    "i1": "int8",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "u1": "uint8",
    "u8": "uint8",
    "u16": "uint16",
    "u32": "uint32",
    "u64": "uint64",
}
# Triton scalar type -> numpy dtype of the by-value parameter: Triton's launcher widths are a
# buffer element's, and it also spells fp32 'f32'
SCALAR_DTYPES = {**BUFFER_DTYPES, "f32": "float32"}
BF16_ONE_TO_TWO = (0x3F80, 0x4000)  # bit patterns of the bf16 values in [1, 2)
ADDRESSES = (2**32, 2**48)  # a 64-bit tensor whose every value lies here holds device addresses (user space)

Grid = Sequence[int] | Callable[[Mapping[str, Any]], Sequence[int]]


def grid_of(grid: Grid, values: Mapping[str, Any]) -> tuple[int, int, int]:
    """Triton's grid (a tuple of 1-3 ints, or a callable of the bound arguments) as 3 dims."""
    found = grid(values) if callable(grid) else grid
    raw = found if isinstance(found, (tuple, list)) else (found,)
    try:  # any integer type (numpy's, torch's) as Triton takes it; not a float, a string or a bool
        dims = () if any(isinstance(d, bool) for d in raw) else tuple(operator.index(d) for d in raw)
    except TypeError:
        dims = ()
    if not 1 <= len(dims) <= 3 or any(d < 1 for d in dims):
        raise SpecError(f"grid must be 1 to 3 positive ints (or a callable giving them), got {found!r}")
    out = dims + (1,) * (3 - len(dims))
    return (out[0], out[1], out[2])


def check_launchable(metadata: Any) -> None:
    """Refuse what reorder's loader cannot launch, naming it."""
    if getattr(metadata, "num_ctas", 1) != 1:
        raise SpecError(
            f"{metadata.name}: num_ctas = {metadata.num_ctas} needs a cluster launch, which reorder's "
            "timing layer does not make; tune with num_ctas=1"
        )
    for flag in ("launch_cooperative_grid", "launch_pdl"):
        if getattr(metadata, flag, False):
            raise SpecError(f"{metadata.name}: {flag} is set; reorder's timing layer launches plainly")
    if getattr(metadata, "tensordesc_meta", None):
        raise SpecError(f"{metadata.name}: TMA tensor descriptors as arguments are not supported")
    if not 0 <= metadata.shared <= MAX_DYNAMIC_SHARED:
        raise SpecError(f"{metadata.name}: {metadata.shared} bytes of shared memory, more than {MAX_DYNAMIC_SHARED}")


def _element(ty: str) -> str:
    return ty.lstrip("*").removeprefix("k")  # "*kfp32" is a pointer to constant fp32


def tensor_extent(value: Any) -> tuple[tuple[int, ...], bool]:
    """(shape to allocate, contiguous): the tensor's own shape when it is contiguous, else
    the number of elements from its first to its last (the kernel indexes from the base
    pointer with the strides it is given)."""
    shape = tuple(int(d) for d in getattr(value, "shape", ()))
    stride = getattr(value, "stride", None)
    strides = tuple(int(s) for s in stride()) if callable(stride) else None
    if any(d == 0 for d in shape):
        return (1,), True
    if strides is None or _contiguous(shape, strides):
        return (shape or (1,)), True
    if any(s < 0 for s in strides):
        raise SpecError("a tensor with negative strides cannot be reproduced")
    return (1 + sum((d - 1) * s for d, s in zip(shape, strides)),), False


def _contiguous(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    expect = 1
    for d, s in zip(reversed(shape), reversed(strides)):
        if d != 1 and s != expect:
            return False
        expect *= d
    return True


def default_init(name: str, element: str, value: Any) -> Init:
    """How to draw fresh contents for a buffer like `value` (see the module docstring)."""
    if element == "bf16":
        return Init("integers", (("low", BF16_ONE_TO_TWO[0]), ("high", BF16_ONE_TO_TWO[1])))
    if element.startswith("fp"):
        return Init("normal", (("mean", 0.0), ("std", 1.0)))
    if element in ("i1", "u1"):
        return Init("integers", (("low", 0), ("high", 2)))
    try:
        low, high = int(value.min()), int(value.max())
    except Exception as exc:  # noqa: BLE001 - any tensor library; the user can say instead
        raise SpecError(
            f"argument '{name}': cannot read the live tensor's range ({type(exc).__name__}: {exc}); "
            f"give inits={{'{name}': {{'dist': 'integers', 'low': ..., 'high': ...}}}}"
        ) from None
    if element in ("i64", "u64") and ADDRESSES[0] <= low and high < ADDRESSES[1]:
        raise SpecError(
            f"argument '{name}': its values (0x{low:x} to 0x{high:x}) look like device addresses (a table of "
            "pointers): fresh values would point anywhere; give inits for it if they are not addresses"
        )
    return Init("integers", (("low", low), ("high", high + 1)))


def _init_from(name: str, raw: Mapping[str, Any], dtype: str, shape: tuple[int, ...]) -> Init:
    """A user's init table, validated exactly as a TOML spec's would be."""
    spec = parse_spec(
        {
            "kernel": {"name": "k", "grid": [1], "block": [1]},
            "param": [
                {"name": name, "kind": "buffer", "dtype": dtype, "shape": list(shape), "role": "in", "init": dict(raw)}
            ],
        },
        source=f"inits['{name}']",
    )
    return spec.params[0].init  # type: ignore[union-attr,return-value]


def buffer_param(
    name: str, ty: str, value: Any, outputs: Sequence[str], inits: Mapping[str, Any], zeros: Sequence[str] = ()
) -> BufferParam:
    element = _element(ty)
    dtype = BUFFER_DTYPES.get(element)
    if dtype is None:
        raise SpecError(
            f"argument '{name}': pointer to {element} is not supported (supported: {', '.join(sorted(BUFFER_DTYPES))})"
        )
    shape, _ = tensor_extent(value)
    if name in zeros:
        return BufferParam(name, dtype, shape, "zeros")
    if name in outputs:
        return BufferParam(name, dtype, shape, "out")
    init = _init_from(name, inits[name], dtype, shape) if name in inits else default_init(name, element, value)
    return BufferParam(name, dtype, shape, "inout", init)


def bf16_bits(value: float) -> int:
    """The bf16 bit pattern of `value`, rounded to nearest even (as Triton packs a bf16 scalar)."""
    bits = int(np.array(value, dtype=np.float32).view(np.uint32))
    if math.isnan(value):
        return (bits >> 16) | 0x40
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


def scalar_param(name: str, ty: str, value: Any) -> ScalarParam:
    dtype = SCALAR_DTYPES.get(ty)
    if dtype is None:
        raise SpecError(f"argument '{name}': scalar type {ty} is not supported")
    if ty == "bf16":
        return ScalarParam(name, dtype, bf16_bits(float(value)))
    if dtype.startswith("float"):
        return ScalarParam(name, dtype, float(value))
    return ScalarParam(name, dtype, int(value))


def scratch_params(metadata: Any, grid: tuple[int, int, int]) -> tuple[Param, ...]:
    """The trailing scratch pointers the cubin takes in this Triton (NULL when unused)."""
    out: list[Param] = []
    for name, size_key, align_key in (
        (GLOBAL_SCRATCH, "global_scratch_size", "global_scratch_align"),
        (PROFILE_SCRATCH, "profile_scratch_size", "profile_scratch_align"),
    ):
        if not hasattr(metadata, size_key):
            continue  # a Triton before this parameter existed
        size = int(getattr(metadata, size_key) or 0)
        if size == 0:
            out.append(ScalarParam(name, "uint64", 0))
            continue
        if int(getattr(metadata, align_key, 1) or 1) > SCRATCH_ALIGN:
            raise SpecError(f"{metadata.name}: {size_key} needs alignment above {SCRATCH_ALIGN} bytes")
        total = math.prod(grid) * getattr(metadata, "num_ctas", 1) * size
        out.append(BufferParam(name, "uint8", (total,), "out"))
    return tuple(out)


def launch_spec(
    kernel: Any,
    values: Mapping[str, Any],
    grid: Grid,
    *,
    outputs: Sequence[str] = (),
    inits: Mapping[str, Mapping[str, Any]] | None = None,
    seed: int = 0,
    signature: Mapping[str, str] | None = None,
    zeros: Sequence[str] = (),
) -> LaunchSpec:
    """The LaunchSpec of a compiled Triton kernel called with `values` (every parameter by
    name, as reorder.triton.compile binds them). `signature` (name -> Triton type) defaults
    to the kernel's source signature. `zeros` names buffers cleared before every launch (an
    autotuner's `reset_to_zero`: a kernel that accumulates into them)."""
    metadata = kernel.metadata
    check_launchable(metadata)
    signature = dict(signature if signature is not None else kernel.src.signature)
    inits = dict(inits or {})
    unknown = (set(outputs) | set(inits) | set(zeros)) - set(signature)
    if unknown:
        raise SpecError(f"{metadata.name}: outputs/inits/zeros name no parameter: {sorted(unknown)}")
    dims = grid_of(grid, values)
    params: list[Param] = []
    for name, ty in signature.items():
        if ty == "constexpr":
            continue
        if not isinstance(ty, str) or ty.startswith(("tensordesc", "nvTmaDesc")):
            raise SpecError(
                f"{metadata.name}: argument '{name}' is a {'tuple' if isinstance(ty, tuple) else ty}; "
                "reorder launches pointers and scalars only"
            )
        if name not in values:
            raise SpecError(f"{metadata.name}: no value for parameter '{name}'")
        if ty.startswith("*"):
            params.append(buffer_param(name, ty, values[name], outputs, inits, zeros))
        elif name in outputs or name in inits or name in zeros:
            raise SpecError(f"{metadata.name}: '{name}' is a scalar ({ty}), not a buffer")
        else:
            params.append(scalar_param(name, ty, values[name]))
    params += scratch_params(metadata, dims)
    spec = LaunchSpec(
        metadata.name,
        dims,
        (32 * metadata.num_warps, 1, 1),
        tuple(params),
        metadata.shared,
        seed,
        None,
        f"<triton {metadata.name}>",
    )
    return parse_spec(spec_dict(spec), source=spec.source)  # the same validation a TOML spec gets


# ---------------------------------------------------------------- TOML


def spec_toml(spec: LaunchSpec) -> str:
    """The spec as a launch-spec file (`reorder optimize/check/time --launch`)."""
    return _spec_toml(spec, header=f"launch of Triton kernel {spec.name}, written by reorder.triton.launch")
