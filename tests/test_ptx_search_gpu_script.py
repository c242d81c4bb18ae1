"""benchmarks/ptx_search_gpu.py walked without a GPU (--dry-run: made-up ratios) on a small
manifest of checked-in cubins: priority order, screen rows per shape, finals with re-checks,
the summary's table and targets, a missing build refused in one line. And the CPU builder's
candidate list for one kernel: PTX variants with SASS families, SASS seeds."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

from benchmarks import ptx_search_build, ptx_search_gpu

ROOT = Path(__file__).resolve().parent.parent
CUBIN = ROOT / "benchmarks/kernels/cubin/rmsnorm.cubin"


def _manifest(build: Path) -> None:
    shutil.copy(CUBIN, build / "rmsnorm.cubin")
    names = [
        ("ptx0-none", "ptx+sass"),
        ("ptx0-sc", "ptx+sass"),
        ("ptx1-none", "ptx+sass"),
        ("sass-sc", "sass"),
        ("sass-sb+sc", "sass"),
    ]
    cands = []
    for name, level in names:
        shutil.copy(CUBIN, build / f"{name}.cubin")
        cands.append({"name": name, "level": level, "moves": name, "cubin": f"{name}.cubin"})
    rms = {
        "kernel": "rmsnorm_triton_style",
        "noalias": True,
        "original": "rmsnorm.cubin",
        "shapes": [{"rows": 1}, {"rows": 16}, {"rows": 1024}],
        "sweep": [{"rows": 1}, {"rows": 2048}],
        "candidates": cands,
        "refused": [],
    }
    other = {**rms, "kernel": "rms_norm_f32", "shapes": [{}], "candidates": cands[:1] + cands[3:4]}
    (build / "manifest.json").write_text(json.dumps({"commit": "test", "kernels": [other, rms]}))


def test_dry_run_walks_every_step(tmp_path):
    build, out = tmp_path / "build", tmp_path / "out"
    build.mkdir()
    _manifest(build)
    assert ptx_search_gpu.main(["--build", str(build), "--out", str(out), "--dry-run"]) == 0
    screen = list(csv.DictReader((out / "ptx_search_screen.csv").open()))
    first = [r["candidate"] for r in screen if r["kernel"] == "rmsnorm_triton_style" and r["shape"] == "rows=1"]
    assert first == ["ptx0-none", "sass-sb+sc", "ptx1-none", "sass-sc", "ptx0-sc"]  # alternating, most promising first
    final = list(csv.DictReader((out / "ptx_search_final.csv").open()))
    assert [(r["kernel"], r["shape"]) for r in final] == [
        ("rmsnorm_triton_style", f"rows={n}") for n in (1, 16, 1024)
    ] + [("rms_norm_f32", "spec")]  # the must-show first
    assert all(
        float(r["ptx_ratio"]) > 0 and float(r["sass_ratio"]) > 0 and float(r["vs_sass_ratio"]) > 0 for r in final
    )
    assert all(r["ptx_recheck"].startswith("identical at 2 sweep points") for r in final)
    summary = (out / "summary.md").read_text()
    assert "rmsnorm_triton_style rows=1: speed-up" in summary and "target >= 1.25x" in summary
    assert ptx_search_gpu.main(["--build", str(tmp_path / "none"), "--out", str(out), "--dry-run"]) == 2


def test_kernels_picks_what_a_cut_run_left_and_refuses_an_unknown_one(tmp_path, capsys):
    build, out = tmp_path / "build", tmp_path / "out"
    build.mkdir()
    _manifest(build)
    assert (
        ptx_search_gpu.main(["--build", str(build), "--out", str(out), "--dry-run", "--kernels", "rms_norm_f32"]) == 0
    )
    final = list(csv.DictReader((out / "ptx_search_final.csv").open()))
    assert [(r["kernel"], r["shape"]) for r in final] == [("rms_norm_f32", "spec")]
    assert ptx_search_gpu.main(["--build", str(build), "--out", str(out), "--dry-run", "--kernels", "nope"]) == 2
    assert "not in the build: nope" in capsys.readouterr().err


def test_the_builder_lists_ptx_variants_with_sass_families_and_the_sass_seeds():
    cands = ptx_search_build.candidates("rmsnorm_triton_style", True, cap=2)
    assert [n for n, _, _ in cands] == [
        "ptx0-none",
        "ptx0-sc",
        "ptx0-sb+sc",
        "ptx0-lb+sc",
        "ptx1-none",
        "ptx1-sc",
        "ptx1-sb+sc",
        "ptx1-lb+sc",
    ]
    assert all(c.ptx and lv == "ptx+sass" for _, lv, c in cands)
    assert {p.kind for p in cands[0][2].ptx} == {"peel", "hoist"}  # the 'barrier' plan: peel, then hoist
    sass = ptx_search_build.sass_candidates(CUBIN, "rmsnorm_triton_style", True)
    assert [n for n, _, _ in sass] == ["sass-sb", "sass-lb", "sass-sc", "sass-sb+sc", "sass-lb+sc"]
    assert all(not c.ptx and (c.slice_batches or c.load_batches or c.stall_cuts) for _, _, c in sass)


def test_the_screen_job_is_named_by_a_path_the_worker_imports():
    """Run as `python -m`, the script is __main__: its job must be named by an importable path."""
    from timing.worker import Job, resolve

    assert resolve(ptx_search_gpu.SCREEN_JOB) is ptx_search_gpu.screen_job
    assert Job.of(ptx_search_gpu.SCREEN_JOB, "a", "b", timeout_s=1).func == ptx_search_gpu.SCREEN_JOB


class _InlinePool:
    """Runs each job in this process (the GPU calls faked below): walks Live's job plumbing."""

    def run(self, job):
        from timing.worker import JobResult, resolve

        return JobResult("ok", resolve(job.func)(*job.args, **dict(job.kwargs)))

    def close(self) -> None:
        pass


