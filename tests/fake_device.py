"""A stand-in for the few cupy calls timing.devicestructs makes, so the CPU tier walks the
struct and zeros paths: arrays live in host memory at made-up device addresses."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

uint8 = np.uint8


class FakeArray:
    """A numpy array at a fake device address (slices share memory and offset the address)."""

    _next = 0x7F00_0000_0000

    def __init__(self, host: np.ndarray, address: int | None = None) -> None:
        self.host = host
        if address is None:
            address, FakeArray._next = FakeArray._next, FakeArray._next + max(host.nbytes, 1) + 4096
            ALLOCATIONS.append(self)
        self.data = SimpleNamespace(ptr=address)

    @property
    def nbytes(self) -> int:
        return self.host.nbytes

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"data": (self.data.ptr, False), "typestr": self.host.dtype.str, "shape": self.host.shape, "version": 3}

    def __getitem__(self, key: slice) -> FakeArray:
        start = key.start or 0
        return FakeArray(self.host[key], self.data.ptr + start * self.host.dtype.itemsize)

    def view(self, dtype) -> FakeArray:
        return FakeArray(self.host.view(dtype), self.data.ptr)

    def reshape(self, shape) -> FakeArray:
        return FakeArray(self.host.reshape(shape), self.data.ptr)

    def set(self, values: np.ndarray) -> None:
        self.host[...] = values.reshape(self.host.shape)

    def get(self) -> np.ndarray:
        return self.host.copy()

    def min(self):
        return self.host.min()

    def max(self):
        return self.host.max()


ALLOCATIONS: list[FakeArray] = []


def empty(n: int, dtype=np.uint8) -> FakeArray:
    return FakeArray(np.full(n, 0xAB, dtype=dtype))


def zeros(n: int, dtype=np.uint8) -> FakeArray:
    return FakeArray(np.zeros(n, dtype=dtype))


def array(values: np.ndarray) -> FakeArray:
    return FakeArray(np.array(values))


def _memset(ptr: int, value: int, nbytes: int, stream: int) -> None:
    for a in ALLOCATIONS:
        if a.data.ptr <= ptr and ptr + nbytes <= a.data.ptr + a.nbytes:
            flat = a.host.reshape(-1).view(np.uint8)
            flat[ptr - a.data.ptr : ptr - a.data.ptr + nbytes] = value
            return
    raise AssertionError(f"memset outside any allocation: {ptr:#x} + {nbytes}")


cuda = SimpleNamespace(runtime=SimpleNamespace(memsetAsync=_memset))


def read_u64(array: FakeArray, at: int) -> int:
    """The 8 bytes at byte offset `at` of a device array, as an address."""
    return int(array.host.reshape(-1).view(np.uint8)[at : at + 8].view(np.uint64)[0])
