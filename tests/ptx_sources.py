"""PTX for the PTX-level tests: what nvcc makes of the project's CUDA sources (release builds
of every source for sm_90; -lineinfo for sm_80 and -G debug builds of a few), and small
hand-written kernels around a body.

nvcc's release PTX is checked in (`corpus/nvcc_ptx.tar.xz`, named by the digest of nvcc's
version text, the flags and the sources): 21 of the 29 nvcc runs, about 11 CPU-s of each test
run. A run whose nvcc and sources give the archive's digest unpacks it; any other (another
nvcc, a changed source) builds as before. The -lineinfo and -G builds are always built: they
hold the source's absolute path (and -G the working directory), so they differ by checkout.
tests/test_ptx_roundtrip.py checks the archive is current and that this nvcc makes a sample of
it byte for byte.

    python tests/ptx_sources.py     # remake the archive after changing a source
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
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


ARCHIVE = ROOT / "tests/corpus/nvcc_ptx.tar.xz"
ARCHIVED_TAGS = ("release",)  # the builds whose text does not depend on where the checkout is


@lru_cache(maxsize=1)
def nvcc_ptx() -> tuple[Path, ...]:
    """Every PTX built (name: STEM.TAG.ptx); empty when nvcc is not installed. Made once per
    test run for every pytest-xdist worker (unpacked from the archive when it is this nvcc's
    and these sources', else built): into the listing cache's folder (REORDER_CACHE, one per
    run and shared by the workers), named by the digest, under a lock."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return ()
    name = build_digest(nvcc)
    out = Path(os.environ.get("REORDER_CACHE") or tempfile.gettempdir()) / "nvcc-ptx" / name
    once(out / ".done", lambda: _build(nvcc, out, only=None if not _unpack(name, out) else _not_archived()))
    return tuple(sorted(out.glob("*.ptx")))


def nvcc_version(nvcc: str) -> str:
    return subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=False).stdout


def build_digest(nvcc: str) -> str:
    """What names a set of builds: nvcc's version text, the builds' flags and every source."""
    version = nvcc_version(nvcc)
    digest = hashlib.sha256(repr((version, BUILDS)).encode())
    for source in SOURCES:
        digest.update(source.name.encode() + source.read_bytes())
    return digest.hexdigest()[:16]


def archived(archive: Path = ARCHIVE) -> tuple[str, str, dict[str, bytes]]:
    """(the digest the archive was made under, the version text of the nvcc that made it,
    file name -> PTX bytes); ("", "", {}) if there is none."""
    if not archive.is_file():
        return "", "", {}
    with tarfile.open(archive, "r:xz") as tar:
        files = {}
        for member in tar.getmembers():
            handle = tar.extractfile(member)
            if handle is not None:
                files[member.name] = handle.read()
    digest = files.pop("DIGEST", b"").decode().strip()
    return digest, files.pop("NVCC", b"").decode(), files


def _unpack(name: str, out: Path) -> str:
    """Write the archive's PTX into `out` when it was made under `name`; "" when it was."""
    digest, _, files = archived()
    if digest != name:
        return ""
    out.mkdir(parents=True, exist_ok=True)
    for file, data in files.items():
        (out / file).write_bytes(data)
    return "unpacked"


def file_names(tags: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """The PTX file names of every build (of `tags` only, when given)."""
    return tuple(
        f"{source.stem}.{tag}.ptx"
        for tag, _, names in BUILDS
        for source in SOURCES
        if (names is None or source.name in names) and (tags is None or tag in tags)
    )


def _not_archived() -> tuple[str, ...]:
    return tuple(n for n in file_names() if n not in file_names(ARCHIVED_TAGS))


def _build(nvcc: str, out: Path, only: tuple[str, ...] | None = None) -> str:
    """nvcc -ptx of every build (or those whose file name is in `only`) into `out`."""
    jobs = [
        (nvcc, "-ptx", *flags, str(source), "-o", str(out / f"{source.stem}.{tag}.ptx"))
        for tag, flags, names in BUILDS
        for source in SOURCES
        if (names is None or source.name in names) and (only is None or f"{source.stem}.{tag}.ptx" in only)
    ]
    out.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = list(pool.map(lambda cmd: subprocess.run(cmd, capture_output=True, text=True, check=False), jobs))
    failed = [" ".join(cmd) + "\n" + r.stderr for cmd, r in zip(jobs, done) if r.returncode != 0]
    if failed:
        raise RuntimeError("nvcc -ptx failed:\n" + "\n".join(failed))
    return "built"


def make_archive(archive: Path = ARCHIVE) -> Path:
    """Build the archived PTX with this machine's nvcc and write it, with its digest and the
    nvcc's version text, to `archive`."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise SystemExit("nvcc is not installed")
    with tempfile.TemporaryDirectory() as folder:
        _build(nvcc, Path(folder), only=file_names(ARCHIVED_TAGS))
        with tarfile.open(archive, "w:xz") as tar:
            members = {p.name: p.read_bytes() for p in sorted(Path(folder).glob("*.ptx"))}
            members |= {"DIGEST": build_digest(nvcc).encode(), "NVCC": nvcc_version(nvcc).encode()}
            for name, data in members.items():
                info = tarfile.TarInfo(name)
                info.size, info.mtime = len(data), 0
                tar.addfile(info, io.BytesIO(data))
    return archive


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


if __name__ == "__main__":
    print(make_archive(Path(sys.argv[1]) if len(sys.argv) > 1 else ARCHIVE))
