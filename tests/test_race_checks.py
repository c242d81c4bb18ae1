"""The checks built to catch races: several launches, fresh sets, poisoned shared memory, a
winner re-checked before it is written. The GPU parts run in tests/gpu; here the CPU side:
what a check reports, which launch fills the GPU, how a failed re-check is refused."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.studies.runner import few_blocks
from reorder.optimize import _check_line, fill_launch, recheck_first_set
from reorder.search.scoring import GpuScorer, Rejected
from timing.check import CheckResult, launch_label
from timing.poison import PATTERN, filler_cubin
from timing.spec import load_spec
from timing.worker import JobResult

ROOT = Path(__file__).parent.parent
SPEC = ROOT / "benchmarks" / "kernels" / "specs" / "rmsnorm_triton_style.toml"
CUBIN = ROOT / "benchmarks" / "kernels" / "cubin" / "rmsnorm.cubin"


def test_a_passed_check_names_every_launch_and_the_poison() -> None:
    spec = load_spec(SPEC)
    line = CheckResult(
        True, 20, launches=(launch_label(spec), "grid [2048, 1, 1] block [256, 1, 1]"), shared_poisoned=True
    ).describe()
    assert "20 input set" in line and "2 launch" in line and "[512, 1, 1]" in line and "[2048, 1, 1]" in line
    assert "shared memory poisoned" in line


def test_the_fill_launch_is_the_one_with_most_blocks() -> None:
    import dataclasses

    spec = load_spec(SPEC)
    small, big = dataclasses.replace(spec, grid=(1, 1, 1)), dataclasses.replace(spec, grid=(2048, 1, 1))
    assert fill_launch((small, big, spec)) is big
    assert fill_launch(()) is None


def test_few_blocks_keeps_buffers_and_shrinks_the_grid() -> None:
    spec = load_spec(SPEC)
    few = few_blocks(spec)
    assert few.grid == (3, 1, 1) and few.params == spec.params


def test_recheck_sets_never_overlap_the_search() -> None:
    firsts = {recheck_first_set() for _ in range(8)}
    assert min(firsts) >= 1_000_000 and len(firsts) > 1


def test_poison_pattern_is_nan_and_fillers_exist() -> None:
    import numpy as np

    assert np.isnan(np.array([PATTERN], dtype=np.uint32).view(np.float32)[0])
    for major in (8, 9):
        assert filler_cubin(major, 0).is_file()


class _Pool:
    """A worker pool whose one job ends as given (walks the GPU path without a GPU)."""

    def __init__(self, result: JobResult) -> None:
        self.result, self.jobs = result, []

    def run(self, job):
        self.jobs.append(job)
        return self.result


def test_a_winner_that_differs_at_the_recheck_is_rejected(tmp_path) -> None:
    spec = load_spec(SPEC)
    pool = _Pool(
        JobResult(
            "ok",
            {
                "check": "MISMATCH",
                "check_sets": 20,
                "check_detail": "grid [4, 1, 1] block [256, 1, 1], input set 1000003: ...",
            },
        )
    )
    scorer = GpuScorer(CUBIN, spec, pool)
    with pytest.raises(Rejected, match="re-check: outputs differ: grid \\[4"):
        scorer.recheck(tmp_path / "cand.cubin", (spec,), sets=20, first_set=1_000_000)
    job = pool.jobs[0]
    assert job.func == "timing.evaluate:check_job"
    assert dict(job.kwargs)["sets"] == 20 and dict(job.kwargs)["first_set"] == 1_000_000


def test_a_recheck_that_crashes_is_rejected(tmp_path) -> None:
    scorer = GpuScorer(CUBIN, load_spec(SPEC), _Pool(JobResult("crashed", reason="illegal address")))
    with pytest.raises(Rejected, match="re-check crashed: illegal address"):
        scorer.recheck(tmp_path / "cand.cubin", (), sets=20, first_set=1_000_000)


def test_every_trial_is_checked_at_the_fill_launch_too() -> None:
    import dataclasses

    spec = load_spec(SPEC)
    fill = dataclasses.replace(spec, grid=(2048, 1, 1))
    scorer = GpuScorer(CUBIN, spec, _Pool(JobResult("ok", {"check": "MISMATCH", "check_detail": "x"})), fill=fill)
    with pytest.raises(Rejected):
        scorer.score(Path("cand.cubin"))
    assert dict(scorer.pool.jobs[0].kwargs)["more"] == (fill,)


def test_the_report_says_when_only_one_shape_was_checked() -> None:
    detail = {"check_detail": "identical on 3 input set(s)", "recheck": "identical on 20 input set(s)"}
    assert "only the --launch shape" in _check_line(detail, several=False)
    assert "only the --launch shape" not in _check_line(detail, several=True)


def _reorder(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "reorder", *args], capture_output=True, text=True, timeout=300, check=False
    )


def _optimize_rms(cubin: Path, output: Path, *extra: str) -> subprocess.CompletedProcess:
    """`reorder optimize` of the RMSNorm kernel with a one-trial CPU budget."""
    return _reorder(
        "optimize",
        str(cubin),
        "--kernel",
        "rmsnorm_triton_style",
        "-o",
        str(output),
        "--device",
        "cpu",
        *extra,
        "--budget",
        "1",
    )


def test_check_launch_needs_launch(tmp_path) -> None:
    done = _optimize_rms(CUBIN, tmp_path / "o.cubin", "--check-launch", str(SPEC))
    assert done.returncode == 2 and "--check-launch needs --launch" in done.stderr


def test_a_wrong_check_launch_is_refused_before_the_search(tmp_path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(
        SPEC.read_text()
        .replace('name = "eps"', 'name = "eps2"\n')
        .replace('dtype = "float32"\nvalue = 1e-5', 'dtype = "float64"\nvalue = 1e-5')
    )
    done = _optimize_rms(CUBIN, tmp_path / "o.cubin", "--launch", str(SPEC), "--check-launch", str(bad))
    assert done.returncode == 2 and "bad.toml" in done.stderr
    assert not (tmp_path / "o.cubin").exists()


def test_a_hard_linked_output_is_refused_before_the_search(tmp_path) -> None:
    import os

    src = tmp_path / "k.cubin"
    src.write_bytes(CUBIN.read_bytes())
    os.link(src, tmp_path / "link.cubin")
    done = _optimize_rms(src, tmp_path / "link.cubin")
    assert done.returncode == 2 and "input" in done.stderr and "trials" not in done.stderr
    assert not (tmp_path / "link.reorder").exists()


def test_failures_are_counted_by_kind() -> None:
    from reorder.report.markdown import Report, failure_class

    assert (
        failure_class("build: move rejected: swap @ block ?: verifier rejected Swap(index=1606)")
        == "build: move rejected: swap"
    )
    assert failure_class("outputs differ: grid [4, 1, 1] block [256, 1, 1], input set 2: x") == "outputs differ"
    assert failure_class("").startswith("no reason recorded")
    report = Report(
        "k",
        "sm_90",
        "k.cubin",
        "space",
        10,
        3,
        0,
        "(none)",
        None,
        failures={"outputs differ": 1, "build: move rejected: swap": 2},
    )
    assert "- failed trials by reason: 2 x build: move rejected: swap; 1 x outputs differ" in report.markdown()


class _ScriptedGpuScorer(GpuScorer):
    """A GPU scorer (the finalist path takes GPU-only turns for it) whose scores and re-check
    verdicts are scripted by the candidate's bytes."""

    def __init__(self, scores: dict[bytes, float], rejected: set[bytes]) -> None:
        self.scores, self.rejected, self.rechecked = scores, rejected, []

    def score(self, candidate: Path, budget_s=None, target_ci_pct=None):
        from reorder.search.scoring import Score

        value = self.scores[candidate.read_bytes()]
        return Score(value, value - 0.01, value + 0.01, True, {"check_detail": "identical on 3 input set(s)"})

    def recheck(self, candidate: Path, launches: tuple, sets: int, first_set: int) -> str:
        data = candidate.read_bytes()
        self.rechecked.append(data)
        if data in self.rejected:
            raise Rejected("re-check: outputs differ at input set 1000003")
        return f"identical on {sets} input set(s)"


