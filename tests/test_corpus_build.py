"""The checked-in corpus is what nvcc makes of tests/corpus/src, and the held-out builds what
nvcc and ptxas make of tests/corpus/heldout/src: the tests read those builds instead of
compiling 68 of them every run, so this checks the claim on a sample (every fourth source and
arch pair, every fourth held-out build; all of them under REORDER_FULL_SWEEPS=1)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from conftest import CORPUS, _load_build
from sweeps import sample

BUILDS = {"cubin": ("sm_80", "sm_90"), "blackwell": ("sm_100a", "sm_120")}


def _pairs(build) -> list[tuple[str, str, str]]:
    """(folder, arch, source stem) of every checked-in build, in a fixed order."""
    return [(f, a, s.stem) for f, archs in BUILDS.items() for a in archs for s in build.corpus_sources()]


def test_every_source_has_its_checked_in_build_at_every_arch() -> None:
    build = _load_build()
    for folder, arch, stem in _pairs(build):
        assert (CORPUS / folder / arch / f"{stem}.cubin").is_file(), (folder, arch, stem)
    assert len(_pairs(build)) == 4 * len(build.corpus_sources())


def test_this_nvcc_makes_the_checked_in_bytes(tmp_path: Path) -> None:
    build = _load_build()
    if not build.nvcc_available():
        pytest.skip("needs nvcc")
    release = build.nvcc_release()
    if release != build.BUILT_WITH:
        pytest.skip(f"the checked-in builds were made by {build.BUILT_WITH}, this nvcc is {release}")
    chosen = sample(_pairs(build), every=4)
    assert {a for _, a, _ in chosen} == {"sm_80", "sm_90", "sm_100a", "sm_120"}  # the sample reaches every arch
    for folder, arch, stem in chosen:
        (made,) = build.build_corpus(tmp_path / folder, (arch,), stems=(stem,))
        assert made.read_bytes() == (CORPUS / folder / arch / f"{stem}.cubin").read_bytes(), (folder, arch, stem)


def test_this_nvcc_makes_the_checked_in_held_out_bytes(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("heldout_build_check", CORPUS / "heldout" / "build.py")
    heldout = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(heldout)
    build = _load_build()
    if not heldout.nvcc_available():
        pytest.skip("needs nvcc and ptxas")
    if build.nvcc_release() != build.BUILT_WITH:
        pytest.skip(f"the checked-in builds were made by {build.BUILT_WITH}, this nvcc is {build.nvcc_release()}")
    chosen = tuple(sample(heldout.BUILDS, every=4))
    assert len({arch for arch, _ in chosen}) >= 3
    made = heldout.build(tmp_path, chosen)
    assert len(made) == len(chosen)
    for path in made:
        assert path.read_bytes() == (CORPUS / "heldout" / "cubin" / path.name).read_bytes(), path.name
    assert sorted(p.name for p in (CORPUS / "heldout" / "cubin").glob("*.cubin")) == sorted(
        f"{arch}_O{level}.cubin" for arch, level in heldout.BUILDS
    )
