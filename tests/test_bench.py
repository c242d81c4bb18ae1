"""`reorder bench` on the CPU: the suite file parses, one grid point runs on the static model,
the CSV labels it predicted, and the heatmap and bar chart are drawn."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from reorder.cli.bench import BenchKernel, draw, load_suite, run_bench

SUITE = Path(__file__).resolve().parent.parent / "reorder" / "suite" / "suite.toml"


def test_suite_lists_every_kernel_with_its_grid():
    kernels, l2 = load_suite(SUITE)
    assert len(kernels) == 14 and set(l2) == {"warm", "cold"}
    for k in kernels:
        assert k.cubin.exists() and k.spec.exists() and k.points


@pytest.mark.slow
def test_one_point_on_the_static_model(tmp_path):
    """find_index: a small search through the same path as any kernel (the CPU tier counts CPU seconds)."""
    (fi,) = [k for k in load_suite(SUITE)[0] if k.name == "find_index"]
    one = BenchKernel(fi.name, fi.cubin, fi.spec, False, 2, 120.0, ({"N": 10000},))
    csv = run_bench([one], ("warm",), tmp_path, "cpu", 1)
    frame = pd.read_csv(csv)
    assert list(frame["point"]) == ["N=10000"] and not frame["measured"].any()
    assert frame["verifier"].iloc[0] == "legal"
    for png in draw(csv):
        assert png.stat().st_size > 10_000


def test_tune_once_covers_the_grid_from_one_search(tmp_path):
    """One search per kernel; every (point, L2) cell gets a row naming where it was tuned."""
    from reorder.cli.bench import run_bench_tuned_once

    (fi,) = [k for k in load_suite(SUITE)[0] if k.name == "find_index"]
    kernel = BenchKernel(fi.name, fi.cubin, fi.spec, False, 2, 120.0, fi.points[:2])
    csv = run_bench_tuned_once([kernel], ("warm", "cold"), tmp_path, "cpu", 1)
    frame = pd.read_csv(csv)
    assert len(frame) == 4 and set(frame["l2"]) == {"warm", "cold"}
    assert frame["tuned_at"].nunique() == 1 and frame["trials"].nunique() == 1
    assert not frame["measured"].any() and (frame["verifier"] == "legal").all()
    assert len(list((tmp_path / "find_index").glob("*/fast.cubin"))) == 1  # one search, one binary
    for png in draw(csv):
        assert png.stat().st_size > 10_000


def test_the_static_model_searches_once_per_kernel(tmp_path, capsys):
    """Without a GPU, shape and L2 do not enter the model: `reorder bench` searches each kernel
    once (as --tune-once) instead of repeating one search per cell."""
    from reorder.cli.main import main

    argv = [
        "bench",
        str(SUITE),
        "--kernels",
        "find_index",
        "--points",
        "0,1",
        "--budget",
        "2",
        "--device",
        "cpu",
        "--jobs",
        "1",
        "--out",
        str(tmp_path),
    ]
    assert main(argv) == 0
    frame = pd.read_csv(tmp_path / "bench.csv")
    assert len(frame) == 4 and frame["tuned_at"].nunique() == 1
    assert len(list((tmp_path / "find_index").glob("*/fast.cubin"))) == 1
    assert "one search per kernel" in capsys.readouterr().err
    assert main(argv[:-2] + ["--l2", "hot", "--out", str(tmp_path / "x")]) == 2


def test_struct_kernels_run_by_the_name_their_spec_gives(tmp_path):
    """Suite entries of struct kernels: the point spec keeps its [[type]]s and [[buffer]]s and
    the kernel is the one the spec names (a C++ signature), resolved to its symbol."""
    from reorder.cli.bench import _point_spec
    from timing.cli_support import validated_spec

    kernels = {k.name: k for k in load_suite(SUITE)[0]}
    for name in ("warp_select_tensor_k32", "warp_select_tensor_k100", "cfo_ta_descr"):
        k = kernels[name]
        assert k.points == ({},) and k.kernel_name != name
        spec = validated_spec(_point_spec(k, {}, tmp_path), [k.cubin], k.kernel_name)
        assert spec.name.startswith("_Z") and spec.types and spec.extra


def test_the_installed_suite_is_the_default_and_holds_its_own_files() -> None:
    """`reorder bench` with no suite file runs the suite installed with reorder: its cubins
    and specs sit inside the package (reorder/suite), not in a checkout's benchmarks/."""
    from reorder.suite import SUITE_FILE

    package = SUITE_FILE.parent
    kernels, _ = load_suite(SUITE_FILE)
    assert SUITE.resolve() == SUITE_FILE and len(kernels) >= 10
    for k in kernels:
        assert package in k.spec.resolve().parents and k.spec.is_file()
        assert package in k.cubin.resolve().parents and k.cubin.is_file()
