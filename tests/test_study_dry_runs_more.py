"""The studies that build as they go (no build folder ahead) on the CPU: the runner's dry run
walks every step of each, by the study's name and by the script's old module."""

from __future__ import annotations

import csv

from benchmarks import optimize_gpu
from benchmarks.studies.__main__ import main as studies


def _rows(path) -> list[dict]:
    with open(path) as handle:
        return list(csv.DictReader(handle))


def test_optimize_searches_and_times_the_output_and_each_single_move(tmp_path, capsys):
    out, work = tmp_path / "out", tmp_path / "work"
    assert optimize_gpu.main(["--out", str(out), "--kernels", "find_index", "--dry-run", "--work", str(work)]) == 0
    rows = _rows(out / "optimize_summary.csv")
    assert rows[0]["candidate"] == "optimize" and {r["kernel"] for r in rows} == {"find_index"}
    assert {r["candidate"] for r in rows[1:]} <= {"batch_loads", "stall_cut"} and len(rows) >= 2  # it has stalls to cut
    assert {(r["status"], r["check"], r["optimize_rc"], r["l2"]) for r in rows} == {("ok", "identical", "0", "warm")}
    assert (work / "find_index.toml").is_file() and "| find_index | optimize | 0 |" in (out / "summary.md").read_text()
    assert '"candidate": "optimize"' in capsys.readouterr().out


def test_optimize_refuses_an_unknown_kernel_in_one_line(tmp_path, capsys):
    argv = ["optimize", "--out", str(tmp_path / "out"), "--kernels", "find_index,nope", "--dry-run"]
    assert studies(argv) == 2
    assert capsys.readouterr().err.strip().startswith("optimize: no kernel nope (have: ")
    assert not (tmp_path / "out").exists()


def test_multigpu_walks_both_throughput_runs_and_the_kill_test(tmp_path):
    import json

    from benchmarks import multigpu_gpu

    out, work = tmp_path / "out", tmp_path / "work"
    assert multigpu_gpu.main(["--out", str(out), "--dry-run", "--work", str(work), "--seconds", "5"]) == 0
    runs = _rows(out / "multigpu.csv")
    assert [(r["workers"], r["rc"], r["finished"], r["failed"], r["l2"]) for r in runs] == [
        ("1", "0", "13", "1", "warm"),
        ("2", "0", "13", "1", "warm"),
    ]
    kill = json.loads((out / "kill_test.json").read_text())
    assert kill["workers"] == 2 and kill["killed_worker_trials"] == [3] and kill["retried_as"] == {"3": [12]}
    assert kill["every_killed_trial_retried_once"] and kill["numbers_unique"] and kill["binaries_scored_twice"] == 0
    assert (out / "clocks.csv").is_file() and (work / "host1").is_dir()
    assert "- every_killed_trial_retried_once: True" in (out / "summary.md").read_text()


def test_multigpu_verdict_sees_a_killed_trial_never_retried(tmp_path):
    from benchmarks.studies.multigpu import Dry, kill_verdict

    trials = Dry().trials("any")[:-1]  # the retry gone
    verdict = kill_verdict(trials, {3})
    assert verdict["killed_worker_trials"] == [3] and not verdict["every_killed_trial_retried_once"]
