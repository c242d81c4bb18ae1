"""Build the CUDA test corpus into cubins.

Every ``src/*.cu`` file is compiled for each requested architecture with::

    nvcc -cubin -O3 -arch=<arch> -o <out_dir>/<arch>/<stem>.cubin <src>

Compiles run in parallel (one nvcc process per (source, arch) pair).

Usage::

    python tests/corpus/build.py                # rebuild tests/corpus/cubin/
    python tests/corpus/build.py OUT_DIR sm_80  # custom output dir / archs

Blackwell (sm_100a, sm_103, sm_120) is not checked in: the tests build it with `build_cached`,
which keeps each cubin under a key of its source, arch and nvcc version, so a test run after the
first copies instead of compiling.
"""

from __future__ import annotations

import hashlib
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
) -> list[Path]:
    """Compile every ``src/*.cu`` for each arch into ``out_dir/<arch>/<stem>.cubin``.

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
    sources = corpus_sources()
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


def default_cache() -> Path:
    """Where built cubins are kept between test runs (`$REORDER_TEST_CORPUS_CACHE`)."""
    return Path(os.environ.get("REORDER_TEST_CORPUS_CACHE") or Path.home() / ".cache" / "reorder-test-corpus")


def _nvcc_version(nvcc: str) -> str:
    done = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=False)
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "unknown"


def build_cached(
    out_dir: Path, archs: Sequence[str] = BLACKWELL_ARCHS, cache: Path | None = None, jobs: int | None = None
) -> list[Path]:
    """`build_corpus`, through a cache: a cubin whose source, arch and nvcc version were built
    before is copied from `cache`, the others are compiled and stored there."""
    nvcc = nvcc_path()
    if nvcc is None:
        raise CorpusBuildError("nvcc not found on PATH; the Blackwell corpus is built at test time")
    cache = cache or default_cache()
    version = _nvcc_version(nvcc)
    tasks = [(src, Path(out_dir) / arch / f"{src.stem}.cubin", arch) for arch in archs for src in corpus_sources()]

    def one(src: Path, out: Path, arch: str) -> Path:
        key = hashlib.sha256(src.read_bytes() + f"\0{arch}\0-O3\0{version}".encode()).hexdigest()[:32]
        kept = cache / f"{src.stem}_{arch}_{key}.cubin"
        out.parent.mkdir(parents=True, exist_ok=True)
        if kept.is_file():
            shutil.copyfile(kept, out)
            return out
        _compile_one(nvcc, src, out, arch)
        cache.mkdir(parents=True, exist_ok=True)
        partial = kept.with_suffix(f".{os.getpid()}.part")
        shutil.copyfile(out, partial)
        os.replace(partial, kept)
        return out

    with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
        return [f.result() for f in [pool.submit(one, *t) for t in tasks]]


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
