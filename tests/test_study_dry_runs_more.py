"""The studies that build as they go (no build folder ahead) on the CPU: the runner's dry run
walks every step of each, by the study's name and by the script's old module."""

from __future__ import annotations

import csv

import pytest

from benchmarks import optimize_gpu
from benchmarks.studies.__main__ import main as studies
from reorder.binary.tools import have_tool


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


def test_shapes_writes_each_shape_s_spec_and_compares_each_search(tmp_path, capsys):
    import json

    from benchmarks import shapes_gpu

    out = tmp_path / "out"
    assert shapes_gpu.main(["--out", str(out), "--only", "rmsnorm_triton_style", "--dry-run", "--jobs", "2"]) == 0
    specs = sorted(p.name for p in (out / "rmsnorm_triton_style" / "specs").iterdir())
    assert specs == sorted(f"rows{n}.toml" for n in (1, 16, 128, 1024, 8192))
    said = capsys.readouterr().out
    assert "--per-shape" in said and said.count("--launch") == 5 and "--jobs 2" in said
    compared = json.loads((out / "summary.json").read_text())["rmsnorm_triton_style"]
    assert compared["exit"] == 0 and set(compared["per_shape"]) == {p.removesuffix(".toml") for p in specs}
    low, gm, high = sorted(compared["multi_shape_winner"]["geomean"])
    assert low < gm < high and compared["multi_shape_winner"]["geomean"][0] == gm
    assert [r["kernel"] for r in _rows(out / "shapes_runs.csv")] == ["rmsnorm_triton_style"]


def test_shapes_compare_finds_the_best_single_shape_winner(tmp_path):
    import json

    from benchmarks.studies.shapes import compare

    ratios = {
        "a": {"s1": [0.9, 0.89, 0.91], "s2": [1.0, 0.99, 1.01]},
        "b": {"s1": [1.0, 0.99, 1.01], "s2": [0.8, 0.79, 0.81]},
    }
    doc = {"weights": {"s1": 1, "s2": 1}, "finals": {k: {"ratios": r} for k, r in ratios.items()}, "winner": "a"}
    (tmp_path / "shapes.json").write_text(json.dumps(doc))
    c = compare(tmp_path / "shapes.json")
    assert c["single_shape_winners"]["s1"]["sha256"] == "a" and c["single_shape_winners"]["s2"]["sha256"] == "b"
    assert not c["multi_at_least_best_single"]  # b's geomean (0.894) beats the written a's (0.949)


def test_correctness_prepares_then_walks_the_barrier_sweep_and_a_search(tmp_path):
    import json

    from benchmarks import correctness_gpu
    from benchmarks.studies import correctness

    build, out, work = tmp_path / "build", tmp_path / "out", tmp_path / "work"
    assert correctness_gpu.main(["prepare", str(build)]) == 0  # the first command line: PART FOLDER
    entries = json.loads((build / "manifest.json").read_text())["entries"]
    assert {e["kind"] for e in entries} == {"probe", "repro"} and all((build / e["file"]).is_file() for e in entries)
    assert (build / "specs" / "rmsnorm_triton_style" / "rows1.toml").is_file()
    assert correctness_gpu.main(["barrier", str(build), "--out", str(out), "--dry-run"]) == 0
    rows = _rows(out / "barrier_sweep.csv")
    repro = [r for r in rows if r["kind"] == "repro"]
    assert len(repro) == len(correctness.REPRO_STALLS) * (1 + len(correctness.REPRO_ROWS))
    assert {r["check"] for r in rows} == {"identical"} and {r["poisoned"] for r in repro} == {"True", "False"}
    argv = ["optimize", str(build), "--out", str(out), "--kernels", "rmsnorm_triton_style", "--dry-run"]
    assert correctness_gpu.main([*argv, "--work", str(work), "--seconds", "5"]) == 0
    checked = _rows(out / "optimize_rmsnorm_triton_style.csv")
    points = sorted(p.stem for p in (build / "specs" / "rmsnorm_triton_style").glob("rows*.toml"))
    assert sorted(r["point"] for r in checked) == points and {r["tuned_at"] for r in checked} == {"rows1"}
    assert {(r["changed"], r["check"], r["l2"]) for r in checked} == {("False", "identical", "warm")}
    assert (out / "rmsnorm_triton_style" / "optimize.log").is_file()


def test_probe_prebuilds_walks_the_timelines_and_reanalyses_them(tmp_path, monkeypatch):
    """A real prebuild of the first four probe positions of each version (all of them take
    minutes on the CPU), the dry run over it, then the CPU's second look at its timelines."""
    import json

    import reorder.probe.variants as variants
    from benchmarks import probe_gpu

    every = variants.probe_positions
    monkeypatch.setattr(variants, "probe_positions", lambda code, first, last: every(code, first, last)[:4])
    build, out = tmp_path / "build", tmp_path / "out"
    assert probe_gpu.main(["--prebuild", str(build), "--rows", "4"]) == 0
    manifest = json.loads((build / "manifest.json").read_text())
    assert manifest["rows"] == 4 and {len(v["positions"]) for v in manifest["versions"].values()} == {4}
    assert probe_gpu.main(["--run", str(build), "--out", str(out), "--dry-run"]) == 0
    summary = json.loads((out / "probe_summary.json").read_text())
    assert set(summary["versions"]) == {"original", "batched"} and summary["gpu"] == "none (dry run)"
    assert all(v["probed_in_pass"] == 4 and v["failed"] == [] for v in summary["versions"].values())
    assert (out / "timeline_original.csv").is_file() and (out / "timeline_batched.csv").is_file()
    assert probe_gpu.main(["--run", str(build), "--reanalyse", str(out)]) == 0
    again = json.loads((out / "probe_summary.json").read_text())
    assert "re-derived on the CPU" in again["analysis"] and again["versions"].keys() == summary["versions"].keys()


@pytest.mark.skipif(not (have_tool("nvcc") and have_tool("nvdisasm")), reason="needs nvcc and nvdisasm")
def test_latency_probe_prebuilds_two_pairs_and_walks_them(tmp_path, capsys):
    from benchmarks import latency_probe_gpu

    build, out = tmp_path / "build", tmp_path / "out"
    assert latency_probe_gpu.main(["--prebuild", str(build), "--pairs", "FFMA,IADD3"]) == 0
    assert "2/2 pairs located" in capsys.readouterr().out
    assert latency_probe_gpu.main(["--run", str(build), "--out", str(out), "--dry-run", "--pairs", "FFMA,IADD3"]) == 0
    rows = _rows(out / "latency_probe_sm_90.csv")
    assert [(r["pair"], r["status"], r["gpu"]) for r in rows] == [
        ("FFMA", "measured", "none (dry run)"),
        ("IADD3", "measured", "none (dry run)"),
    ]
    assert all(r["verifier_unsafe"] in ("", "[]") for r in rows)
    assert "[[entry]]" in (out / "measured_sm_90.toml").read_text()
    assert "unsafe pairs (verifier accepts, WRONG on silicon): 0" in (out / "summary.md").read_text()


def test_latency_probe_without_out_is_one_line(capsys):
    from benchmarks import latency_probe_gpu

    assert latency_probe_gpu.main(["--run", "nowhere"]) == 2
    assert capsys.readouterr().err.strip() == (
        "latency_probe_gpu: error: --out OUTDIR is required with --run (or without --prebuild)"
    )
