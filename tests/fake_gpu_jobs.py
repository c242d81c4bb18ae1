"""Worker jobs that stand in for the GPU's check-and-time and re-check, for running optimize's
GPU phases on a CPU machine (tests/fake_gpu_optimize.py). They run in timing.worker's real
child processes, so a signal or a cut meets a real worker busy in a job: the ratio is the
static model's, the check is assumed identical, the time is slept. FAKE_RECHECK_S sets how
long a re-check "runs" (a hung kernel: a long time)."""

from __future__ import annotations

import os
import time


def check_and_time(original: str, candidate: str, kernel: str, budget_s: float) -> dict:
    """Sleep the timing budget; the static model's ratio with a 1% CI."""
    from reorder.search.scoring import StaticScorer

    started = time.monotonic()
    ratio = StaticScorer(original, kernel).score(candidate).value
    time.sleep(max(0.0, budget_s - (time.monotonic() - started)))
    return {
        "status": "ok",
        "check": "identical",
        "check_detail": "identical on 3 fake input sets",
        "ratio": ratio,
        "ci_low": ratio * 0.99,
        "ci_high": ratio * 1.01,
    }


def recheck(sets: int) -> dict:
    time.sleep(float(os.environ.get("FAKE_RECHECK_S", "0.5")))
    return {"check": "identical", "check_detail": f"identical on {sets} fake input sets"}
