"""Thin cupy layer shared by checking and timing: load a cubin, stage inputs, launch.

cupy is imported only inside these functions so that `import timing` (and every
CPU test) works on machines without a GPU. Everything here is meant to run
inside a timing.worker child process, where a fault can only take the child down.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from reorder.base.errors import GpuError, NoGpuError
from timing.devicestructs import build_structs, symbolic_bytes
from timing.spec import LaunchSpec

DEFAULT_SHARED_LIMIT = 48 * 1024  # above this a kernel must opt in to more dynamic shared memory


def cupy_module() -> Any:
    """Import cupy and make sure a device is visible, or raise NoGpuError saying which failed."""
    try:
        import cupy
    except ImportError as e:
        raise NoGpuError(f"cupy is not installed ({e}); GPU checking and timing need it") from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001 - cupy raises CUDARuntimeError when there is no driver/device
        raise NoGpuError(f"no usable CUDA device: {e}") from None
    if count < 1:
        raise NoGpuError("no CUDA device visible")
    return cupy


@dataclass(frozen=True, slots=True)
class Kernel:
    """A loaded kernel plus the module that owns it (kept alive with it)."""

    path: str
    module: Any
    function: Any


def by_content(data: bytes, folder: Path) -> Path:
    """`data` as a file under `folder` named by its SHA-256 (written once, atomically).

    Why: cupy keeps every module it loaded from a path for the life of the process
    (`RawModule(path=...)` is memoized on the path), so a second cubin written to a path a
    worker already loaded would silently run the first one's code: a timing or a byte check
    of the wrong binary. A module loaded from a content-named copy is the bytes asked for."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{hashlib.sha256(data).hexdigest()}.cubin"
    if not path.is_file():
        part = path.with_name(f"{path.name}.{os.getpid()}.part")
        part.write_bytes(data)
        os.replace(part, path)
    return path


@functools.cache
def loaded_modules_dir() -> Path:
    """This process's content-named copies of the cubins it loaded, removed when it exits."""
    folder = Path(tempfile.gettempdir()) / f"reorder-modules-{os.getuid()}-{os.getpid()}"
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def load_kernel(cubin: str | Path, spec: LaunchSpec) -> Kernel:
    """Load `spec.name` from a cubin file, opting in to large dynamic shared memory if needed
    (loaded from a copy named by its bytes: `by_content`)."""
    cp = cupy_module()
    path = Path(cubin)
    if not path.is_file():
        raise GpuError(f"{path}: cubin not found")
    try:
        module = cp.RawModule(path=str(by_content(path.read_bytes(), loaded_modules_dir())))
    except Exception as e:  # noqa: BLE001 - cupy raises its own CUDA errors; any of them means the module does not load
        raise GpuError(f"{path}: cannot load kernel '{spec.name}': {e}") from None
    try:
        function = module.get_function(spec.name)
    except Exception:  # noqa: BLE001 - not a symbol: a C++ signature or part of one (reorder.binary.names)
        from reorder.binary.cubin import read_cubin

        symbol = read_cubin(path).kernel(spec.name).name
        try:
            function = module.get_function(symbol)
        except Exception as e:  # noqa: BLE001 - cupy raises its own CUDA errors; any of them means no such kernel
            raise GpuError(f"{path}: cannot load kernel '{spec.name}': {e}") from None
    if spec.shared > DEFAULT_SHARED_LIMIT:
        function.max_dynamic_shared_size_bytes = spec.shared
    return Kernel(str(path), module, function)


class DeviceSet(dict):
    """Device values by name (arrays, numpy scalars, packed structs), plus, for every struct
    buffer, the bytes uploaded and their symbolic form (timing.devicestructs)."""

    def __init__(self, values: dict[str, Any]) -> None:
        super().__init__(values)
        self.uploaded: dict[str, Any] = {}


def to_device(host: dict[str, np.ndarray | np.generic], spec: LaunchSpec | None = None) -> DeviceSet:
    """Copy buffers to fresh device arrays; scalars stay numpy scalars (passed by value).
    With a spec that has structs, its struct buffers are allocated and filled and its struct
    parameters packed once every buffer has an address."""
    cp = cupy_module()
    dev = DeviceSet({k: cp.array(v) if isinstance(v, np.ndarray) else v for k, v in host.items()})
    if spec is not None and (spec.types or spec.extra):
        build_structs(cp, spec, dev)
    return dev


def launch_args(spec: LaunchSpec, dev: dict[str, Any]) -> tuple[Any, ...]:
    """Arguments in kernel parameter order."""
    return tuple(dev[p.name] for p in spec.params)


def launch(kernel: Kernel, spec: LaunchSpec, args: tuple[Any, ...]) -> None:
    """One launch on cupy's current stream (capturable into a graph). A launch with a struct
    by value goes straight to cuLaunchKernel with the argument bytes the spec packed, so it
    does not depend on how a cupy version converts arguments."""
    if any(isinstance(a, np.ndarray) and a.dtype.kind == "V" for a in args):
        _launch_bytes(kernel, spec, args)
        return
    kernel.function(spec.grid, spec.block, args, shared_mem=spec.shared)


def argument_bytes(arg: Any) -> bytes:
    """The bytes one argument occupies in the parameter buffer: a device array's address, a
    numpy scalar's value, a packed struct (timing.devicestructs)."""
    if isinstance(arg, (np.ndarray, np.generic)):
        return arg.tobytes()
    return int(arg.data.ptr).to_bytes(8, "little")


def _launch_bytes(kernel: Kernel, spec: LaunchSpec, args: tuple[Any, ...]) -> None:
    import ctypes

    cp = cupy_module()
    buffers = [ctypes.create_string_buffer(argument_bytes(a), max(len(argument_bytes(a)), 1)) for a in args]
    params = (ctypes.c_void_p * max(len(buffers), 1))(*[ctypes.addressof(b) for b in buffers])
    cp.cuda.driver.launchKernel(
        driver_function(kernel.function),
        *spec.grid,
        *spec.block,
        spec.shared,
        cp.cuda.get_current_stream().ptr,
        ctypes.addressof(params),
        0,
    )


def driver_function(function: Any) -> int:
    """The CUfunction handle behind a loaded kernel. cupy's RawModule.get_function gives a
    RawKernel, whose handle is `.kernel.ptr` (its `.kernel` is the per-device Function); a
    bare cupy Function has `.ptr` itself."""
    inner = getattr(function, "kernel", None)
    return int(inner.ptr if inner is not None else function.ptr)


def synchronize() -> None:
    """Wait for the device; a kernel fault surfaces here as a cupy CUDA error."""
    cupy_module().cuda.Device().synchronize()


def buffers_to_host(spec: LaunchSpec, dev: dict[str, Any]) -> dict[str, np.ndarray]:
    """Every buffer (in, out, inout and zeros; parameters, then [[buffer]]s) back on the host;
    struct buffers as bytes whose pointers that still hold what was uploaded are replaced by
    their symbolic form, so two runs at different addresses compare equal."""
    out = {p.name: dev[p.name].get() for p in spec.buffers}
    if spec.struct_buffers:
        out.update({b.name: symbolic_bytes(dev, b.name) for b in spec.struct_buffers})
    return out
