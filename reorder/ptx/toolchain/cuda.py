"""CUDA source in, PTX out: `reorder optimize kernel.cu` searches from nvcc's PTX.

The PTX is what `nvcc -ptx FLAGS` makes of the source (includes resolved beside it), kept in
a content-addressed cache (`$REORDER_CACHE/cu`): the same source, flags and nvcc give the
same file, so a resumed study and its helper workers find the PTX it started from. The
cubin every candidate is timed against is then ptxas -O3's build of that PTX
(reorder.ptx.toolchain.compile), the build nvcc itself would make.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from reorder.base.diskcache import cache_folder, key_of
from reorder.base.errors import InputError
from reorder.base.files import write_atomic
from reorder.binary.tools import find_tool, run_binary, version_line
from reorder.ptx.toolchain.compile import has_entry

NVCC_TIMEOUT_S = 600.0


def cuda_ptx(source: Path, flags: str) -> Path:
    """The PTX of `source` under `nvcc -ptx FLAGS` (cached); one InputError when nvcc refuses it."""
    try:
        text = source.read_bytes()
    except OSError as exc:
        raise InputError(f"{source}: cannot read: {exc.strerror or exc}") from None
    words = shlex.split(flags)
    if any(w in ("-o", "--output-file", "-cubin", "--cubin", "-c", "--compile", "-fatbin") for w in words):
        raise InputError(f"--nvcc-flags {flags!r}: give compile options only (reorder adds -ptx and -o)")
    nvcc = find_tool("nvcc")
    key = key_of(text, str(source.resolve()), flags, version_line(nvcc))[:16]
    out = cache_folder("cu") / f"{source.stem}-{key}.ptx"
    if out.is_file():
        return _with_entry(out, source)
    out.parent.mkdir(parents=True, exist_ok=True)
    scratch = out.with_name(f".{out.name}.building")
    try:
        done = run_binary(
            nvcc,
            "-ptx",
            *words,
            "-I",
            str(source.resolve().parent),
            str(source),
            "-o",
            str(scratch),
            timeout=NVCC_TIMEOUT_S,
        )
        if done.returncode != 0 or not scratch.is_file():
            lines = [x for x in done.stderr.splitlines() if "error" in x.lower()] or done.stderr.splitlines() or [""]
            raise InputError(f"{source}: nvcc -ptx {flags} failed: {lines[0].strip() or done.returncode}")
        write_atomic(out, scratch.read_bytes())
    finally:
        scratch.unlink(missing_ok=True)
    return _with_entry(out, source)


def _with_entry(ptx: Path, source: Path) -> Path:
    """The PTX, when it holds a kernel; else the source is refused by its own name (the cached
    PTX's name meant nothing to its user)."""
    if not has_entry(ptx.read_bytes()):
        raise InputError(f"{source}: no kernel: nvcc's PTX of it has no .entry (does it define a __global__ function?)")
    return ptx
