"""`reorder optimize` as on a GPU host, on a CPU machine: run as a script with optimize's
arguments. Only the GPU is faked: the device choice, and the two worker jobs
(tests/fake_gpu_jobs.py) that the GpuScorer sends to its real isolated worker process.
Everything else (search, finalists, re-check, pruning, signals, cuts) is the product's."""

from __future__ import annotations

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

    def score(self, candidate, budget_s=None, target_ci_pct=None):
        job = Job.of(
            "fake_gpu_jobs:check_and_time",
            str(self.original),
            str(candidate),
            self.spec.name,
            budget_s or self.budget_s,
            timeout_s=(budget_s or self.budget_s) + 120,
        )
        result = self.pool.run(job)
        if not result.ok:
            raise Rejected(f"{result.status}: {result.reason}")
        row = result.value
        return Score(row["ratio"], row["ci_low"], row["ci_high"], True, row)

    def recheck(self, candidate, launches, sets, first_set):
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
