"""`reorder bench` on the CPU: the suite file parses, one grid point runs on the static model,
the CSV labels it predicted, and the heatmap and bar chart are drawn."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from benchmarks.bench import BenchKernel, draw, load_suite, run_bench

SUITE = Path(__file__).resolve().parent.parent / "benchmarks" / "suite.toml"


def test_suite_lists_every_kernel_with_its_grid():
    kernels, l2 = load_suite(SUITE)
    assert len(kernels) == 11 and set(l2) == {"warm", "cold"}
    for k in kernels:
        assert k.cubin.exists() and k.spec.exists() and k.points


def test_one_point_on_the_static_model(tmp_path):
    (rms,) = [k for k in load_suite(SUITE)[0] if k.name == "rmsnorm_triton_style"]
    one = BenchKernel(rms.name, rms.cubin, rms.spec, True, 2, 120.0, ({"rows": 16},))
    csv = run_bench([one], ("warm",), tmp_path, "cpu", 1)
    frame = pd.read_csv(csv)
    assert list(frame["point"]) == ["rows=16"] and not frame["measured"].any()
    assert frame["verifier"].iloc[0] == "legal"
    for png in draw(csv):
        assert png.stat().st_size > 10_000
