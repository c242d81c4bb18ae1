"""Build the CUDA test corpus into cubins.

Every ``src/*.cu`` file is compiled for each requested architecture with::

    nvcc -cubin -O3 -arch=<arch> -o <out_dir>/<arch>/<stem>.cubin <src>

Compiles run in parallel (one nvcc process per (source, arch) pair).

Usage::

    python tests/corpus/build.py                                     # rebuild tests/corpus/cubin/
    python tests/corpus/build.py tests/corpus/blackwell sm_100a sm_120  # rebuild the Blackwell builds
    python tests/corpus/build.py OUT_DIR sm_80                       # custom output dir / archs

The tests read the checked-in builds (cubin/ for sm_80 and sm_90, blackwell/ for sm_100a and
sm_120); tests/test_corpus_build.py rebuilds a sample with this machine's nvcc and checks the
bytes are the same, when its release is the one that made them (BUILT_WITH).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

CORPUS_DIR: Path = Path(__file__).resolve().parent
SRC_DIR: Path = CORPUS_DIR / "src"
DEFAULT_OUT_DIR: Path = CORPUS_DIR / "cubin"
DEFAULT_ARCHS: tuple[str, ...] = ("sm_80", "sm_90")


class CorpusBuildError(RuntimeError):
    """Raised when nvcc is unavailable or a corpus source fails to compile."""


def nvcc_path() -> str | None:
    """Return the path of the ``nvcc`` executable on ``PATH``, or ``None``."""
    return shutil.which("nvcc")


def nvcc_available() -> bool:
    """Return ``True`` if ``nvcc`` can be found on ``PATH``."""
    return nvcc_path() is not None


def corpus_sources() -> list[Path]:
    """Return the corpus ``.cu`` sources in a stable (sorted) order."""
    return sorted(SRC_DIR.glob("*.cu"))


def _compile_one(nvcc: str, src: Path, out: Path, arch: str) -> Path:
    """Compile a single source to a cubin; raise ``CorpusBuildError`` on failure."""
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [nvcc, "-cubin", "-O3", f"-arch={arch}", "-o", str(out), str(src)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise CorpusBuildError(
            f"nvcc failed for {src.name} ({arch}), exit {proc.returncode}:\n  {' '.join(cmd)}\n{proc.stderr.strip()}"
        )
    return out


def build_corpus(
    out_dir: Path = DEFAULT_OUT_DIR,
    archs: Sequence[str] = DEFAULT_ARCHS,
    jobs: int | None = None,
    stems: Sequence[str] | None = None,
) -> list[Path]:
    """Compile every ``src/*.cu`` (or those named by ``stems``) for each arch into
    ``out_dir/<arch>/<stem>.cubin``.

    Args:
        out_dir: Root output directory; one sub-directory per architecture.
        archs: Target architectures, e.g. ``("sm_80", "sm_90")``.
        jobs: Maximum number of concurrent nvcc processes (default: CPU count).

    Returns:
        Paths of the produced cubins, ordered by arch then source name.

    Raises:
        CorpusBuildError: If nvcc is missing, there are no sources, or any
            compile fails.
    """
    nvcc = nvcc_path()
    if nvcc is None:
        raise CorpusBuildError(
            "nvcc not found on PATH; install the CUDA toolkit to rebuild the "
            "corpus (the checked-in cubins under tests/corpus/cubin/ can be "
            "used without it)"
        )
    sources = [src for src in corpus_sources() if stems is None or src.stem in stems]
    if not sources:
        raise CorpusBuildError(f"no .cu sources found in {SRC_DIR}")

    out_dir = Path(out_dir)
    tasks = [(src, out_dir / arch / f"{src.stem}.cubin", arch) for arch in archs for src in sources]
    workers = jobs or os.cpu_count() or 1
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(_compile_one, nvcc, src, out, arch) for src, out, arch in tasks]
        # .result() re-raises the first CorpusBuildError in task order.
        return [f.result() for f in futures]


BLACKWELL_ARCHS: tuple[str, ...] = ("sm_100a", "sm_120")


# The nvcc that made the checked-in builds (cubin/ and blackwell/): tests/test_corpus_build.py
# checks that this release still makes the same bytes.
BUILT_WITH = "Build cuda_13.0.r13.0/compiler.36424714_0"


def nvcc_release() -> str:
    """The last line of `nvcc --version` ('unknown' without nvcc)."""
    nvcc = nvcc_path()
    if nvcc is None:
        return "unknown"
    done = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=False)
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point: ``build.py [OUT_DIR] [ARCH ...]``."""
    args = list(sys.argv[1:] if argv is None else argv)
    out_dir = Path(args[0]) if args else DEFAULT_OUT_DIR
    archs = tuple(args[1:]) or DEFAULT_ARCHS
    try:
        cubins = build_corpus(out_dir, archs)
    except CorpusBuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for path in cubins:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