def test_the_live_device_walks_with_faked_gpu_calls(tmp_path, monkeypatch):
    import timing.evaluate as evaluate

    def check_job(a, b, spec, sets=3, more=(), first_set=0):
        return {"check": "identical", "check_sets": sets, "check_detail": f"{1 + len(more)} launches"}

    def time_job(a, b, spec, budget_s=1.0, target_ci_pct=0.5, **_):
        return {"ratio": 0.9, "ci_low": 0.89, "ci_high": 0.91}

    monkeypatch.setattr(evaluate, "check_job", check_job)
    monkeypatch.setattr(evaluate, "time_job", time_job)
    monkeypatch.setattr(ptx_search_gpu.Live, "__init__", lambda self: setattr(self, "pool", _InlinePool()))
    monkeypatch.setattr(ptx_search_gpu.Live, "gpu_name", lambda self: "inline")
    build, out = tmp_path / "build", tmp_path / "out"
    build.mkdir()
    _manifest(build)
    assert ptx_search_gpu.main(["--build", str(build), "--out", str(out)]) == 0
    final = list(csv.DictReader((out / "ptx_search_final.csv").open()))
    assert len(final) == 4 and all(r["ptx_ratio"] == "0.9" and r["vs_sass_ratio"] == "0.9" for r in final)
    screen = list(csv.DictReader((out / "ptx_search_screen.csv").open()))
    assert all(r["check"] == "identical" and r["ratio"] == "0.9" for r in screen)


def test_a_shape_the_time_slice_never_screened_has_no_pick_not_an_error():
    """On the H200 a 31 s slice screened rmsnorm's candidates at rows=1 only; picking at
    rows=16 then indexed past the one-shape default and the kernel's row was an IndexError."""
    from benchmarks import ptx_search_gpu as g

    record = {"candidates": [{"name": "a", "level": "sass"}, {"name": "b", "level": "sass"}]}
    assert g.best(record, {"a": [0.9]}, "sass", 1) is None
    assert g.best(record, {"a": [0.9], "b": [0.8, 0.7]}, "sass", 1)["name"] == "b"
    assert g.best(record, {"a": [0.9, 0.5], "b": [0.8, None]}, "sass", 1)["name"] == "a"
