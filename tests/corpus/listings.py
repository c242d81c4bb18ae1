"""nvdisasm's listings of every cubin checked into the tree, checked in beside them.

Every test run disassembles the same checked-in cubins (the corpus, the held-out builds, the
bundled kernels, Triton's cubins, the probes' references): about 150 nvdisasm processes at
0.3-0.6 CPU-s each, a tenth of the CPU tier. `listings.tar.xz` holds each one's listing (the
JSON reorder's listing cache keeps, reorder.base.diskcache) and the nvdisasm version line that
made them. conftest puts them into the test run's cache under the keys reorder computes with
this machine's nvdisasm, when its version line is the archive's; another nvdisasm finds none of
them and lists afresh, so an entry is never served to a tool that did not make it.
tests/test_listings.py checks that the archive covers every checked-in cubin and, on a sample,
equals this nvdisasm's own listing.

    python tests/corpus/listings.py     # remake it after adding or changing a cubin

The CPU tier also lists cubins it makes: nvcc's builds of the probe pairs, the suite and the
Blackwell kernels, reorder's candidates, Triton's compiles (about 220 nvdisasm processes, 120
CPU-s, a fifth of the tier). Those bytes are the same at every run of one tree with one
toolkit, so `tier_listings.tar.xz` holds the listings one CPU-tier run made, by the cache's
own keys (the bytes' digest and nvdisasm's version line: never served for other bytes or
another nvdisasm). A change that makes other bytes only misses them (nvdisasm lists afresh);
remake it when the tier's nvdisasm time has grown back:

    python tests/corpus/listings.py --tier   # runs the CPU tier once with an empty cache
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
ARCHIVE = HERE / "listings.tar.xz"
TIER_ARCHIVE = HERE / "tier_listings.tar.xz"
FOLDERS = ("tests", "benchmarks", "reorder", "legality", "timing")
MANIFEST = "manifest.json"
KIND = "nvdisasm-cubin"  # reorder.sass.model.LISTING_KIND: the cache kind of a cubin's listing
LISTING_KINDS = (KIND, "nvdisasm")  # and reorder.sass.rename's, for raw instruction words


def cubins(root: Path = ROOT) -> list[Path]:
    """Every cubin under the tree's source folders (hidden and cache folders left out)."""
    found = []
    for folder in FOLDERS:
        for path in (root / folder).rglob("*.cubin"):
            parts = path.relative_to(root).parts
            if not any(p.startswith(".") or p == "__pycache__" for p in parts):
                found.append(path)
    return sorted(found)


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read(archive: Path = ARCHIVE) -> tuple[str, dict[str, bytes]]:
    """(the version line that made the listings, cubin SHA-256 -> the listing's JSON text)."""
    with tarfile.open(archive, "r:xz") as tar:
        manifest = json.loads(_member(tar, MANIFEST))
        return manifest["nvdisasm"], {sha: _member(tar, f"{sha}.json") for sha in manifest["listings"]}


def _member(tar: tarfile.TarFile, name: str) -> bytes:
    handle = tar.extractfile(name)
    if handle is None:
        raise KeyError(name)
    return handle.read()


def seed(cache_root: Path, archive: Path = ARCHIVE) -> int:
    """Put the archive's listings into the listing cache at `cache_root` under this machine's
    keys; how many (none when this nvdisasm's version line is not the archive's, or there is
    no nvdisasm or no archive)."""
    from reorder.base.diskcache import entry_path
    from reorder.base.errors import ReorderError
    from reorder.binary.tools import find_tool, version_line
    from reorder.sass.model import listing_key

    try:
        version = version_line(find_tool("nvdisasm"))
        made_by, listings = read(archive)
    except (ReorderError, OSError, KeyError, ValueError, tarfile.TarError):
        return 0
    if version != made_by:
        return 0
    count = 0
    for path in cubins():
        data = path.read_bytes()
        text = listings.get(digest(data))
        if text is None:
            continue
        target = entry_path(KIND, listing_key(data), cache_root)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text)
        count += 1
    return count


def seed_tier(cache_root: Path, archive: Path = TIER_ARCHIVE) -> int:
    """Put the recorded tier run's listings into the listing cache at `cache_root`, under the
    keys they were recorded by; how many (none for another nvdisasm version line)."""
    from reorder.base.diskcache import entry_path
    from reorder.base.errors import ReorderError
    from reorder.binary.tools import find_tool, version_line

    try:
        version = version_line(find_tool("nvdisasm"))
        with tarfile.open(archive, "r:xz") as tar:
            manifest = json.loads(_member(tar, MANIFEST))
            if manifest["nvdisasm"] != version:
                return 0
            count = 0
            for entry in manifest["entries"]:
                kind, key = entry.split("/")
                target = entry_path(kind, key, cache_root)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(_member(tar, f"{entry}.json"))
                count += 1
            return count
    except (ReorderError, OSError, KeyError, ValueError, tarfile.TarError):
        return 0


def record_tier(archive: Path = TIER_ARCHIVE) -> int:
    """Run the CPU tier once with an empty cache and archive every listing it made that the
    checked-in cubins' archive does not already give; how many."""
    import subprocess
    import tempfile

    from reorder.binary.tools import find_tool, version_line
    from reorder.sass.model import listing_key

    with tempfile.TemporaryDirectory(prefix="reorder-tier-listings-") as cache:
        env = dict(os.environ, REORDER_CACHE=cache)
        command = [sys.executable, "-m", "pytest", "-q", "-n", "auto", "-m", "not gpu", "-p", "no:cacheprovider"]
        subprocess.run(command, cwd=ROOT, env=env, check=True)
        checked_in = {listing_key(p.read_bytes()) for p in cubins()}
        entries = {}
        for kind in LISTING_KINDS:
            for path in sorted((Path(cache) / kind).glob("*/*.json")):
                if path.stem not in checked_in:
                    entries[f"{kind}/{path.stem}"] = path.read_bytes()
        manifest = {"nvdisasm": version_line(find_tool("nvdisasm")), "entries": sorted(entries)}
        _write(
            archive,
            [(MANIFEST, json.dumps(manifest, indent=1).encode())]
            + [(f"{name}.json", entries[name]) for name in sorted(entries)],
        )
    return len(entries)


def _write(archive: Path, members: list[tuple[str, bytes]]) -> None:
    """`archive` written atomically from (name, bytes) members."""
    scratch = archive.with_name(f".{archive.name}.{os.getpid()}.tmp")
    with tarfile.open(scratch, "w:xz", preset=9) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    os.replace(scratch, archive)


def make(archive: Path = ARCHIVE) -> int:
    """Write the archive from this nvdisasm's listing of every checked-in cubin; how many."""
    from reorder.binary.tools import find_tool, version_line
    from reorder.sass.model import _listing

    listings: dict[str, bytes] = {}
    for path in cubins():
        data = path.read_bytes()
        if digest(data) not in listings:
            listings[digest(data)] = json.dumps(_listing(data)).encode()
    manifest = {"nvdisasm": version_line(find_tool("nvdisasm")), "listings": sorted(listings)}
    _write(
        archive,
        [(MANIFEST, json.dumps(manifest, indent=1).encode())]
        + [(f"{sha}.json", listings[sha]) for sha in sorted(listings)],
    )
    return len(listings)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    if sys.argv[1:] == ["--tier"]:
        print(f"{TIER_ARCHIVE}: {record_tier()} listings")
    else:
        print(f"{ARCHIVE}: {make()} listings")
