"""Shared fixtures and the GPU-tier switch: the corpus of cubins built from the project's own CUDA sources.

With nvcc present the corpus is rebuilt from tests/corpus/src into a temporary folder
(so the tests exercise the real build); without it the checked-in copies are used.
"""

from __future__ import annotations

import fcntl
import importlib.util
import os
import sys
import tempfile
from pathlib import Path

import pytest

# Compiled PTX and nvdisasm listings are cached on disk (reorder.base.diskcache): the tests keep
# theirs apart from the user's, shared by every test (and CLI subprocess) of one session.
if "REORDER_CACHE" not in os.environ:
    os.environ["REORDER_CACHE"] = tempfile.mkdtemp(prefix="reorder-test-cache-")


def _gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no cupy, no driver, no device
        return False


# The GPU tier (tests/gpu) is collected only where CuPy sees a CUDA device.
collect_ignore_glob = [] if _gpu_available() else ["gpu/test_*.py"]

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"


def _load_build():
    spec = importlib.util.spec_from_file_location("corpus_build", CORPUS / "build.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["corpus_build"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def corpus_dir(tmp_path_factory) -> Path:
    """The corpus, built once per test run: pytest-xdist's workers share one folder (under
    their common base temp), the first to take its lock builds it and fills the listing cache."""
    build = _load_build()
    if not build.nvcc_available():
        return CORPUS / "cubin"
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent
    out = shared / "corpus"
    with open(shared / "corpus.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (shared / "corpus.done").exists():
            build.build_corpus(out, ("sm_80", "sm_90"))
            _decode_all(out)
            (shared / "corpus.done").touch()
    return out


def _decode_all(folder: Path) -> None:
    """Decode every kernel once, so the listing cache (REORDER_CACHE, shared) holds them."""
    from reorder.binary.cubin import read_cubin
    from reorder.sass.model import decode_kernel

    for path in corpus_files(folder):
        cubin = read_cubin(path)
        for k in cubin.kernels:
            decode_kernel(cubin, k.name)


def corpus_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("sm_*/*.cubin"))


@pytest.fixture(scope="session")
def corpus(corpus_dir) -> list:
    """Every (cubin, KernelCode) of the corpus, decoded once per session."""
    from reorder.binary.cubin import read_cubin
    from reorder.sass.model import decode_kernel

    out = []
    for path in corpus_files(corpus_dir):
        cubin = read_cubin(path)
        out += [(cubin, decode_kernel(cubin, k.name)) for k in cubin.kernels]
    return out


def pytest_collection_modifyitems(config, items) -> None:
    """The corpus-wide sweeps (marked slow) first: xdist hands tests out in this order, and a
    40 s sweep handed out last leaves the other core idle while it runs."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
