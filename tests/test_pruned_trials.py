"""What is predictable is not spent on the GPU. A choice the verifier
rejects, a binary already scored and the original's own bytes are settled on the CPU as
*pruned* trials, counted by reason in the report and trials.csv, and not counted against
--budget; only new, legal binaries reach the scorer. The GPU path is walked with a fake
worker pool (every job it is handed is a GPU trial spent)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import optuna
import pandas as pd
import pytest

import reorder.build.space
import reorder.search.study
from reorder.base.errors import LegalityError
from reorder.binary.cubin import read_cubin
from reorder.build.space import search_space
from reorder.report.markdown import Report, failures_by_class, pruned_by_class, write_report
from reorder.sass.model import decode_kernel
from reorder.search.scoring import GpuScorer, StaticScorer
from reorder.search.study import (
    ORIGINAL,
    SearchConfig,
    finished_trials,
    out_of_candidates,
    pruned_trials,
    run_search,
    seed_params,
)
from timing.worker import JobResult

ROOT = Path(__file__).resolve().parent.parent
CUBIN = ROOT / "tests" / "corpus" / "cubin" / "sm_90" / "elementwise.cubin"
KERNEL = "saxpy_grid_stride"
SWAP_REJECTED = "move rejected: swap @ block 3: verifier rejected Swap(index=5): raw R4 required 4, provided 1"


@pytest.fixture(scope="module")
def space():
    return search_space(decode_kernel(read_cubin(CUBIN), KERNEL), False)


def _config(tmp_path: Path, budget: int) -> SearchConfig:
    return SearchConfig(CUBIN, KERNEL, False, budget, 600.0, 1, f"sqlite:///{tmp_path / 'study.db'}", "p", seed=5)


class _FakeGpuPool:
    """A worker pool standing in for the GPU: every job is a GPU trial spent. It answers
    'identical' with a ratio drawn from the candidate's bytes, and keeps those bytes."""

    def __init__(self) -> None:
        self.scored: list[bytes] = []

    def run(self, job) -> JobResult:
        data = Path(job.args[1]).read_bytes()
        self.scored.append(data)
        ratio = 0.8 + int(hashlib.sha256(data).hexdigest()[:4], 16) % 300 / 1000
        return JobResult(
            "ok",
            {
                "ratio": ratio,
                "ci_low": ratio - 0.01,
                "ci_high": ratio + 0.01,
                "check": "identical",
                "check_detail": "identical on 3 input set(s)",
            },
        )


@pytest.fixture
def rejecting_swaps(monkeypatch):
    """Builds as usual, except that a choice with swap 0 or 1 is rejected as the verifier
    rejects one (about a fifth of the random trials); the study's first seed is the empty
    choice (the original's bytes), its second one with a rejected swap."""
    real = reorder.build.space.apply_choice

    def apply(code, space, choice, noalias=False):
        if {0, 1} & set(choice.swaps):
            raise LegalityError(SWAP_REJECTED)
        return real(code, space, choice, noalias)

    monkeypatch.setattr(reorder.build.space, "apply_choice", apply)  # jobs=1: joblib builds in this process
    seeds = seed_params

    def seeded(sp):
        empty = {k: (-1 if k.startswith("swap") else 0) for k in seeds(sp)[0]}
        first_swap = min(k for k in empty if k.startswith("swap"))
        # the empty choice first, then one with a rejected swap: the study meets a rejected build
        # whatever the sampler draws later (the search's own seeds fill most of a small budget)
        return [empty, {**empty, first_swap: 0}, *seeds(sp)]

    monkeypatch.setattr(reorder.search.study, "seed_params", seeded)


def test_predictable_trials_spend_no_gpu_trial(tmp_path, space, rejecting_swaps):
    pool = _FakeGpuPool()
    budget = 5
    study = run_search(_config(tmp_path, budget), space, GpuScorer(CUBIN, None, pool), progress=lambda _: None)
    original = CUBIN.read_bytes()
    assert len(pool.scored) == finished_trials(study) == budget  # the budget is GPU trials
    assert original not in pool.scored and len(set(pool.scored)) == len(pool.scored)  # each new binary once
    pruned = pruned_by_class(study)
    assert pruned["build: move rejected: swap"] >= 1 and pruned["the original's bytes"] == 1, pruned
    assert pruned_trials(study) == sum(pruned.values()) == len(study.trials) - budget
    assert not failures_by_class(study)  # pruned is not failed
    unbuilt = [t for t in study.trials if t.user_attrs.get("pruned", "").startswith("build: ")]
    assert {t.state for t in unbuilt} == {optuna.trial.TrialState.PRUNED}  # no value: the sampler ranks them low
    first = min(study.trials, key=lambda t: t.number)
    assert first.user_attrs["pruned"] == ORIGINAL and first.value == 1.0  # known without timing it
    ranked = reorder.search.study.ranked_choices(study, space, 20)
    assert all(choice.moves() for choice, _ in ranked)  # the original is never a finalist

    report = Report(
        KERNEL,
        "sm_90",
        str(CUBIN),
        space.size_line(),
        len(study.trials),
        0,
        0,
        "(none)",
        None,
        failures=failures_by_class(study),
        pruned=pruned,
    )
    assert (
        f"pruned before scoring (no GPU trial spent, not counted in --budget): {pruned['build: move rejected: swap']}"
        " x build: move rejected: swap" in report.markdown()
    )
    _, csv = write_report(tmp_path / "out", report, study)
    rows = pd.read_csv(csv)
    assert (rows["pruned_class"] == "build: move rejected: swap").sum() == pruned["build: move rejected: swap"]
    assert (rows["state"] == "COMPLETE").sum() >= budget


def test_a_build_failure_is_pruned_and_a_space_of_nothing_legal_ends_the_run(tmp_path, space, monkeypatch):
    def rejected(code, space, choice, noalias=False):
        raise LegalityError("verifier rejected the candidate: raw R4 0x10 -> 0x20 required 4, provided 1")

    monkeypatch.setattr(reorder.build.space, "apply_choice", rejected)
    lines: list[str] = []
    study = run_search(_config(tmp_path, 2), space, StaticScorer(CUBIN, KERNEL), progress=lines.append)
    assert {t.state for t in study.trials} == {optuna.trial.TrialState.PRUNED}
    assert all(t.user_attrs["pruned"].startswith("build: verifier rejected") for t in study.trials)
    assert finished_trials(study) == 0 and out_of_candidates(study, 2)  # bounded, not spinning until --time
    assert len(study.trials) == reorder.search.study.PRUNED_PER_TRIAL * 2 + reorder.search.study.PRUNED_SLACK
    assert lines[-1].startswith("stopping: ") and "pruned before scoring" in lines[-1]
