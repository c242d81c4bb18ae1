"""Device side of struct specs: descriptors filled after allocation, structs packed by value,
and per-launch copies of `zeros` counters for timing.

Order matters: a struct's pointer fields hold device addresses, so every plain buffer and
every struct buffer is allocated first, and only then are the struct buffers' bytes and
the struct parameters packed (timing.layout.pack with the real addresses).

A struct buffer is compared after a run in a symbolic form: each pointer slot that still
holds the address uploaded is replaced by (buffer ordinal + 1) << 40 | byte offset, which is
the same for the reference and the candidate although their buffers sit at different
addresses; a slot the kernel overwrote keeps its raw bytes (and then differs, as it should
be noticed).

`zeros` buffers are counters a kernel expects cleared before every launch (a last-block
ticket it never resets). A checked launch gets fresh buffers anyway. A timed replay of R
launches in one CUDA graph cannot clear between launches without timing the clear, so
each of the R launches gets its own copy of every zeros buffer (and of every struct buffer
and struct parameter that points at one, transitively), all copies in one allocation that
a single memset clears before the replay, outside the event pair. Both kernels of a pair
use the same copies, so the clear costs neither side and their addresses agree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from timing.layout import Pointer, pack, pack_array, pointer_slots, pointers_in, size_align
from timing.params import StructBuffer
from timing.spec import LaunchSpec, StructParam
from timing.structs import element_bytes

SYMBOL_SHIFT = 40
COPY_ALIGN = 256  # what cupy's allocator guarantees for a fresh array


@dataclass(frozen=True)
class Uploaded:
    """What one struct buffer was filled with: the bytes (real addresses), the same bytes
    with symbolic pointers, and the offsets of the pointer slots."""

    raw: bytes
    symbolic: bytes
    slots: tuple[int, ...]


def _address(spec: LaunchSpec, dev: dict[str, Any]) -> Callable[[Pointer], int]:
    def address(ptr: Pointer) -> int:
        if ptr.buffer is None:
            return 0
        return int(dev[ptr.buffer].data.ptr) + ptr.index * element_bytes(spec, ptr.buffer)

    return address


def _symbol(spec: LaunchSpec) -> Callable[[Pointer], int]:
    ordinal = {p.name: i for i, p in enumerate(spec.params + spec.extra)}

    def symbol(ptr: Pointer) -> int:
        if ptr.buffer is None:
            return 0
        return (ordinal[ptr.buffer] + 1) << SYMBOL_SHIFT | ptr.index * element_bytes(spec, ptr.buffer)

    return symbol


def struct_param_value(spec: LaunchSpec, p: StructParam, address: Callable[[Pointer], int]) -> np.ndarray:
    """A struct passed by value: a size-one numpy array of its bytes (cupy passes a size-one
    numpy array by value, itemsize bytes)."""
    data = pack(spec.type_map, p.type, p.value, address)
    return np.frombuffer(data, dtype=np.dtype((np.void, len(data))))


def build_structs(cp: Any, spec: LaunchSpec, dev: Any) -> None:
    """Allocate every struct buffer, then fill them and pack the struct parameters."""
    types = spec.type_map
    for b in spec.struct_buffers:
        dev[b.name] = cp.empty(size_align(types, b.type)[0] * len(b.values), dtype=cp.uint8)
    address, symbol = _address(spec, dev), _symbol(spec)
    for b in spec.struct_buffers:
        raw = pack_array(types, b.type, b.values, address)
        dev[b.name].set(np.frombuffer(raw, dtype=np.uint8))
        dev.uploaded[b.name] = Uploaded(raw, pack_array(types, b.type, b.values, symbol), _slots(spec, b))
    for p in spec.params:
        if isinstance(p, StructParam):
            dev[p.name] = struct_param_value(spec, p, address)


def _slots(spec: LaunchSpec, b: StructBuffer) -> tuple[int, ...]:
    size = size_align(spec.type_map, b.type)[0]
    return tuple(i * size + at for i, v in enumerate(b.values) for at, _ in pointer_slots(spec.type_map, b.type, v))


def symbolic_bytes(dev: Any, name: str) -> np.ndarray:
    """A struct buffer read back, its untouched pointer slots made symbolic."""
    read = dev[name].get()
    up: Uploaded = dev.uploaded[name]
    raw, sym = np.frombuffer(up.raw, dtype=np.uint8), np.frombuffer(up.symbolic, dtype=np.uint8)
    out = read.copy()
    for at in up.slots:
        if np.array_equal(read[at : at + 8], raw[at : at + 8]):
            out[at : at + 8] = sym[at : at + 8]
    return out


# ---------------------------------------------------------------- zeros copies for timing


def per_launch_names(spec: LaunchSpec) -> frozenset[str]:
    """Zeros buffers, and every struct buffer or struct parameter that reaches one through
    its pointers: what each launch of a timed replay needs its own copy of."""
    types = spec.type_map
    needs = {b.name for b in spec.zeros}
    holders = {b.name: pointers_in(types, b.type, v) for b in spec.struct_buffers for v in b.values}
    grown = True
    while grown:
        grown = False
        for name, ptrs in holders.items():
            if name not in needs and any(p.buffer in needs for p in ptrs):
                needs.add(name)
                grown = True
    params = {
        p.name
        for p in spec.params
        if isinstance(p, StructParam) and any(q.buffer in needs for q in pointers_in(types, p.type, p.value))
    }
    return frozenset(needs | params)


@dataclass(frozen=True)
class LaunchCopies:
    """`count` argument tuples for consecutive launches, and a function that clears every
    copy's zeros buffers on a stream (one memset; a no-op when the spec has none)."""

    args: tuple[tuple[Any, ...], ...]
    clear: Callable[[Any], None]
    keep: tuple[Any, ...] = ()  # device allocations the argument tuples point into


