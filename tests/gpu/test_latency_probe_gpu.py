"""On silicon: what the verifier rejects for a RAW under-stall is really wrong, and what
it accepts is really right, for every pair the latency probe measures.

The chains are compiled with nvcc, which the GPU machine lacks: point REORDER_PROBE_BUILD
at a folder from `python -m benchmarks.latency_probe_gpu --prebuild DIR` (CPU), or run
where nvcc is present and the test builds them itself.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

from legality.silicon import latency_probe as lp  # noqa: E402
from legality.silicon import probe_chains as pc  # noqa: E402


@pytest.fixture(scope="module")
def rows(tmp_path_factory) -> list:
    folder = os.environ.get("REORDER_PROBE_BUILD")
    if folder is None:
        if shutil.which("nvcc") is None:
            pytest.skip("no prebuilt probe chains (REORDER_PROBE_BUILD) and no nvcc to build them")
        folder = tmp_path_factory.mktemp("chains")
        pc.build_all(folder, pc.PAIRS, 90)
    return [r for r in lp.run_pairs(Path(folder), [p.name for p in pc.PAIRS], isolate=True) if r.floor is not None]


def test_most_pairs_are_measured(rows) -> None:
    assert len(rows) >= 20, [r.pair for r in rows]


def test_every_stall_the_verifier_accepts_is_correct_on_silicon(rows) -> None:
    for r in rows:
        assert set(r.verifier_accepted) <= set(r.correct_stalls), (r.pair, r.verifier_accepted, r.wrong_stalls)


def test_every_stall_the_verifier_rejects_is_wrong_on_silicon(rows) -> None:
    """The verifier's margin is exactly the measured floor: no rejected stall computes right."""
    for r in rows:
        rejected = set(range(1, 16)) - set(r.verifier_accepted)
        assert rejected, r.pair
        assert rejected <= set(r.wrong_stalls) | set(r.error_stalls), (r.pair, sorted(rejected), r.correct_stalls)
