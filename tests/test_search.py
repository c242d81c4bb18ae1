"""The search loop on the static cost model: deterministic under a seed, resumable, failures
as trial states, a killed worker's trial retried."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import optuna
import pytest

from reorder.binary.cubin import read_cubin
from reorder.build.space import search_space
from reorder.sass.model import decode_kernel
from reorder.search.scoring import Rejected, StaticScorer
from reorder.search.study import SearchConfig, finished_trials, run_search

ROOT = Path(__file__).resolve().parent.parent
CUBIN = ROOT / "tests" / "corpus" / "cubin" / "sm_90" / "elementwise.cubin"
KERNEL = "saxpy_grid_stride"


def _config(tmp_path: Path, name: str, budget: int, **kw) -> SearchConfig:
    return SearchConfig(
        CUBIN, KERNEL, False, budget, 600.0, 1, f"sqlite:///{tmp_path / 'study.db'}", name, seed=kw.pop("seed", 3), **kw
    )


@pytest.fixture(scope="module")
def space():
    return search_space(decode_kernel(read_cubin(CUBIN), KERNEL), False)


def _history(study) -> list[tuple]:
    return [(t.params, t.value, t.state.name) for t in sorted(study.trials, key=lambda t: t.number)]


def test_search_is_deterministic_under_a_seed(tmp_path, space):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = run_search(_config(tmp_path / "a", "s", 5), space, StaticScorer(CUBIN, KERNEL), progress=lambda _: None)
    b = run_search(_config(tmp_path / "b", "s", 5), space, StaticScorer(CUBIN, KERNEL), progress=lambda _: None)
    assert _history(a) == _history(b)
    assert finished_trials(a) == 5
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in a.trials), [t.user_attrs for t in a.trials]
    assert min(t.value for t in a.trials) < 1.0


def test_an_interrupted_study_resumes(tmp_path, space):
    first = run_search(_config(tmp_path, "r", 3), space, StaticScorer(CUBIN, KERNEL), progress=lambda _: None)
    before = _history(first)
    again = run_search(_config(tmp_path, "r", 6), space, StaticScorer(CUBIN, KERNEL), progress=lambda _: None)
    assert finished_trials(again) == 6
    assert _history(again)[:3] == before


class _RejectAll:
    measured = True

    def score(self, candidate: Path):
        raise Rejected("crashed: CUDARuntimeError: an illegal instruction was encountered")


def test_rejected_candidates_are_failed_trials_with_their_reason(tmp_path, space):
    study = run_search(_config(tmp_path, "f", 3), space, _RejectAll(), progress=lambda _: None)
    failed = [t for t in study.trials if t.state == optuna.trial.TrialState.FAIL]
    assert failed and all("illegal instruction" in t.user_attrs["failure"] for t in failed)
    assert finished_trials(study) == 3


def test_a_killed_workers_trial_is_retried(tmp_path, space):
    script = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(ROOT)!r})
        from pathlib import Path
        from reorder.binary.cubin import read_cubin
        from reorder.sass.model import decode_kernel
        from reorder.search.scoring import StaticScorer
        from reorder.search.study import SearchConfig, run_search
        from reorder.build.space import search_space

        class DiesOnThird(StaticScorer):
            calls = 0
            def score(self, candidate):
                DiesOnThird.calls += 1
                if DiesOnThird.calls == 3:
                    os._exit(9)  # the worker is killed while it holds a trial
                return super().score(candidate)

        cubin = Path({str(CUBIN)!r})
        space = search_space(decode_kernel(read_cubin(cubin), {KERNEL!r}), False)
        config = SearchConfig(cubin, {KERNEL!r}, False, 5, 600.0, 1, {f"sqlite:///{tmp_path / 'study.db'}"!r}, "k",
                              seed=3, heartbeat_s=1, grace_s=2)
        run_search(config, space, DiesOnThird(cubin, {KERNEL!r}), progress=lambda _: None)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 9, done.stderr
    time.sleep(3)  # past the grace period: the dead worker's trial is stale
    study = run_search(
        _config(tmp_path, "k", 5, heartbeat_s=1, grace_s=2), space, StaticScorer(CUBIN, KERNEL), progress=lambda _: None
    )
    states = [t.state for t in study.trials]
    stale = [t for t in study.trials if t.state == optuna.trial.TrialState.FAIL and "failure" not in t.user_attrs]
    assert len(stale) == 1
    retried = [t for t in study.trials if t.system_attrs.get("failed_trial") == stale[0].number]
    assert len(retried) == 1 and retried[0].params == stale[0].params
    assert retried[0].state == optuna.trial.TrialState.COMPLETE
    assert finished_trials(study) == 5 and optuna.trial.TrialState.RUNNING not in states
    assert len({t.number for t in study.trials}) == len(study.trials)


def test_a_fresh_study_starts_with_the_single_move_seeds(tmp_path, space):
    """Each move family alone and all together are scored first, so the search can never
    report less than the best single move it was given."""
    from reorder.search.study import ranked_choices, seed_params

    seeds = seed_params(space)
    assert seeds and all(set(s) == set(seeds[0]) for s in seeds)
    study = run_search(
        _config(tmp_path, "seeded", len(seeds) + 2), space, StaticScorer(CUBIN, KERNEL), progress=lambda _: None
    )
    first = sorted(study.trials, key=lambda t: t.number)[: len(seeds)]
    assert [dict(t.params.items()) for t in first] == seeds
    ranked = ranked_choices(study, space, 3)
    values = [v for _, v in ranked]
    assert values == sorted(values)
    shas = [t.user_attrs.get("sha256") for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(ranked) == min(3, len(set(shas)))


def test_a_candidate_built_once_in_a_run_is_not_built_again(tmp_path, monkeypatch):
    """The finalists are the search's own trials: their bytes come from the run's build folder
    (the same bytes, not a second build); another choice or another cubin is built anew."""
    from reorder.build import space as space_module

    choice = space_module.Choice(stall_cuts=(0,))
    fresh = space_module.build_candidate(str(CUBIN), KERNEL, True, choice)
    assert fresh.data is not None
    calls = []
    real = space_module.build_candidate
    monkeypatch.setattr(space_module, "build_candidate", lambda *a: calls.append(a) or real(*a))
    cache = str(tmp_path / "builds")
    first = space_module.build_cached(cache, str(CUBIN), KERNEL, True, choice)
    again = space_module.build_cached(cache, str(CUBIN), KERNEL, True, choice)
    assert first == again == fresh and len(calls) == 1
    space_module.build_cached(cache, str(CUBIN), KERNEL, False, choice)  # another alias assumption
    copy = tmp_path / "other.cubin"
    copy.write_bytes(CUBIN.read_bytes() + b"\0")  # other bytes (an appended byte still reads)
    space_module.build_cached(cache, str(copy), KERNEL, True, choice)
    assert len(calls) == 3
    assert space_module.build_cached(None, str(CUBIN), KERNEL, True, choice) == fresh and len(calls) == 4
