"""`reorder optimize` as on a GPU host, on a CPU machine: run as a script with optimize's
arguments. Only the GPU is faked: the device choice, and the two worker jobs
(tests/fake_gpu_jobs.py) that the GpuScorer sends to its real isolated worker process.
Everything else (search, finalists, re-check, pruning, signals, cuts) is the product's.
FAKE_PRUNE_S: how long each of pruning's scorings runs (after the first re-check)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]


def _install() -> None:
    from reorder import optimize
    from reorder.search import scoring
    from reorder.search.scoring import Rejected, Score
    from timing import cli_support
    from timing.worker import Job

    rechecked = []  # a score after the first re-check is pruning's: FAKE_PRUNE_S sets how long it runs

    def score(self, candidate, budget_s=None, target_ci_pct=None):
        seconds = budget_s or self.budget_s
        if rechecked and os.environ.get("FAKE_PRUNE_S"):
            seconds = float(os.environ["FAKE_PRUNE_S"])
        job = Job.of(
            "fake_gpu_jobs:check_and_time",
            str(self.original),
            str(candidate),
            self.spec.name,
            seconds,
            timeout_s=seconds + 120,
        )
        result = self.pool.run(job)
        if not result.ok:
            raise Rejected(f"{result.status}: {result.reason}")
        row = result.value
        return Score(row["ratio"], row["ci_low"], row["ci_high"], True, row)

    def recheck(self, candidate, launches, sets, first_set):
        rechecked.append(candidate)
        result = self.pool.run(Job.of("fake_gpu_jobs:recheck", sets, timeout_s=600))
        if not result.ok:
            raise Rejected(f"re-check {result.status}: {result.reason}")
        return result.value["check_detail"]

    scoring.GpuScorer.score = score
    scoring.GpuScorer.recheck = recheck
    optimize._choose_device = lambda args: True
    cli_support.worker_device = lambda environ=None: None


if __name__ == "__main__":
    _install()
    from reorder.cli.main import main

    sys.exit(main(sys.argv[1:]))
