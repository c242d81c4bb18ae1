"""The one-line benchmark's CPU side (benchmarks.triton_one_line): its sets, keys and configs,
and the summary's judgment of the target from made-up rows."""

from __future__ import annotations

import pytest

from benchmarks.triton_one_line_report import write_summary
from reorder.suite.rows import write_rows


def _cell(family: str, l2: str, speedup: float, low: float, high: float, twin: bool = True) -> dict:
    return {
        "gpu": "H200",
        "commit": "abc",
        "family": family,
        "shape": "1x2",
        "l2": l2,
        "plain_pick": "p",
        "reorder_pick": "p twin:1" if twin else "p",
        "reorder_pick_is_twin": twin,
        "pick_check": "identical",
        "math": "within",
        "speedup": speedup,
        "speedup_ci_low": low,
        "speedup_ci_high": high,
        "plain_bench_s": 1.0,
        "reorder_bench_s": 3.5,
        "plain_autotune_s": 2.0,
        "reorder_autotune_s": 6.0,
        "configs": 8,
        "builds": 32,
    }


def test_the_summary_judges_the_median_and_names_every_cell_slower_beyond_its_ci(tmp_path):
    write_rows(
        tmp_path / "one_line_cells.csv",
        [_cell("a", "warm", 1.2, 1.19, 1.21), _cell("a", "cold", 1.15, 1.1, 1.2), _cell("b", "warm", 0.97, 0.96, 0.98)],
    )
    write_rows(tmp_path / "one_line_checks.csv", [{"check": "identical"}, {"check": "not checked: no GPU"}])
    text = write_summary(tmp_path, None)
    assert "median speed-up 1.150x" in text and "NOT met (1.150x, 1 slower)" in text
    assert "slower: b 1x2 warm: 0.970x" in text and "1 identical, 1 not checked" in text
    assert "with twins / without: 3.50x" in text


def test_the_sets_keys_and_configs():
    pytest.importorskip("triton")
    from benchmarks.triton_one_line import configs_of, families, key_of

    user = families("user")
    assert [f.name for f in user][:3] == ["xent_fp16", "cumsum_fp16", "addnorm_fp16"]
    assert len(next(f for f in families("bench") if f.name == "ffn_swiglu_fp16").shapes) == 3
    case = user[0].case(user[0].shapes[0])
    assert key_of(case) == ["n_vocab", "row_stride"]
    stages = sorted({c.kwargs["LOOP_STAGES"] for c in configs_of(user[0])})
    assert stages == [1, 2, 3, 4] and all(c.num_stages == 3 for c in configs_of(user[0]))


def test_the_run_takes_every_familys_middle_shape_first():
    pytest.importorskip("triton")
    from benchmarks.triton_one_line import families, visits

    user = families("user")
    order = visits(user, middle=False)
    assert len(order) == sum(len(f.shapes) for f in user)
    assert [(f.name, s) for f, _, s in order[: len(user)]] == [(f.name, f.tune_shape) for f in user]
    assert all(s == f.shapes[i] for f, i, s in order) and len(visits(user, middle=True)) == len(user)
