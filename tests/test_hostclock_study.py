"""The host-clock study's measuring and analysis, on the modelled GPU (tests/clocksim.py): the
script that runs on the H200 is run here first, with its waits shortened."""

from __future__ import annotations

import csv
import json

from clocksim import FakeSession

from benchmarks.hostclock_gpu import FLAG_FIELDS, load_raw, measure, write_study


class VirtualClock:
    """The host clock the study waits on, advanced by its sleeps and by 1 us per reading: the
    distances it measures are then the ones it asked for, however busy the machine (on the
    real clock a loaded machine stretched the near waits past their bound)."""

    def __init__(self, start_ns: int) -> None:
        self.now = start_ns

    def host_ns(self) -> int:
        self.now += 1_000
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += int(seconds * 1e9)


def test_the_study_runs_and_every_flag_check_holds_on_the_model(tmp_path, monkeypatch):
    from benchmarks import hostclock_gpu
    from reorder.probe import hostclock

    clock = VirtualClock(hostclock.host_ns())
    monkeypatch.setattr(hostclock, "host_ns", clock.host_ns)  # FakeSession's readings
    monkeypatch.setattr(hostclock_gpu, "host_ns", clock.host_ns)  # the study's waits
    monkeypatch.setattr(hostclock_gpu.time, "sleep", clock.sleep)
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
