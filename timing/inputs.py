"""Reproducible host-side inputs for one launch spec, in pure numpy.

Input set i is drawn from numpy's default generator seeded with ``spec.seed + i``
so both kernels of a pair, in any process, see identical bytes. Each parameter k
draws from its own stream, seeded ``[spec.seed + i, k + 1]``, so editing one
parameter's distribution (or letting the hook supply it) leaves the others'
bytes unchanged; the hook gets ``default_rng(spec.seed + i)`` itself. Output-only
buffers are filled with the poison byte so a kernel that skips an element is
caught: the reference and candidate would have to skip the *same* elements.

A buffer of more than CHUNK elements draws chunk c from its own stream
``[spec.seed + i, k + 1, c]``, the chunks in threads (numpy's generators fill arrays
without the GIL): a 2048 x 32000 fp16 input is 65.5 M normal draws, about 1.5 s on one
core, paid for every fresh set of a re-check (20 sets per launch by default), and the
GPU host has cores to spare. The bytes depend only on the spec and the set, never on
the number of threads. Buffers up to CHUNK elements draw as one stream, as before.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from reorder.base.errors import SpecError
from timing.params import BufferParam, LaunchSpec, ScalarParam, StructBuffer, StructParam

POISON_BYTE = 0xFF  # all-ones: NaN for every float width, -1 / max for ints
CHUNK = 1 << 22  # elements per stream of a large buffer (module docstring)
CHUNKED = ("uniform", "normal", "integers", "index")  # draws that split into streams; not permutation


def poisoned(shape: tuple[int, ...], dtype: str | np.dtype) -> np.ndarray:
    """An array whose every byte is POISON_BYTE."""
    arr = np.empty(shape, dtype=dtype)
    arr.view(np.uint8).fill(POISON_BYTE)
    return arr


def draw_buffer(p: BufferParam, seed: list[int]) -> np.ndarray:
    """Fill one buffer per its init from its stream `seed` (a large buffer in chunks: module
    docstring); 'out' buffers get poison, 'zeros' buffers zeros."""
    if p.role == "out":
        return poisoned(p.shape, p.dtype)
    if p.role == "zeros":
        return np.zeros(p.shape, dtype=p.dtype)
    if p.init is None:
        raise SpecError(f"param '{p.name}': no 'init' and the hook did not supply it")
    if p.size > CHUNK and p.init.dist in CHUNKED:
        flat = _chunked(p, seed)
    else:
        flat = _draw(p, p.size, np.random.default_rng(seed))
    return np.ascontiguousarray(flat.astype(p.dtype, copy=False).reshape(p.shape))


def _chunked(p: BufferParam, seed: list[int]) -> np.ndarray:
    """The buffer's draws, chunk c from the stream [*seed, c], filled by a few threads."""
    from concurrent.futures import ThreadPoolExecutor

    starts = range(0, p.size, CHUNK)
    flat = np.empty(p.size, dtype=p.dtype)

    def fill(c: int) -> None:
        lo = starts[c]
        n = min(CHUNK, p.size - lo)
        flat[lo : lo + n] = _draw(p, n, np.random.default_rng([*seed, c]))

    with ThreadPoolExecutor(max_workers=min(len(starts), os.cpu_count() or 1, 16)) as pool:
        list(pool.map(fill, range(len(starts))))
    return flat


def _draw(p: BufferParam, n: int, rng: np.random.Generator) -> np.ndarray:
    """n values of the buffer's distribution from `rng` (not yet of its dtype)."""
    assert p.init is not None
    dist = p.init.dist
    flat: np.ndarray
    if dist == "uniform":
        flat = rng.uniform(p.init.arg("low"), p.init.arg("high"), n)
    elif dist == "normal":
        flat = rng.normal(p.init.arg("mean"), p.init.arg("std"), n)
    elif dist in ("integers", "index"):
        kind = np.dtype(p.dtype).kind
        draw_dtype = p.dtype if kind in "iu" else np.int64  # exact bounds even for uint64
        flat = rng.integers(int(p.init.arg("low")), int(p.init.arg("high")), n, dtype=draw_dtype)
    elif dist == "arange":
        flat = np.arange(n, dtype=np.int64)
    elif dist == "permutation":
        flat = rng.permutation(n)
    elif dist == "const":
        flat = np.full(n, p.init.arg("value"))
    else:  # the loader already refused it; keep the error loud if a spec is built by hand
        raise SpecError(f"param '{p.name}': unknown init dist {dist!r}")
    return flat


