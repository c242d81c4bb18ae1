"""Build the held-out kernels: hand-written CUDA that the latency calibration never saw.

`legality.calibration` learns ptxas' own distances from generated kernels and the
project's corpora; these kernels (src/, one per file, other shapes than the generator's
fragments) are kept out of it, so `tests/test_compiler_output_legal.py` can ask whether
`reorder verify` calls compiler output legal on code it was not fitted to.

    python tests/corpus/heldout/build.py    # -> tests/corpus/heldout/cubin/<arch>_O<level>.cubin

Every source goes into one translation unit (the kernels are `extern "C"` and share no
helpers), compiled as nvcc does it: `nvcc -ptx -arch=<arch>` once per arch, then
`ptxas -arch=<arch> -O<level>` (nvcc's default is -O3) for each level in BUILDS. One cubin
per build holds every kernel; the tests read the checked-in builds and
tests/test_corpus_build.py rebuilds a sample of them to check the bytes.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Every arch reorder reads that a kernel engineer targets, each at nvcc's -O3 and at -O1;
# -O2 on two of them (ptxas -O2 mostly equals -O3: kernels identical to another build's are
# verified once by the test).
BUILDS = tuple((arch, level) for arch in ("sm_80", "sm_86", "sm_89", "sm_90", "sm_90a") for level in (1, 3)) + (
    ("sm_86", 2),
    ("sm_90", 2),
)


def sources() -> list[Path]:
    return sorted((HERE / "src").glob("*.cu"))


def _run(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr}")


def _ptx(unit: Path, arch: str, out_dir: Path) -> Path:
    ptx = out_dir / f"heldout_{arch}.ptx"
    _run(["nvcc", "-ptx", f"-arch={arch}", "-o", str(ptx), str(unit)])
    return ptx


def _cubin(ptx: Path, arch: str, level: int, out_dir: Path) -> Path:
    out = out_dir / f"{arch}_O{level}.cubin"
    _run(["ptxas", f"-arch={arch}", "-m64", f"-O{level}", "-o", str(out), str(ptx)])
    return out


def build(out_dir: Path, builds: tuple[tuple[str, int], ...] = BUILDS) -> list[Path]:
    """Every build of the held-out set, two compiles at a time; a failed compile raises
    with the tool's stderr."""
    out_dir.mkdir(parents=True, exist_ok=True)
    unit = out_dir / "heldout_all.cu"
    unit.write_text("".join(f'#include "{src}"\n' for src in sources()))
    archs = sorted({arch for arch, _ in builds})
    with ThreadPoolExecutor(max_workers=2) as pool:
        ptx = dict(zip(archs, pool.map(lambda arch: _ptx(unit, arch, out_dir), archs)))
        cubins = list(pool.map(lambda b: _cubin(ptx[b[0]], b[0], b[1], out_dir), builds))
    for path in out_dir.glob("heldout_*"):
        path.unlink()
    return sorted(cubins)


def nvcc_available() -> bool:
    return shutil.which("nvcc") is not None and shutil.which("ptxas") is not None


if __name__ == "__main__":
    built = build(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "cubin")
    print(f"{len(built)} cubins")
