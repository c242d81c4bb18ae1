"""The checked-in listings (tests/corpus/listings.py) cover every checked-in cubin, are what
this nvdisasm lists (on a sample: every thirty-second cubin; all under REORDER_FULL_SWEEPS=1), and are
served only under this nvdisasm's keys; the tier run's recorded listings likewise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import load_listings
from sweeps import sample

from reorder.binary.tools import find_tool, have_tool, version_line

needs_nvdisasm = pytest.mark.skipif(not have_tool("nvdisasm"), reason="nvdisasm not installed")


def test_every_checked_in_cubin_has_its_listing() -> None:
    listings = load_listings()
    _, held = listings.read()
    missing = [p.relative_to(listings.ROOT) for p in listings.cubins() if listings.digest(p.read_bytes()) not in held]
    assert not missing, f"no listing for {[str(m) for m in missing[:3]]} ...: run python tests/corpus/listings.py"
    assert len(listings.cubins()) > 100


@needs_nvdisasm
def test_the_listings_are_this_nvdisasms_own() -> None:
    from reorder.sass.model import _listing

    listings = load_listings()
    made_by, held = listings.read()
    if version_line(find_tool("nvdisasm")) != made_by:
        pytest.skip(f"the listings were made by {made_by!r}; this nvdisasm is another (they are not used)")
    chosen = sample(listings.cubins(), every=32)
    for path in chosen:
        data = path.read_bytes()
        assert json.loads(held[listings.digest(data)]) == _listing(data), path


@needs_nvdisasm
def test_another_nvdisasm_is_served_none(tmp_path: Path, monkeypatch) -> None:
    listings = load_listings()
    assert listings.seed(tmp_path / "ours") > 100
    monkeypatch.setattr(listings, "read", lambda archive=None: ("another build", {}))
    assert listings.seed(tmp_path / "theirs") == 0 and not (tmp_path / "theirs").exists()


@needs_nvdisasm
def test_the_tier_listings_are_served_under_their_own_keys_to_their_own_nvdisasm(tmp_path: Path) -> None:
    listings = load_listings()
    count = listings.seed_tier(tmp_path / "ours")
    if count == 0:
        pytest.skip("the tier's listings were made by another nvdisasm (they are not used)")
    files = sorted((tmp_path / "ours").glob("*/*/*.json"))
    assert len(files) == count > 100
    for path in sample(files, every=16):
        kind, shelf = path.parent.parent.name, path.parent.name
        assert kind in listings.LISTING_KINDS and path.stem.startswith(shelf) and len(path.stem) == 64
        doc = json.loads(path.read_text())
        records = [r for rs in doc.values() for r in rs] if kind == listings.KIND else doc
        assert records and all(isinstance(r, dict) and "opcode" in r for r in records), path
    other = tmp_path / "other.tar.xz"
    manifest = {"nvdisasm": "another build", "entries": [f"nvdisasm/{'ab' * 32}"]}
    listings._write(other, [(listings.MANIFEST, json.dumps(manifest).encode()), (f"nvdisasm/{'ab' * 32}.json", b"[]")])
    assert listings.seed_tier(tmp_path / "theirs", other) == 0 and not (tmp_path / "theirs").exists()
