"""benchmarks/loops_gpu.py walked without a GPU (--dry-run: made-up ratios) on a build made here
from the checked-in Triton RMSNorm: manifest, launch specs, screen, best-against-best, summary."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from benchmarks import loops_gpu
from reorder.binary.tools import have_tool
from reorder.build.ptxcandidate import read_ptx, write_and_compile
from reorder.ptx.moves.prefetch import Prefetch

ROOT = Path(__file__).resolve().parent.parent
TRITON = ROOT / "reorder/suite/triton_kernels/sm_90"


@pytest.mark.skipif(not have_tool("ptxas"), reason="needs ptxas")
def test_dry_run_walks_every_step(tmp_path):
    build = tmp_path / "build"
    build.mkdir()
    shutil.copy(TRITON / "rmsnorm_looped_fp32.cubin", build / "orig.cubin")
    shutil.copy(TRITON / "rmsnorm_looped_fp32.cubin", build / "ls2.cubin")  # stands for a Triton build
    shutil.copy(TRITON / "rmsnorm_looped_fp32.toml", build / "cell.toml")
    shutil.copy(TRITON / "rmsnorm_looped_fp32.toml", build / "cell.second.toml")
    source = TRITON / "rmsnorm_looped_fp32.ptx"
    move = Prefetch("rmsnorm_looped", "$L__BB0_2", 1, True)
    built = write_and_compile(
        source, "rmsnorm_looped", move.apply(read_ptx(source)), [move.describe()], build / "pf1.ptx"
    )
    variants = [
        {"name": "orig", "kind": "triton", "cubin": "orig.cubin", "shared": 16},
        {"name": "ls2", "kind": "triton", "cubin": "ls2.cubin", "shared": 4096},
        {"name": "same", "kind": "triton", "same_as": "orig", "shared": 16},
        {"name": "pf1", "kind": "reorder", "cubin": built.cubin.name, "shared": 16},
        {"name": "refused", "kind": "reorder", "cubin": None, "refused": "no load", "shared": 16},
    ]
    cells = [
        {"block": 1024, "warps": 4, "n": n, "rows": 16, "spec": "cell.toml", "second": "cell.second.toml"}
        for n in (4096, 8192)
    ]
    manifest = {
        "commit": "test",
        "triton": "3.6.0",
        "configs": [{"block": 1024, "warps": 4, "original": "orig.cubin", "variants": variants}],
        "cells": cells,
        "suite": [
            {"kernel": "find_index", "move": "m", "noalias": False, "speculate": True, "cubin": None, "refused": "why"},
            {
                "kernel": "rms_norm_f32",
                "move": "p",
                "noalias": True,
                "speculate": False,
                "original": "orig.cubin",
                "cubin": "ls2.cubin",
            },
        ],
    }
    (build / "manifest.json").write_text(json.dumps(manifest))
    out = tmp_path / "out"
    assert loops_gpu.main(["--build", str(build), "--out", str(out), "--dry-run"]) == 0
    screen = list(csv.DictReader((out / "loops_screen.csv").open()))
    assert [r["variant"] for r in screen] == ["ls2", "pf1"] * 2  # distinct cubins only, the original excluded
    assert {r["shared"] for r in screen if r["variant"] == "ls2"} == {"4096"}  # its own shared memory
    cells_rows = list(csv.DictReader((out / "loops_cells.csv").open()))
    assert len(cells_rows) == 2 and all(r["status"] == "ok" and float(r["ratio"]) > 0 for r in cells_rows)
    assert {r["reorder_best"] for r in cells_rows} <= {"orig", "pf1"}
    summary = (out / "summary.md").read_text()
    assert "cells measured: 2 of 2" in summary and "| find_index | m |" in summary
    suite = list(csv.DictReader((out / "loops_suite.csv").open()))
    assert [r["status"] for r in suite] == ["not built", "ok"] and float(suite[1]["ratio"]) > 0
    swept = list(csv.DictReader((out / "loops_sweep.csv").open()))  # the best candidate over the sweep, warm + cold
    assert swept and {r["kernel"] for r in swept} == {"rms_norm_f32"} and {r["l2"] for r in swept} == {"warm", "cold"}
    assert len({r["point"] for r in swept}) > 1 and (out / "heatmaps.png").is_file() and (out / "medians.png").is_file()
    assert "| rms_norm_f32 | p | warm |" in summary
    assert loops_gpu.main(["--build", str(tmp_path / "none"), "--out", str(out), "--dry-run"]) == 2


def test_picked_narrows_cells_and_kernels_and_names_what_is_missing():
    manifest = {
        "cells": [
            {"n": 4096, "rows": 16, "block": 512, "warps": 4},
            {"n": 8192, "rows": 1024, "block": 1024, "warps": 8},
        ],
        "suite": [{"kernel": "find_index"}, {"kernel": "spmv_csr_vector"}],
    }
    only = loops_gpu.picked(manifest, "8192:1024:1024:8", "spmv_csr_vector")
    assert only["cells"] == manifest["cells"][1:] and only["suite"] == manifest["suite"][1:]
    assert loops_gpu.picked(manifest, "none", "")["cells"] == [] and loops_gpu.picked(manifest, "", "") == manifest
    with pytest.raises(ValueError, match="cells not in the build"):
        loops_gpu.picked(manifest, "1:2:3:4", "")
    with pytest.raises(ValueError, match="suite kernels not in the build"):
        loops_gpu.picked(manifest, "", "nope")


class _ByPoint:
    """A scripted GPU: candidate `a` wins at even sweep points, `b` at odd ones, and at the
    third point neither is faster (the calls come point by point, candidate by candidate)."""

    def __init__(self) -> None:
        self.calls = 0

    def check_and_time(self, a, b, spec, more, budget_s, b_shared, time_mismatch=False):
        point, which = divmod(self.calls, 2)
        self.calls += 1
        wins = (point % 2 == 0) == (which == 0) and point != 2
        ratio = 0.8 if wins else 1.05
        return {"status": "ok", "check": "identical", "ratio": ratio, "ci_low": ratio - 0.01, "ci_high": ratio + 0.01}

    def sweep_point(self, a, b, spec, budget_s):
        t = {"ratio": 0.85, "ci_low": 0.84, "ci_high": 0.86}
        return {"status": "ok", "check": "identical", "timed": {"warm": t, "cold": t}}


def test_per_point_ships_each_points_own_winner_or_the_original(tmp_path):
    import time

    built = [
        {"kernel": "rms_norm_f32", "move": move, "original": "orig.cubin", "cubin": f"{move}.cubin"}
        for move in ("a", "b")
    ]
    run = loops_gpu.Run(tmp_path, tmp_path, time.monotonic() + 600, 0.1, 0.1, _ByPoint(), {"gpu": "scripted"})
    loops_gpu.per_point(run, built)
    warm = [r for r in run.sweep if r["l2"] == "warm"]
    assert len(warm) >= 4 and len(run.points) == 2 * len(warm)
    assert [r["move"] for r in warm[:4]] == ["a", "b", "original (no candidate faster)", "b"]
    assert warm[2]["ratio"] == 1.0 and warm[2]["measured"] is False
    assert warm[0]["ratio"] == 0.85  # the fresh timing is reported, not the screen that picked it
