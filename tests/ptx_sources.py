"""PTX for the PTX-level tests: what nvcc makes of the project's CUDA sources, built once per
test session (release builds of every source for sm_90; -lineinfo for sm_80 and -G debug
builds of a few), and small hand-written kernels around a body."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

from once import once

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted((ROOT / "tests/corpus/src").glob("*.cu")) + sorted((ROOT / "benchmarks/kernels").glob("*.cu"))
DEBUG_SOURCES = ("control.cu", "calls.cu", "rmsnorm.cu", "sync.cu")
# (tag, nvcc flags, sources it applies to: None for all)
BUILDS = (
    ("release", ("-O3", "-arch=sm_90"), None),
    ("lineinfo", ("-O3", "-lineinfo", "-arch=sm_80"), DEBUG_SOURCES),
    ("debug", ("-G", "-arch=sm_90"), DEBUG_SOURCES),
)


@lru_cache(maxsize=1)
def nvcc_ptx() -> tuple[Path, ...]:
    """Every PTX built (name: STEM.TAG.ptx); empty when nvcc is not installed. Built once per
    test run for every pytest-xdist worker: into the listing cache's folder (REORDER_CACHE, one
    per run and shared by the workers), named by nvcc, its version, the flags and the sources,
    under a lock."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return ()
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=False).stdout
    digest = hashlib.sha256(repr((nvcc, version, BUILDS)).encode())
    for source in SOURCES:
        digest.update(source.name.encode() + source.read_bytes())
    out = Path(os.environ.get("REORDER_CACHE") or tempfile.gettempdir()) / "nvcc-ptx" / digest.hexdigest()[:16]
    once(out / ".done", lambda: _build(nvcc, out))
    return tuple(sorted(out.glob("*.ptx")))


def _build(nvcc: str, out: Path) -> str:
    """nvcc -ptx of every build into `out`; the marker's text (none)."""
    jobs = [
        (nvcc, "-ptx", *flags, str(source), "-o", str(out / f"{source.stem}.{tag}.ptx"))
        for tag, flags, names in BUILDS
        for source in SOURCES
        if names is None or source.name in names
    ]
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = list(pool.map(lambda cmd: subprocess.run(cmd, capture_output=True, text=True, check=False), jobs))
    failed = [" ".join(cmd) + "\n" + r.stderr for cmd, r in zip(jobs, done) if r.returncode != 0]
    if failed:
        raise RuntimeError("nvcc -ptx failed:\n" + "\n".join(failed))
    return ""


HEADER = """//
// a hand-written kernel for the PTX tests
//

.version 8.0
.target sm_90
.address_size 64

.visible .entry k(
	.param .u64 k_param_0,
	.param .u64 k_param_1,
	.param .u64 k_param_2,
	.param .u32 k_param_3
)
{
	.reg .pred 	%p<8>;
	.reg .f32 	%f<16>;
	.reg .b32 	%r<16>;
	.reg .b64 	%rd<16>;
	.shared .align 4 .b8 smem[128];

	ld.param.u64 	%rd1, [k_param_0];
	ld.param.u64 	%rd2, [k_param_1];
	ld.param.u32 	%r5, [k_param_3];
	cvta.to.global.u64 	%rd3, %rd1;
	cvta.to.global.u64 	%rd4, %rd2;
	mov.u32 	%r1, %tid.x;
	mul.wide.u32 	%rd5, %r1, 4;
	add.s64 	%rd6, %rd3, %rd5;
	add.s64 	%rd7, %rd4, %rd5;
"""


def kernel(body: str) -> str:
    """A kernel `k(x, y, z, n)`: %rd6 = &x[tid] (param 0), %rd7 = &y[tid] (param 1), %r1 = tid,
    %r5 = n, then `body`, then `ret`."""
    return HEADER + body.strip("\n") + "\n\tret;\n\n}\n"
