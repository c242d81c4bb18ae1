"""Several search workers on one study: the journal file on one host, PostgreSQL for many.

No trial may be lost or run twice, and a worker killed while holding a trial must not lose
it: with a database storage the trial is failed after the grace period and run again.
The PostgreSQL test starts its own server on a Unix socket and stops it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import optuna
import pytest

from reorder.search.study import finished_trials, open_storage

ROOT = Path(__file__).resolve().parent.parent
CUBIN = ROOT / "tests" / "corpus" / "cubin" / "sm_90" / "elementwise.cubin"
KERNEL = "saxpy_grid_stride"


def _study(url: str):
    storage = open_storage(url)
    (name,) = optuna.get_all_study_names(storage)
    return optuna.load_study(study_name=name, storage=storage)


def _assert_clean(study, budget: int, workers: int) -> None:
    numbers = [t.number for t in study.trials]
    assert len(numbers) == len(set(numbers))
    assert optuna.trial.TrialState.RUNNING not in [t.state for t in study.trials]
    done = finished_trials(study)
    assert budget <= done <= budget + workers - 1  # workers ask concurrently near the end
    digests = [
        t.user_attrs["sha256"]
        for t in study.trials
        if t.state == optuna.trial.TrialState.COMPLETE and not t.user_attrs.get("duplicate")
    ]
    assert len(digests) == len(set(digests))  # a binary is scored once, later copies are marked duplicate


def test_two_workers_share_a_journal_study(tmp_path):
    out = tmp_path / "fast.cubin"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "reorder",
            "optimize",
            str(CUBIN),
            "--kernel",
            KERNEL,
            "-o",
            str(out),
            "--budget",
            "8",
            "--jobs",
            "1",
            "--workers",
            "2",
            "--device",
            "cpu",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    study = _study(f"journal:{tmp_path / 'fast.reorder' / 'study.journal'}")
    _assert_clean(study, 8, 2)
    assert (tmp_path / "fast.reorder" / "report.md").exists()


_WORKER = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, {root!r})
    from pathlib import Path
    from reorder.binary.cubin import read_cubin
    from reorder.sass.model import decode_kernel
    from reorder.search.scoring import StaticScorer
    from reorder.search.study import SearchConfig, run_search
    from reorder.build.space import search_space

    class Scorer(StaticScorer):
        calls = 0
        def score(self, candidate):
            Scorer.calls += 1
            if {die_at} and Scorer.calls == {die_at}:
                os._exit(9)  # killed while holding a trial
            return super().score(candidate)

    cubin = Path({cubin!r})
    space = search_space(decode_kernel(read_cubin(cubin), {kernel!r}), False)
    config = SearchConfig(cubin, {kernel!r}, False, {budget}, 600.0, 1, {url!r}, "shared", seed={seed},
                          heartbeat_s=1, grace_s=3)
    run_search(config, space, Scorer(cubin, {kernel!r}), progress=lambda _: None)
""")


@pytest.fixture()
def postgres_url():
    initdb, pg_ctl, createdb = shutil.which("initdb"), shutil.which("pg_ctl"), shutil.which("createdb")
    pytest.importorskip("psycopg2")
    if not (initdb and pg_ctl and createdb):
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl, createdb) not installed")
    base = Path(tempfile.mkdtemp(prefix="reorder-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        as_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(base, "postgres")
    data, port = base / "data", 20000 + os.getpid() % 20000

    def run(*cmd):
        return subprocess.run(as_user + list(cmd), capture_output=True, text=True, check=True)

    run(initdb, "-D", str(data), "-A", "trust", "-U", "postgres")
    run(
        pg_ctl,
        "-D",
        str(data),
        "-l",
        str(base / "log"),
        "-w",
        "-o",
        f"-k {base} -p {port} -c listen_addresses=''",
        "start",
    )
    try:
        run(createdb, "-h", str(base), "-p", str(port), "-U", "postgres", "reorder")
        yield f"postgresql+psycopg2://postgres@/reorder?host={base}&port={port}"
    finally:
        subprocess.run(as_user + [pg_ctl, "-D", str(data), "-m", "immediate", "stop"], capture_output=True, check=False)
        shutil.rmtree(base, ignore_errors=True)


def test_postgres_workers_with_one_killed(postgres_url):
    budget = 8

    def worker(seed: int, die_at: int) -> subprocess.Popen:
        code = _WORKER.format(
            root=str(ROOT), die_at=die_at, cubin=str(CUBIN), kernel=KERNEL, budget=budget, url=postgres_url, seed=seed
        )
        return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    doomed = worker(1, 2)
    assert doomed.wait(timeout=300) == 9
    # The steady worker starts only once the doomed one's trial is past the grace period, so
    # its first ask must find the trial stale (run side by side, the steady worker could
    # finish the whole budget before the grace period ran out, and the test raced).
    time.sleep(4)
    steady = worker(2, 0)
    assert steady.wait(timeout=600) == 0, steady.stderr.read().decode()[-2000:]
    study = _study(postgres_url)
    stale = [t for t in study.trials if t.state == optuna.trial.TrialState.FAIL and "failure" not in t.user_attrs]
    assert len(stale) == 1, "the killed worker's trial was not failed as stale exactly once"
    (lost,) = stale
    retried = [t for t in study.trials if t.system_attrs.get("failed_trial") == lost.number]
    assert len(retried) == 1 and retried[0].params == lost.params
    _assert_clean(study, budget, 2)


def test_a_heartbeat_the_storage_refuses_is_skipped_and_the_next_one_made():
    """sqlite locked by another process's commit (or a commit a signal cut) makes one heartbeat
    fail: the heartbeat thread skips it and beats again, rather than dying with a traceback
    on stderr and leaving the trials to look stale after the grace period."""
    from reorder.search.study import _Heartbeat

    class Storage:
        def __init__(self) -> None:
            self.calls: list[int] = []

        def record_heartbeat(self, trial_id: int) -> None:
            self.calls.append(trial_id)
            if len(self.calls) == 1:
                raise optuna.exceptions.StorageInternalError("database is locked")
            beat.stop.set()

    storage = Storage()
    beat = _Heartbeat(storage, 0)
    beat.trial_ids = {7}
    beat._run()  # in this thread: returns once the second beat has stopped it
    assert storage.calls == [7, 7]
