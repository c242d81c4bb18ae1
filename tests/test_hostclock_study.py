"""The host-clock study's measuring and analysis, on the modelled GPU (tests/clocksim.py): the
script that runs on the H200 is run here first, with its waits shortened."""

from __future__ import annotations

import csv
import json

from clocksim import FakeSession

from benchmarks.hostclock_gpu import FLAG_FIELDS, load_raw, measure, write_study


def test_the_study_runs_and_every_flag_check_holds_on_the_model(tmp_path):
    measured = measure(FakeSession(), near_s=0.01, far_s=0.03, rounds=60, flags=2)
    summary = write_study(tmp_path, measured)
    assert summary["flag_tests"]["count"] == 4 == summary["flag_tests"]["sound"]
    assert summary["link2_rate_check_ns"]["value"] == 0  # the model's rate is constant
    assert summary["link2_w0_w1_carried_to_w2"]["w2_outside_by_ns"] <= 0
    near, far = (
        summary["link2_width_ns"]["near_midpoint_from_window_s"],
        summary["link2_width_ns"]["far_midpoint_from_window_s"],
    )
    assert 0.005 < near < 0.02 and 0.02 < far < 0.04
    rows = list(csv.DictReader((tmp_path / "flags.csv").open()))
    assert len(rows) == 4 and set(FLAG_FIELDS) == set(rows[0])
    assert json.loads((tmp_path / "study.json").read_text())["gpu"] == "0000:00:00.0"
    assert sum(1 for _ in (tmp_path / "sync.csv").open()) == 3 * 60 + 1
    again = load_raw(json.loads((tmp_path / "raw.json").read_text()))
    assert again == measured  # what comes back from the GPU can be analysed again here
