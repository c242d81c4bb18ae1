"""A kernel of any length, as nvcc builds it: an unrolled FMA chain fed by loads.

`fma_chain(steps)` is the CUDA source of `extern "C" fma_chain(x, y, n)`: each of `steps`
steps loads x[i + (k+1) n] and folds it into two dependent FMAs, so nvcc -O3 emits one
straight block of about five SASS instructions per step (an LDG, its address arithmetic, two
FFMAs) between a short prologue and the store: 250 steps give 1,032 instructions, 1,000 give
4,840, 4,000 about 19,800 (sm_90, CUDA 13.0). It is the long-block kernel the build-cost
studies (benchmarks.build_rate) and tests time their passes on: one block holds every load,
so a pass quadratic in a block's length shows at once.

`build(steps, folder)` compiles it (PTX and cubin) once per source and nvcc version: the files
are named by their digest, so kept ones are reused.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from benchmarks.kernels.build import NVCC_FLAGS
from reorder.base.errors import ToolError

KERNEL = "fma_chain"


def fma_chain(steps: int) -> str:
    """The CUDA source (see the module docstring)."""
    lines = [
        f'extern "C" __global__ void {KERNEL}(const float* __restrict__ x, float* __restrict__ y, int n) {{',
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;",
        "  float a = x[i], b = 1.0f;",
    ]
    lines += [
        f"  a = fmaf(a, x[i + {k + 1} * n], {0.5 + k % 7:.1f}f); b = fmaf(b, a, {1.0 + k % 5:.1f}f);"
        for k in range(steps)
    ]
    lines += ["  y[i] = a + b;", "}", ""]
    return "\n".join(lines)


def build(steps: int, folder: Path, nvcc: str = "nvcc") -> tuple[Path, Path]:
    """(cubin, PTX) of `fma_chain(steps)` in `folder`, made unless already there: the PTX by
    `nvcc -ptx -O3 -arch=sm_90`, the cubin from it by the toolkit's ptxas with the arguments
    nvcc -cubin passes it (`-arch=sm_90 -m64`: the same bytes as the suite's `nvcc -cubin -O3`,
    one front-end run instead of two). Named by a digest of the source and nvcc's version.
    Raises ToolError when nvcc or ptxas is missing or fails."""
    exe = shutil.which(nvcc)
    if exe is None:
        raise ToolError(f"{nvcc} not found on PATH", (nvcc,))
    ptxas = Path(exe).with_name("ptxas")
    source = fma_chain(steps)
    version = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False).stdout
    digest = hashlib.sha256(repr((source, version, NVCC_FLAGS)).encode()).hexdigest()[:16]
    stem = Path(folder) / f"{KERNEL}_{steps}_{digest}"
    ptx, cubin = stem.with_suffix(".ptx"), stem.with_suffix(".cubin")
    if not ptx.is_file():
        stem.parent.mkdir(parents=True, exist_ok=True)
        cu = stem.with_suffix(".cu")
        cu.write_text(source)
        _made(ptx, lambda out: (exe, "-ptx", "-O3", "-arch=sm_90", str(cu), "-o", str(out)))
    if not cubin.is_file():
        _made(cubin, lambda out: (str(ptxas), "-arch=sm_90", "-m64", str(ptx), "-o", str(out)))
    return cubin, ptx


def _made(out: Path, command) -> None:
    """Run `command(partial)` and move its output into place (whole or absent)."""
    partial = out.with_name(f".{out.name}.{os.getpid()}")
    cmd = command(partial)
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        raise ToolError(f"{Path(cmd[0]).name} failed on {out.name}", tuple(cmd), done.stderr)
    os.replace(partial, out)
