"""benchmarks.triton_gpu walked on the CPU (--dry-run): every step the H200 run takes, with
stand-in tensors, sm_90 compiles, made-up times and the static search; what it writes."""

from __future__ import annotations

import csv

import pytest

pytest.importorskip("triton")


def test_a_dry_run_writes_one_row_per_cell_with_the_hook_serving_reorders_binary(tmp_path, monkeypatch):
    import triton

    from benchmarks import triton_gpu

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    previous = triton.knobs.runtime.add_stages_inspection_hook
    try:
        assert triton_gpu.main(["--dry-run", "--out", str(tmp_path / "out"), "--families",
                                "rmsnorm_looped_fp16,no_such_family", "--budget", "1", "--jobs", "1"]) == 0
    finally:
        triton.knobs.runtime.add_stages_inspection_hook = previous
    with open(tmp_path / "out" / "triton_cells.csv") as handle:
        rows = list(csv.DictReader(handle))
    cells = [r for r in rows if r["family"] == "rmsnorm_looped_fp16"]
    assert [r["shape"] for r in cells] == ["16x16384", "512x16384", "2048x16384"]
    for row in cells:
        assert row["gpu"] == "none (dry run)" and row["commit"] and row["triton"] and row["l2"] == "warm"
        assert row["same_cubin_as_jit"] == "True" and row["hook_served"] == "True"
        assert row["configs_tried"] == "6" and row["configs_failed"] == "0" and "predicted" in row["optimize_score"]
        changed = row["reorder_changed"] == "True"
        assert (row["status"], row["check"]) == (("dry", "not run (dry run)") if changed else ("ok", "same binary"))
    (bad,) = [r for r in rows if r["family"] == "no_such_family"]
    assert bad["status"] == "error" and "no Triton kernel family" in bad["reason"]
    assert "| rmsnorm_looped_fp16 | 512x16384 | warm |" in (tmp_path / "out" / "summary.md").read_text()
