"""A content-addressed cache on disk, shared by every process of a search.

Some answers cost a subprocess and never change for the same input: nvdisasm's listing of a
block of instruction words (a search asks for the same renamed words in trial after trial,
from several worker processes), ptxas' cubin for a PTX file. They are kept under
`$REORDER_CACHE` (default `~/.cache/reorder`), one file per answer, named by the SHA-256 of
everything the answer depends on (the input bytes and the tool's version line), so an entry
can never be stale. Files are written atomically; a cache that cannot be written only costs
the recomputation.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from reorder.base.errors import InputError


def cache_root() -> Path:
    return Path(os.environ.get("REORDER_CACHE") or Path.home() / ".cache" / "reorder")


def cache_folder(kind: str) -> Path:
    """The cache's folder for `kind`, made; a cache the answer cannot do without (compiled PTX)
    that cannot be made is one InputError naming REORDER_CACHE (pointed at a file, it said
    only "Not a directory")."""
    folder = cache_root() / kind
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        named = os.environ.get("REORDER_CACHE")
        where = f"REORDER_CACHE={named}" if named else f"the cache {cache_root()} (set REORDER_CACHE to move it)"
        raise InputError(
            f"{where}: cannot make {folder} there: {exc.strerror or exc}; point REORDER_CACHE at a writable folder"
        ) from None
    return folder


def key_of(*parts: bytes | str) -> str:
    """A file-name-safe digest of every part (parts are kept apart: ('ab', 'c') != ('a', 'bc'))."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()


def entry_path(kind: str, key: str, root: Path | None = None) -> Path:
    """Where the answer for (kind, key) lives in the cache at `root` (default: cache_root())."""
    return (root or cache_root()) / kind / key[:2] / f"{key}.json"


def cached_json(kind: str, key: str, compute: Callable[[], object]) -> Any:
    """The JSON-able answer stored for (kind, key), computing and storing it when absent."""
    path = entry_path(kind, key)
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        pass
    value = compute()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        scratch = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        scratch.write_text(json.dumps(value))
        os.replace(scratch, path)
    except OSError:
        pass  # read-only home, full disk: the answer stands, uncached
    return value
