"""On the GPU: `reorder probe` (sliding and region stamps) end to end on the RMSNorm kernel.

Templates are compiled with ptxas; a GPU machine without the CUDA toolkit uses Triton's
bundled ptxas (reorder.binary.tools).
"""

from __future__ import annotations

import csv
import itertools
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from reorder.binary.tools import have_tool
from reorder.suite.sweep import apply_sweep, spec_toml

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
CUBIN = ROOT / "benchmarks" / "kernels" / "cubin" / "rmsnorm.cubin"
SPEC = ROOT / "benchmarks" / "kernels" / "specs" / "rmsnorm_triton_style.toml"


@pytest.fixture(scope="module")
def spec(tmp_path_factory) -> Path:
    if not have_tool("ptxas"):
        pytest.skip("no ptxas for the probe templates")
    raw = dict(apply_sweep(tomllib.loads(SPEC.read_text()), {"rows": 4}))
    raw.pop("grid_sweep", None)
    path = tmp_path_factory.mktemp("spec") / "rms4.toml"
    path.write_text(spec_toml(raw))
    return path


def _reorder(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "reorder", *args], capture_output=True, text=True, timeout=900, check=False
    )


def test_sliding_probe_over_the_first_chunk(spec, tmp_path) -> None:
    out = tmp_path / "timeline.csv"
    done = _reorder("probe", str(CUBIN), "--launch", str(spec), "--range", "cb0-dc0", "-o", str(out))
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(out.open()))
    assert len(rows) >= 8 and all(int(r["samples"]) > 0 for r in rows)
    cycles = [float(r["cycles"]) for r in rows]
    assert cycles == sorted(cycles) or max(a - b for a, b in itertools.pairwise(cycles)) < 50
    assert any("LDG" in r["waited_on"] for r in rows), rows  # the weight load's wait is found


def test_region_stamps_advance(spec, tmp_path) -> None:
    out = tmp_path / "stamps.csv"
    done = _reorder("probe", str(CUBIN), "--launch", str(spec), "--stamps", "0,bb0,1080", "-o", str(out))
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(out.open()))
    by_warp: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        by_warp.setdefault((r["launch"], r["warp"]), []).append(r)
    assert by_warp
    for stamps in by_warp.values():
        stamps.sort(key=lambda r: int(r["stamp"]))
        clocks = [int(r["clock"]) for r in stamps]
        assert clocks == sorted(clocks)
        assert len({r["sm"] for r in stamps}) == 1  # a warp stays on its SM
        assert all(int(r["globaltimer_ns"]) <= int(r["globaltimer_after_ns"]) for r in stamps)
