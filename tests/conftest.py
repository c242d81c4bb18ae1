"""Shared fixtures and the GPU-tier switch: the corpus of cubins built from the project's own CUDA sources.

The corpus is the checked-in build of tests/corpus/src (sm_80 and sm_90 under cubin/, sm_100a
and sm_120 under blackwell/); tests/test_corpus_build.py checks that this nvcc still makes
those bytes, so the tests read what the real build makes without paying for it each run.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from once import once


# Compiled PTX and nvdisasm listings are cached on disk (reorder.base.diskcache): the tests keep
# theirs apart from the user's, shared by every test (and CLI subprocess) of one session, and
# start from the checked-in listings of the checked-in cubins and of the cubins a tier run makes
# (tests/corpus/listings.py).
def load_listings():
    """tests/corpus/listings.py, the checked-in listings' module."""
    spec = importlib.util.spec_from_file_location("corpus_listings", Path(__file__).parent / "corpus" / "listings.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if "REORDER_CACHE" not in os.environ:
    os.environ["REORDER_CACHE"] = tempfile.mkdtemp(prefix="reorder-test-cache-")
    _listings = load_listings()
    _listings.seed(Path(os.environ["REORDER_CACHE"]))
    _listings.seed_tier(Path(os.environ["REORDER_CACHE"]))


def _gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no cupy, no driver, no device
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


def built_once(tmp_path_factory, name: str, make) -> list[Path]:
    """`make(folder)`'s list of files, made once per test run: pytest-xdist's workers share one
    folder (under their common base temp); the first to take its lock makes it, and decodes
    every cubin made, so the listing cache (REORDER_CACHE, shared) holds them for the others."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent

    def made() -> str:
        paths = [Path(p) for p in make(shared / name)]
        _decode_all([p for p in paths if p.suffix == ".cubin"])
        return json.dumps([str(p) for p in paths])

    return [Path(p) for p in json.loads(once(shared / f"{name}.json", made))]


@pytest.fixture(scope="session")
def corpus_dir(tmp_path_factory) -> Path:
    """The checked-in sm_80 and sm_90 corpus, its listings decoded once per test run (built_once)."""
    folder = CORPUS / "cubin"
    return built_once(tmp_path_factory, "corpus", lambda _: [folder, *corpus_files(folder)])[0]


@pytest.fixture(scope="session")
def blackwell_corpus_dir(tmp_path_factory) -> Path:
    """The checked-in sm_100a and sm_120 corpus, its listings decoded once per test run."""
    folder = CORPUS / "blackwell"
    return built_once(tmp_path_factory, "corpus-blackwell", lambda _: [folder, *corpus_files(folder)])[0]


@pytest.fixture(scope="session")
def blackwell_corpus(blackwell_corpus_dir) -> list:
    """Every (cubin, KernelCode) of the Blackwell corpus, decoded once per session."""
    from reorder.binary.cubin import read_cubin
    from reorder.sass.model import decode_kernel

    out = []
    for path in corpus_files(blackwell_corpus_dir):
        cubin = read_cubin(path)
        out += [(cubin, decode_kernel(cubin, k.name)) for k in cubin.kernels]
    return out


def _decode_all(cubins: list[Path]) -> None:
    """Decode every kernel of `cubins` once (nvdisasm runs in its own processes, in parallel)."""
    from reorder.binary.cubin import read_cubin
    from reorder.sass.model import decode_kernel

    def decode(path: Path) -> None:
        cubin = read_cubin(path)
        for k in cubin.kernels:
            decode_kernel(cubin, k.name)

    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        list(pool.map(decode, cubins))


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


def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto`: one worker more than the cores this process may use. More than half of the
    tier's CPU is spent in processes the tests start (the CLI, nvcc, ptxas, nvdisasm, build
    workers) and some tests wait on a signal's effect; the extra worker keeps both cores busy
    meanwhile (2 cores: 5 min 03 s with three workers, 5 min 09-27 s with two, the same CPU-s;
    benchmarks/results/2026-12-03_cpu_tier_reuse)."""
    return len(os.sched_getaffinity(0)) + 1
