"""The host-clock study's measuring and analysis, on the modelled GPU
(benchmarks/studies/clockmodel.py) and a virtual host clock: what runs on the H200 is run here
first, through the runner's dry run and through its parts."""

from __future__ import annotations

import csv
import json

from benchmarks.studies.clockmodel import FakeSession, VirtualClock
from benchmarks.studies.hostclock import FLAG_FIELDS, STUDY, load_raw, measure, write_study


def test_the_study_runs_and_every_flag_check_holds_on_the_model(tmp_path):
    from reorder.probe import hostclock

    clock = VirtualClock(hostclock.host_ns())
    session = FakeSession(now=clock.host_ns)
    measured = measure(session, near_s=0.01, far_s=0.03, rounds=60, flags=2, now=clock.host_ns, until=clock.until)
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


def test_the_runner_walks_the_study_dry_with_the_default_waits(tmp_path):
    """The defaults (16 s far) cost nothing on the virtual clock; no probe runs in a dry run."""
    out = tmp_path / "out"
    assert STUDY.run(["--dry-run", "--out", str(out), "--rounds", "40", "--flags", "2"]) == 0
    summary = json.loads((out / "study.json").read_text())
    assert summary["flag_tests"]["sound"] == summary["flag_tests"]["count"] == 4
    assert 15 < summary["link2_width_ns"]["far_midpoint_from_window_s"] < 17
    probes = list(csv.DictReader((out / "hostclock_probes.csv").open()))
    assert [(p["probe"], p["status"], p["reason"]) for p in probes] == [
        ("latency", "skipped", "dry run"),
        ("timeline", "skipped", "dry run"),
    ]
    assert "flag tests sound: 4 of 4" in (out / "summary.md").read_text()


def test_the_probe_runs_name_the_suite_cubin_and_a_spec_at_their_rows(tmp_path):
    """The dry run runs no probe: what the live run would start is checked here instead."""
    from pathlib import Path

    import tomllib

    from benchmarks.studies.hostclock import KERNEL, probe_command

    command = probe_command(tmp_path, 16)
    assert Path(command[4]).is_file() and command[4].endswith("benchmarks/kernels/cubin/rmsnorm.cubin")
    spec = tomllib.loads(Path(command[command.index("--launch") + 1]).read_text())
    assert spec["kernel"]["name"] == KERNEL and spec["kernel"]["grid"][0] == 16
