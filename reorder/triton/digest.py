"""Which reorder made a result: a digest of its moves and verifier, part of every Triton cache
key and of every stamped marker (`reorder.triton.request`), so nothing is served by another
reorder than made it."""

from __future__ import annotations

import functools
from pathlib import Path

from reorder.base.diskcache import key_of

ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def code_digest() -> str:
    """A digest of reorder's moves and verifier (sources and latency tables): part of every
    cache key, so a result is never served by an older or newer reorder than made it."""
    parts: list[bytes] = []
    for package in ("reorder", "legality"):
        for path in sorted((ROOT / package).rglob("*")):
            if path.suffix in (".py", ".toml") and path.is_file() and "__pycache__" not in path.parts:
                parts += [str(path.relative_to(ROOT)).encode(), path.read_bytes()]
    return key_of(*parts)[:16]
