"""The Triton benchmark on the CPU: reorder.suite.triton_build on one config (Triton compiles for
sm_90 without a GPU, reorder's PTX candidates compiled by Triton's own cubin stage), then
reorder.suite.triton_gpu walked with --dry-run over what it built (every job made up, every
row and file written), its deadline, a crashing check, and the cell statistics."""

from __future__ import annotations

import csv
import os

import numpy as np
import pytest

from reorder.suite.triton_cells import Member, cell_summary, config_rows, roofline
from timing.multi import split_rounds, time_ci

FAMILY = "rmsnorm_row_fp16"


def _rows(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


# ---------------------------------------------------------------- statistics (pure)


def _matrix(means, rounds=40, noise=0.002, seed=1):
    rng = np.random.default_rng(seed)
    return np.asarray(means) * (1 + noise * rng.standard_normal((rounds, len(means))))


MEMBERS = [Member("w4"), Member("w4", "ptx-barrier"), Member("w8"), Member("w8", "sass")]


def test_the_cell_names_tritons_best_config_and_the_autotuners_pick_with_reorder():
    row = cell_summary(MEMBERS, _matrix([10.0, 8.0, 9.0, 9.5]), 1_000_000, 0, {"bytes_per_s": 1e12, "flops": 1e15})
    assert row["triton_best_config"] == "w8" and row["reorder_best"] == "w4/ptx-barrier"
    assert row["reorder_best_is_candidate"] and row["speedup"] == pytest.approx(9 / 8, rel=0.01)
    assert row["ratio_ci_low"] < row["ratio"] < row["ratio_ci_high"] < 1 and not row["triton_wins"]
    assert row["roof_bound"] == "memory" and row["roofline_triton"] == pytest.approx(1.0 / 9.0, rel=0.01)
    assert row["rounds_pick"] == row["rounds_report"] == 20


def test_a_pick_that_loses_on_the_report_rounds_is_shown_as_tritons_win():
    times = _matrix([10.0, 9.0, 10.0, 10.0])
    times[1::2, 1] = 11.0  # looks best where it is picked, slower where it is reported
    row = cell_summary(MEMBERS, times, 1, 0, {"bytes_per_s": 1.0})
    assert row["reorder_best"] == "w4/ptx-barrier" and row["triton_wins"] and row["speedup"] < 1


def test_each_config_gets_its_best_candidate_against_its_own_original():
    rows = config_rows(MEMBERS + [Member("w16")], _matrix([10.0, 8.0, 9.0, 9.5, 12.0]))
    by = {r["config"]: r for r in rows}
    assert by["w4"]["best_candidate"] == "ptx-barrier" and by["w4"]["speedup"] == pytest.approx(1.25, rel=0.01)
    assert by["w8"]["ratio"] > 1 and by["w8"]["ratio_ci_low"] > 1  # reorder's sass is slower there: reported
    assert by["w16"]["candidates_timed"] == 0 and "best_candidate" not in by["w16"]


def test_a_gemm_is_measured_against_the_compute_roof_and_halves_split_the_rounds():
    out = roofline(0, 2 * 10**12, {"flops": 1e15, "bytes_per_s": 1e12}, 4000.0, 2000.0)
    assert out["roof_bound"] == "compute" and out["roofline_triton"] == 0.5 and out["roofline_reorder"] == 1.0
    pick, report = split_rounds(np.arange(10).reshape(5, 2))
    assert pick.tolist() == [[0, 1], [4, 5], [8, 9]] and report.tolist() == [[2, 3], [6, 7]]
    mean, low, high = time_ci([1.0, 1.1, 0.9, 1.0, 1.05, 0.95])
    assert low <= mean <= high


# ---------------------------------------------------------------- the build and the dry run


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """One config built on the CPU (SASS step left out here: tests/test_triton_kernels covers it)."""
    pytest.importorskip("triton")
    import reorder.suite.triton_build as tb

    out = tmp_path_factory.mktemp("build")
    saved, env = tb.sass_candidate, os.environ.get("TRITON_CACHE_DIR")
    tb.sass_candidate = lambda cubin: (None, "left out in this test")
    try:
        manifest = tb.build(out, [FAMILY], jobs=1, only={0})
    finally:
        tb.sass_candidate = saved
        os.environ.pop("TRITON_CACHE_DIR", None) if env is None else os.environ.update(TRITON_CACHE_DIR=env)
    return out, manifest


def test_the_build_holds_the_original_ptx_candidates_and_a_spec_per_shape(built):
    from reorder.build.ptxcandidate import verdict

    out, manifest = built
    (family,) = manifest["families"]
    (config,) = family["configs"]
    assert config["status"] == "ok" and config["config"] == {"num_warps": 2} and not config["other_cubin"]
    steps = {c["name"]: c for c in config["candidates"]}
    assert steps["stage-check"]["status"] == "same"  # Triton's PTX through the same cubin stage = the original
    made = [c for c in config["candidates"] if c["status"] == "ok"]
    assert made and all(c["name"].startswith("ptx-") for c in made)
    for c in made:
        path = out / config["folder"] / c["cubin"]
        assert path.read_bytes() != (out / config["folder"] / "original.cubin").read_bytes()
        assert verdict(path, config["kernel"]).ok
    assert list(config["specs"]) == [s["shape"] for s in family["shapes"]] == ["16x4096", "1024x4096", "8192x4096"]
    spec = config["specs"]["1024x4096"]
    assert spec["kernel"]["block"] == [64, 1, 1] and spec["kernel"]["grid"] == [1024, 1, 1]
    assert spec["kernel"]["shared"] == config["shared"]


def test_the_hooks_answer_is_stored_where_the_gpu_run_points_reorder(built, monkeypatch):
    from reorder.triton.request import Request
    from reorder.triton.rewrite import rewrite

    out, manifest = built
    config = manifest["families"][0]["configs"][0]
    original = (out / config["folder"] / "original.cubin").read_bytes()
    monkeypatch.setenv("REORDER_CACHE", str(out / "reorder_cache"))
    assert rewrite(original, Request(noalias=True)).data == original  # what the build stored (sass left out)


def test_a_dry_run_writes_every_table_the_summary_and_the_readme_row(built, tmp_path):
    from reorder.suite import triton_gpu

    build, _ = built
    assert triton_gpu.main(["--build", str(build), "--out", str(tmp_path), "--dry-run", "--deadline", "200"]) == 0
    cells = _rows(tmp_path / "triton_cells.csv")
    assert [(r["shape"], r["l2"]) for r in cells] == [
        (s, l2) for s in ("16x4096", "1024x4096", "8192x4096") for l2 in ("warm", "cold")
    ]
    assert all(
        r["status"] == "ok" and r["gpu"] == "none (dry run)" and r["triton_best_config"] == "num_warps2" for r in cells
    )
    timed = int(cells[0]["candidates_timed"])
    assert timed >= 1 and len(_rows(tmp_path / "triton_checks.csv")) == 3 * timed
    assert len(_rows(tmp_path / "triton_configs.csv")) == 6
    steps = {r["step"]: r for r in _rows(tmp_path / "triton_steps.csv")}
    assert steps["jit"]["config"] == "num_warps2" and steps["readme"]["status"] == "dry"
    assert len(list(tmp_path.iterdir())) <= 7  # the device returns 8 files: room for a log
    summary = (tmp_path / "summary.md").read_text()
    assert "| rmsnorm_row_fp16 | 1024x4096 | cold | num_warps2 |" in summary and "## Totals" in summary


def test_the_live_run_sends_real_jobs_and_without_a_gpu_each_fails_for_that_alone(built, tmp_path):
    """The GPU path proper (no --dry-run) on the CPU: every job is built, pickled and run in a
    worker, and fails only for want of the GPU (its first GPU run died in Job.of, which the dry
    run never reaches)."""
    import importlib.util

    from reorder.suite import triton_gpu

    if importlib.util.find_spec("cupy") is not None:
        pytest.skip("cupy is installed: this test is for machines without a GPU stack")
    build, _ = built
    argv = ["--build", str(build), "--out", str(tmp_path), "--deadline", "75", "--no-readme"]
    assert triton_gpu.main(argv) == 0
    gpu_missing = (
        "cupy is not installed",
        "No module named 'cupy'",
        "No module named 'torch'",
        "Torch not compiled with CUDA",
    )
    checks, cells = _rows(tmp_path / "triton_checks.csv"), _rows(tmp_path / "triton_cells.csv")
    steps = _rows(tmp_path / "triton_steps.csv")
    assert checks and cells and steps
    # a check the deadline (wall time, so a busy machine's) left out says so; every other one
    # failed for want of the GPU, and at least one was sent
    sent = [r for r in checks if r["detail"] != "deadline"]
    assert sent and all(any(m in r["detail"] for m in gpu_missing) for r in sent)
    assert all(r["status"] == "skipped" or any(m in r["reason"] for m in gpu_missing) for r in cells)
    assert all(any(m in r["reason"] for m in gpu_missing) for r in steps)


def test_past_the_deadline_every_cell_is_a_skipped_row_and_the_run_ends_cleanly(built, tmp_path):
    from reorder.suite import triton_gpu

    build, _ = built
    assert (
        triton_gpu.main(
            [
                "--build",
                str(build),
                "--out",
                str(tmp_path),
                "--dry-run",
                "--deadline",
                "0",
                "--no-readme",
                "--families",
                f"{FAMILY},no_such_family",
            ]
        )
        == 0
    )
    rows = _rows(tmp_path / "triton_cells.csv")
    assert {(r["family"], r["status"]) for r in rows} == {("no_such_family", "error"), (FAMILY, "skipped")}
    assert "cells not measured: 7" in (tmp_path / "summary.md").read_text()


def test_a_check_that_crashes_is_retried_per_candidate_and_the_culprit_is_left_out(built, tmp_path, monkeypatch):
    from reorder.suite import triton_gpu

    build, manifest = built
    config = manifest["families"][0]["configs"][0]
    culprit = f"{config['label']}/{next(c['name'] for c in config['candidates'] if c['status'] == 'ok')}"
    dry_run = triton_gpu.Dry.run

    def run(self, func, *args, **kwargs):
        if func.__name__ == "check_job" and (len(args[0][0][1]) > 1 or args[0][0][1][0].label == culprit):
            return "crashed", "cudaErrorIllegalAddress"
        return dry_run(self, func, *args, **kwargs)

    monkeypatch.setattr(triton_gpu.Dry, "run", run)
    assert (
        triton_gpu.main(
            [
                "--build",
                str(build),
                "--out",
                str(tmp_path),
                "--dry-run",
                "--no-readme",
                "--no-jit-check",
                "--families",
                FAMILY,
            ]
        )
        == 0
    )
    checks = {(r["shape"], r["candidate"]): r["check"] for r in _rows(tmp_path / "triton_checks.csv")}
    assert checks[("16x4096", culprit)] == "crashed"
    assert all(v == "identical" for (_, label), v in checks.items() if label != culprit)
    cell = _rows(tmp_path / "triton_cells.csv")[0]
    assert int(cell["candidates_rejected"]) == 1 and cell["status"] == "ok"