def test_a_finalist_that_fails_the_recheck_is_never_the_winner_the_next_one_is_rechecked(tmp_path) -> None:
    """The best-timed finalist differs at the re-check: the next best is re-checked and
    written instead, and the report says why the first was passed over."""
    from reorder.base.deadline import Deadline
    from reorder.build.space import Choice, build_candidate
    from reorder.optimize import Clock, OptimizeArgs, _pick_finalist, _rule
    from reorder.report.markdown import Report
    from reorder.search.budget import Costs

    cubin = ROOT / "tests" / "corpus" / "cubin" / "sm_90" / "elementwise.cubin"
    kernel = "saxpy_grid_stride"
    fast, slower = Choice(load_batches=(0, 1), stall_cuts=(0,)), Choice(stall_cuts=(0,))
    built = {c: build_candidate(str(cubin), kernel, False, c).data for c in (fast, slower)}
    scorer = _ScriptedGpuScorer({built[fast]: 0.80, built[slower]: 0.90}, rejected={built[fast]})
    args = OptimizeArgs(
        cubin=cubin,
        output=tmp_path / "o.cubin",
        kernel=kernel,
        launch=None,
        budget=2,
        seconds=60.0,
        jobs=1,
        storage=None,
        l2="warm",
        device="gpu",
        noalias=False,
        seed=0,
        build_cache=str(tmp_path / "builds"),
    )
    report = Report(kernel, "sm_90", str(cubin), "", 2, 0, 0, "", None)
    clock = Clock(Deadline(time.monotonic(), args.seconds), _rule(args, True), Costs())
    ranked = [(fast, 0.80), (slower, 0.90)]
    picked, why = _pick_finalist(args, kernel, ranked, scorer, tmp_path, report, clock, args.final_budget_s)
    assert picked is not None, why
    choice, kept, final = picked
    assert choice == slower and kept.data == built[slower] and final.value == 0.90
    assert scorer.rechecked == [built[fast], built[slower]]  # best first, then the next
    assert "rejected at the re-check" in report.finalists[0]["final"]
    assert final.detail["recheck"] == "identical on 20 input set(s)"


def test_the_moves_manifest_names_specs_relative_to_the_repository() -> None:
    """Built on one machine, run on the GPU host, whose checkout lies elsewhere."""
    from benchmarks.studies.moves import ROOT as MOVES_ROOT
    from benchmarks.studies.moves import _relative_spec

    record = _relative_spec({"kernel": "k", "spec": str(SPEC)})
    assert record["spec"] == "benchmarks/kernels/specs/rmsnorm_triton_style.toml"
    assert (MOVES_ROOT / record["spec"]).is_file()
    assert _relative_spec({"spec": "/elsewhere/k.toml"})["spec"] == "/elsewhere/k.toml"
