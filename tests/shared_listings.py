"""A test's own cache folder that still shares the run's nvdisasm listings.

Some tests keep a private REORDER_CACHE so that what they check is made afresh (a ptxas
compile, a build the test must see happen). nvdisasm's listing is a function of the bytes and
the tool alone, and listing the checked-in cubins again cost a private cache 0.3-0.6 CPU-s a
cubin: the listing kinds of the private folder are links to the run's shared ones (seeded from
tests/corpus/listings.tar.xz by conftest).
"""

from __future__ import annotations

import os
from pathlib import Path

from conftest import load_listings

SHARED = Path(os.environ["REORDER_CACHE"])  # the run's cache, set by conftest before any test module loads
LISTING_KINDS = load_listings().LISTING_KINDS  # reorder.sass.model's and reorder.sass.rename's cache kinds


def private_cache(folder: Path) -> Path:
    """`folder` made a cache of its own whose listing kinds are the run's."""
    folder.mkdir(parents=True, exist_ok=True)
    for kind in LISTING_KINDS:
        (SHARED / kind).mkdir(parents=True, exist_ok=True)
        (folder / kind).symlink_to(SHARED / kind, target_is_directory=True)
    return folder