def load_hook(path: str) -> Callable[..., dict[str, Any]]:
    """Import 'pkg.module:func'."""
    module_name, _, attr = path.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except Exception as e:  # noqa: BLE001 - whatever the user's module raises on import is one line
        raise SpecError(f"hook {path!r} cannot be imported: {type(e).__name__}: {e}") from None
    if not callable(obj):
        raise SpecError(f"hook {path!r} is not callable")
    return obj


def _coerce(spec: LaunchSpec, name: str, value: Any) -> np.ndarray | np.generic:
    """Check a hook-supplied value against its parameter and convert it to the exact dtype."""
    try:
        p = spec.param(name)
    except KeyError:
        raise SpecError(f"{spec.source}: hook {spec.hook!r} returned unknown param '{name}'") from None
    where = f"{spec.source}: hook value for param '{name}'"
    if isinstance(p, (StructParam, StructBuffer)):
        raise SpecError(f"{where}: structs are built from the spec's values, the hook must not supply them")
    if isinstance(p, ScalarParam):
        arr = np.asarray(value)
        if arr.ndim != 0:
            raise SpecError(f"{where}: scalar param got an array of shape {arr.shape}")
        return np.dtype(p.dtype).type(arr.item())
    if p.role in ("out", "zeros"):
        raise SpecError(f"{where}: '{p.role}' buffers are filled by the tool, the hook must not fill them")
    arr = np.asarray(value)
    if arr.shape != p.shape:
        raise SpecError(f"{where}: shape {arr.shape}, spec says {p.shape}")
    if arr.dtype != np.dtype(p.dtype):
        raise SpecError(f"{where}: dtype {arr.dtype}, spec says {p.dtype}")
    return np.ascontiguousarray(arr).copy()


def draw_inputs(spec: LaunchSpec, set_index: int) -> dict[str, np.ndarray | np.generic]:
    """All parameter values for input set `set_index`, in parameter order, then the plain
    [[buffer]]s (each drawing from stream len(params) + its index + 1, so adding a buffer
    leaves the parameters' bytes unchanged).

    Buffers become C-contiguous numpy arrays, scalars numpy scalars of the exact
    dtype (what cupy needs to pass them by value with the right width). Struct parameters
    and struct buffers are not drawn: timing.gpu builds them once every buffer has an
    address.
    """
    if set_index < 0:
        raise ValueError("set_index must be >= 0")
    base = spec.seed + set_index
    supplied: dict[str, Any] = {}
    if spec.hook is not None:
        try:
            result = load_hook(spec.hook)(spec, np.random.default_rng(base))
        except SpecError:
            raise
        except Exception as e:  # noqa: BLE001 - the user's hook failing is one line, not a crashed worker
            raise SpecError(f"{spec.source}: hook {spec.hook!r} raised {type(e).__name__}: {e}") from None
        if not isinstance(result, dict):
            raise SpecError(f"{spec.source}: hook {spec.hook!r} must return a dict, got {type(result).__name__}")
        supplied = {name: _coerce(spec, name, v) for name, v in result.items()}
    values: dict[str, np.ndarray | np.generic] = {}
    for k, p in enumerate(spec.params + spec.extra):
        if isinstance(p, (StructParam, StructBuffer)):
            continue
        if p.name in supplied:
            values[p.name] = supplied[p.name]
        elif isinstance(p, ScalarParam):
            if p.value is None:
                raise SpecError(f"{spec.source}: param '{p.name}': no 'value' and the hook did not supply it")
            values[p.name] = np.dtype(p.dtype).type(p.value)
        else:
            try:
                values[p.name] = draw_buffer(p, [base, k + 1])
            except SpecError as e:
                raise SpecError(f"{spec.source}: {e}") from None
    return values
