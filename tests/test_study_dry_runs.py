"""The stall-cut and single-move studies on the CPU: a real build of two small kernels (one of
the suite, one of the corpus) through `--prepare`, then the runner's dry run over it (every
step walked with made-up numbers), by the study's name and by the script's old module."""

from __future__ import annotations

import csv
import json

from benchmarks import moves_gpu, ptx_candidates_gpu, stallcut_gpu
from benchmarks.studies.__main__ import main as studies

KERNELS = "find_index,bit_ops"


def _rows(path) -> list[dict]:
    with open(path) as handle:
        return list(csv.DictReader(handle))


def test_stallcut_builds_cuts_and_walks_them(tmp_path):
    build, out = tmp_path / "build", tmp_path / "out"
    assert studies(["stallcut", "--prepare", "--out", str(build), "--kernels", KERNELS]) == 0
    manifest = json.loads((build / "manifest.json").read_text())["kernels"]
    assert [(e["family"], e["kernel"]) for e in manifest] == [("suite", "find_index"), ("corpus", "bit_ops")]
    assert all(e["stall_after"] < e["stall_before"] for e in manifest)  # both kernels have stalls to cut
    assert all(
        (build / f"{e['name']}_cut.cubin").read_bytes() != (build / f"{e['name']}_orig.cubin").read_bytes()
        for e in manifest
    )
    assert stallcut_gpu.main(["--build", str(build), "--out", str(out), "--dry-run"]) == 0
    rows = _rows(out / "stallcut_kernels.csv")
    assert [(r["kernel"], r["status"], r["check"], r["gpu"]) for r in rows] == [
        ("find_index", "ok", "identical", "none (dry run)"),
        ("bit_ops", "ok", "identical", "none (dry run)"),
    ]
    assert "| suite | find_index | " in (out / "summary.md").read_text()


def test_a_deadline_spent_skips_kernels_as_rows(tmp_path):
    build, out = tmp_path / "build", tmp_path / "out"
    assert studies(["stallcut", "--prepare", "--out", str(build), "--kernels", "bit_ops"]) == 0
    assert studies(["stallcut", "--build", str(build), "--out", str(out), "--dry-run", "--deadline", "0"]) == 0
    assert [(r["kernel"], r["status"], r["reason"]) for r in _rows(out / "stallcut_kernels.csv")] == [
        ("bit_ops", "skipped", "deadline")
    ]


def test_moves_builds_each_move_per_kernel_and_checks_them(tmp_path):
    build, out = tmp_path / "build", tmp_path / "out"
    assert moves_gpu.main(["--prepare", str(build), "--kernels", KERNELS]) == 0  # the folder as a bare argument
    manifest = json.loads((build / "manifest.json").read_text())["kernels"]
    assert [(e["kernel"], e["move"]) for e in manifest] == [
        (k, m) for k in KERNELS.split(",") for m in ("stalls", "batch", "swaps", "blocks", "prefetch")
    ]
    assert not any(e["spec"].startswith("/") for e in manifest)  # relative: the GPU host's checkout differs
    assert studies(["moves", "--build", str(build), "--out", str(out), "--dry-run"]) == 0
    rows = _rows(out / "moves_checks.csv")
    built = [e for e in manifest if e["built"]]
    assert [(r["kernel"], r["move"]) for r in rows if r["check"] == "identical"] == [
        (e["kernel"], e["move"]) for e in built
    ]
    assert "| swaps | 2 |" in (out / "summary.md").read_text()


def test_moves_builds_only_the_moves_asked_for(tmp_path, capsys):
    build = tmp_path / "build"
    assert moves_gpu.main(["--prepare", str(build), "--kernels", KERNELS, "--moves", "blocks"]) == 0
    manifest = json.loads((build / "manifest.json").read_text())["kernels"]
    assert {e["move"] for e in manifest} == {"blocks"}
    assert studies(["moves", "--prepare", "--out", str(tmp_path / "b"), "--moves", "blocks,nope"]) == 2
    assert "no move nope" in capsys.readouterr().err
    assert not (tmp_path / "b" / "manifest.json").exists()


def test_an_unknown_kernel_is_one_line_and_nothing_built(tmp_path, capsys):
    assert studies(["moves", "--prepare", "--out", str(tmp_path / "b"), "--kernels", "find_index,nope"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "benchmarks.studies moves --prepare: no launch spec for: nope"
    assert not (tmp_path / "b" / "manifest.json").exists()


def test_ptx_candidates_walks_the_checked_in_build(tmp_path):
    """The default build is the checked-in manifest: every candidate a row, RMSNorm's one per --rows."""
    out = tmp_path / "out"
    assert ptx_candidates_gpu.main(["--out", str(out), "--dry-run", "--rows", "1,16"]) == 0
    manifest = json.loads((ptx_candidates_gpu.STUDY.build_dir / "manifest.json").read_text())["candidates"]
    rows = _rows(out / "ptx_candidates_gpu.csv")
    timed = [r for r in manifest if r["kernel"] in ("rmsnorm_triton_style", "rms_norm_f32")]
    assert timed and len(rows) == len(manifest) + len(timed)  # two --rows for each timed one
    assert {r["check"] for r in rows} == {"identical"}
    assert [r["rows"] for r in rows if r["kernel"] == "rmsnorm_triton_style"][:2] == ["1", "16"]


def test_batch_aa_rebuilds_the_batch_parts_and_walks_every_experiment(tmp_path):
    """--bisect-only rebuilds RMSNorm's batch and its parts into a build; the dry run then walks
    each experiment: the parts checked, the mutant and the job after it, the batch at every row
    count, a stall cut, and both A/A methods AA_REPEATS times for each size."""
    import shutil

    from benchmarks import gpu_session
    from benchmarks.studies import batch_aa
    from benchmarks.studies.runner import suite_cubin

    build, out = tmp_path / "build", tmp_path / "out"
    build.mkdir()
    for kernel in (batch_aa.RMS, "warp_select_k32", "find_index"):
        shutil.copyfile(suite_cubin(kernel), build / f"{kernel}_orig.cubin")
    shutil.copyfile(suite_cubin("find_index"), build / "find_index_stallcut.cubin")
    shutil.copyfile(suite_cubin(batch_aa.RMS), build / "rmsnorm_dropwait.cubin")
    stallcut = [{"kernel": "find_index", "stall_before": 2, "stall_after": 1}]
    (build / "manifest.json").write_text(json.dumps({"commit": "test", "bisect": [], "stallcut": stallcut}))
    assert gpu_session.main(["--prepare", "--out", str(build), "--bisect-only"]) == 0
    parts = json.loads((build / "manifest.json").read_text())["bisect"]
    assert parts[:2] == [parts[0], {"variant": "regcount_only", "note": parts[1]["note"]}]
    assert parts[0]["variant"] == "batch_all" and any(p["variant"].startswith("rename_block") for p in parts)
    assert studies(["batch_aa", "--build", str(build), "--out", str(out), "--dry-run"]) == 0
    rows = _rows(out / "batch_aa_rows.csv")
    count = {e: sum(r["experiment"] == e for r in rows) for e in batch_aa.EXPERIMENTS}
    assert count == {"bisect": len(parts), "isolation": 2, "batch_loads": 5, "stall_cut": 1, "aa": 20}
    assert all(r["check"] == "identical" for r in rows)
    assert studies(["batch_aa", "--build", str(build), "--out", str(out), "--dry-run", "--only", "aa,nope"]) == 2
