"""One candidate evaluation, as a worker job: check bytes first, then time if identical.

This is the unit every GPU-scoring caller runs (the CLI's `check`/`time`, the benchmark
scripts, the search) inside `timing.worker`, so a candidate that faults or hangs costs
one job and the caller continues with a fresh worker. Results are plain dicts so they
pickle across the process boundary and go straight into CSV/JSON records.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from timing.spec import LaunchSpec

if TYPE_CHECKING:
    from timing.paired import L2Mode, Method


def check_job(
    a_cubin: str,
    b_cubin: str,
    spec: LaunchSpec,
    sets: int = 3,
    more: Sequence[LaunchSpec] = (),
    first_set: int = 0,
    poison_shared: bool = True,
) -> dict[str, Any]:
    """Byte-equality of B against A on `sets` fresh input sets at the spec's launch and each of
    `more`, shared memory poisoned before every launch (timing.check; `poison_shared=False`
    only to show what a check without it misses)."""
    from timing.check import check_pair

    result = check_pair(a_cubin, b_cubin, spec, sets=sets, more=more, first_set=first_set, poison_shared=poison_shared)
    # describe() carries the input set and a non-deterministic reference, not only the element
    return {
        "check": "identical" if result.ok else "MISMATCH",
        "check_sets": result.sets,
        "check_detail": result.describe(),
        "check_launch_s": list(result.seconds),
        "check_references": result.references,
    }


def time_job(
    a_cubin: str,
    b_cubin: str,
    spec: LaunchSpec,
    l2: L2Mode = "warm",
    method: Method = "graph",
    target_ci_pct: float = 0.5,
    budget_s: float = 8.0,
    b_shared: int | None = None,
) -> dict[str, Any]:
    """Paired timing of B against A; ratio = time(B)/time(A) with its bootstrap 95% CI (B
    launched with `b_shared` bytes of dynamic shared memory when given, else the spec's)."""
    from timing.paired import time_pair
    from timing.stats import verdict

    t = time_pair(
        a_cubin, b_cubin, spec, l2=l2, method=method, target_ci_pct=target_ci_pct, budget_s=budget_s, b_shared=b_shared
    )
    return {
        "ratio": t.ratio.ratio,
        "ci_low": t.ratio.low,
        "ci_high": t.ratio.high,
        "ci_half_width_pct": t.ci_half_width_pct,
        "a_us": t.a_us,
        "b_us": t.b_us,
        "rounds": t.rounds,
        "dropped_rounds": t.dropped_rounds,
        "clock_mhz": t.clock_mhz,
        "verdict": verdict(t.ratio),
        "l2": t.l2,
        "method": t.method,
        "stopped": t.stopped,
    }


def check_and_time_job(
    a_cubin: str,
    b_cubin: str,
    spec: LaunchSpec,
    l2: L2Mode = "warm",
    method: Method = "graph",
    target_ci_pct: float = 0.5,
    budget_s: float = 8.0,
    more: Sequence[LaunchSpec] = (),
) -> dict[str, Any]:
    """Check (at the spec's launch and each of `more`), and time only a byte-identical
    candidate, at the spec's launch (a wrong kernel has no speed)."""
    row = (
        check_job(a_cubin, b_cubin, spec, more=more)
        if Path(a_cubin).resolve() != Path(b_cubin).resolve()
        else {"check": "same-file", "check_sets": 0, "check_detail": "A/A: the same cubin twice"}
    )
    if row["check"] == "MISMATCH":
        return row
    return {**row, **time_job(a_cubin, b_cubin, spec, l2, method, target_ci_pct, budget_s)}


def describe_status(result) -> dict[str, Any]:
    """A worker JobResult as a flat record: status, reason, and the job's own fields."""
    row = {"status": result.status, "reason": result.reason or ""}
    if isinstance(result.value, dict):
        row.update(result.value)
    return row


__all__ = ["check_and_time_job", "check_job", "describe_status", "time_job"]