def launch_copies(cp: Any, spec: LaunchSpec, dev: Any, count: int) -> LaunchCopies:
    """Arguments for `count` launches that each see cleared counters (module docstring)."""
    base = _in_param_order(spec, dev)
    if not spec.zeros:
        return LaunchCopies((base,) * count, lambda stream: None)
    zeros = spec.zeros
    stride = sum(-(-b.nbytes // COPY_ALIGN) * COPY_ALIGN for b in zeros)
    block = cp.zeros(stride * count, dtype=cp.uint8)
    names = per_launch_names(spec)
    keep: list[Any] = [block]
    args = []
    for i in range(count):
        local = dict(dev)
        at = i * stride
        for b in zeros:
            local[b.name] = block[at : at + b.nbytes].view(b.dtype).reshape(b.shape)
            at += -(-b.nbytes // COPY_ALIGN) * COPY_ALIGN
        _rebuild(cp, spec, local, names, keep)
        args.append(_in_param_order(spec, local))

    def clear(stream: Any) -> None:
        cp.cuda.runtime.memsetAsync(block.data.ptr, 0, block.nbytes, stream.ptr)

    return LaunchCopies(tuple(args), clear, tuple(keep))


def _rebuild(cp: Any, spec: LaunchSpec, local: dict[str, Any], names: frozenset[str], keep: list[Any]) -> None:
    """Fresh copies of the struct buffers and struct parameters in `names`, pointing at this
    launch's zeros buffers."""
    types = spec.type_map
    mine = [b for b in spec.struct_buffers if b.name in names]
    for b in mine:
        local[b.name] = cp.empty(size_align(types, b.type)[0] * len(b.values), dtype=cp.uint8)
        keep.append(local[b.name])
    address = _address(spec, local)
    for b in mine:
        local[b.name].set(np.frombuffer(pack_array(types, b.type, b.values, address), dtype=np.uint8))
    for p in spec.params:
        if isinstance(p, StructParam) and p.name in names:
            local[p.name] = struct_param_value(spec, p, address)


def _in_param_order(spec: LaunchSpec, dev: Any) -> tuple[Any, ...]:
    """Launch arguments in kernel parameter order (what timing.gpu.launch_args gives; spelled
    out here because timing.gpu builds on this module)."""
    return tuple(dev[p.name] for p in spec.params)
