"""`reorder bench --shapes`: one search per point, one binary for all points and per-shape groups
in one table. The columns are read from a multi-shape run's shapes.json (its shape here is the
one optimize writes, tests/test_shapes.py checks that); one run on the static model covers the
path without a GPU, where only the per-point column has figures (predicted)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from reorder.cli.bench import BenchKernel, _label, _point_spec, load_suite
from reorder.cli.benchshapes import columns, geomean, markdown, rows_for, run_bench_shapes

SUITE = Path(__file__).resolve().parent.parent / "reorder" / "suite" / "suite.toml"

DOC = {
    "winner": "w",
    "finals": {"w": {"ratios": {"rows1": [0.74, 0.73, 0.75], "rows1024": [0.95, 0.94, 0.96]}}},
    "dispatch": {
        "groups": [
            {"cubin": "k.0.cubin", "shapes": [{"launch": "rows1", "ratio": [0.74, 0.73, 0.75]}]},
            {"cubin": "k.1.cubin", "shapes": [{"launch": "rows1024", "ratio": [0.86, 0.85, 0.87]}]},
        ]
    },
}


def test_the_columns_come_from_the_written_binary_and_the_groups() -> None:
    one, grouped, cubins = columns(["rows1", "rows1024"], DOC)
    assert one["rows1024"] == (0.95, 0.94, 0.96) and grouped["rows1024"] == (0.86, 0.85, 0.87)
    assert cubins == {"rows1": "k.0.cubin", "rows1024": "k.1.cubin"}
    assert columns(["rows1"], None) == ({"rows1": None}, {"rows1": None}, {})


def test_a_geomean_row_with_its_ci_and_missing_cells_said() -> None:
    g = geomean([(0.5, 0.49, 0.51), (2.0, 1.9, 2.1)])
    assert g is not None and g[0] == pytest.approx(1.0) and g[1] < 1.0 < g[2]
    assert geomean([(0.5, 0.49, 0.51), None]) is None
    labels = ["rows1", "rows1024"]
    own = {"rows1": (0.73, 0.72, 0.74), "rows1024": (0.85, 0.84, 0.86)}
    rows = rows_for("k", "warm", labels, own, *columns(labels, DOC))
    assert [r["point"] for r in rows] == ["rows1", "rows1024", "geomean"]
    assert rows[-1]["per_shape"] == pytest.approx((0.74 * 0.86) ** 0.5)
    text = markdown(rows)
    assert "0.8600 [0.8500, 0.8700]" in text and "k.1.cubin" in text


@pytest.mark.slow
def test_on_the_static_model_only_the_per_point_column_is_filled(tmp_path: Path) -> None:
    (fi,) = [k for k in load_suite(SUITE)[0] if k.name == "find_index"]
    kernel = BenchKernel(fi.name, fi.cubin, fi.spec, False, 2, 120.0, fi.points[:2])
    csv = run_bench_shapes([kernel], ("warm",), tmp_path, "cpu", 1, _label, _point_spec)
    frame = pd.read_csv(csv)
    assert len(frame) == 3 and frame["per_point"].notna().all()  # predicted, one search per point
    assert frame["one_binary"].isna().all() and frame["per_shape"].isna().all()  # nothing timed anywhere
    assert "not measured" in csv.with_suffix(".md").read_text()
