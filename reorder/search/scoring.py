"""One cost interface for the search: a Scorer turns a candidate cubin into a Score.

`StaticScorer` predicts from the latency model (no GPU; every figure is labelled
predicted). `GpuScorer` proves byte equality on fresh inputs and then times the candidate
against the original with paired GPU-only timing, in an isolated worker; a mismatch, a
fault or a hang raises `Rejected` with its reason, which the search records as a failed
trial and survives.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from reorder.analysis.costmodel import kernel_cycles
from reorder.base.errors import ReorderError
from reorder.binary.cubin import read_cubin
from reorder.sass.model import decode_kernel
from reorder.sass.readback import read_back


class Rejected(ReorderError):
    """A candidate that built but must not count: wrong bytes, a fault, a hang."""


@dataclass(frozen=True)
class Score:
    """time(candidate)/time(original) (measured) or cycles ratio (predicted); lower is better."""

    value: float
    low: float
    high: float
    measured: bool
    detail: dict

    def line(self) -> str:
        """The score for a report: measured with its 95% CI; predicted alone (the static
        model's figure has no interval)."""
        if not self.measured:
            return f"{self.value:.4f} (predicted)"
        return f"{self.value:.4f} [{self.low:.4f}, {self.high:.4f}] (measured)"


class Scorer(Protocol):
    measured: bool

    def score(self, candidate: Path) -> Score: ...


class StaticScorer:
    """Predicted cycles of the candidate over the original's (static model, no GPU)."""

    measured = False

    def __init__(self, original: Path, kernel: str) -> None:
        self.original = decode_kernel(read_cubin(original), kernel)
        self.base = kernel_cycles(self.original.instructions)

    def score(self, candidate: Path) -> Score:
        cycles = kernel_cycles(read_back(read_cubin(candidate), self.original).instructions)
        ratio = cycles / self.base
        return Score(ratio, ratio, ratio, False, {"predicted_cycles": cycles, "original_cycles": self.base})


class GpuScorer:
    """Byte check, then paired timing against the original, in a worker per GPU.

    Every candidate is checked at the spec's launch and at `fill` (a launch that fills
    every SM, when the user gave one), shared memory poisoned before each launch; the
    timing runs at the spec's launch. `recheck` is the wider check a winner must pass
    before it is written: every launch it will serve, on many input sets never used before.
    """

    measured = True

    def __init__(
        self, original: Path, spec, pool, l2: str = "warm", budget_s: float = 2.0, target_ci_pct: float = 1.0, fill=None
    ) -> None:
        self.original, self.spec, self.pool = original, spec, pool
        self.l2, self.budget_s, self.target = l2, budget_s, target_ci_pct
        self.more = (fill,) if fill is not None else ()

    def recheck(self, candidate: Path, launches: tuple, sets: int, first_set: int) -> str:
        """Byte check at the spec's launch and each of `launches` on `sets` input sets from
        `first_set`: the line saying what was checked, or Rejected with the first difference."""
        from timing.evaluate import check_job, describe_status
        from timing.worker import Job

        job = Job.of(
            check_job,
            str(self.original),
            str(candidate),
            self.spec,
            sets=sets,
            more=launches,
            first_set=first_set,
            timeout_s=120 + 2.0 * sets * (1 + len(launches)),
        )
        row = describe_status(self.pool.run(job))
        if row["status"] != "ok":
            raise Rejected(f"re-check {row['status']}: {row['reason']}")
        if row.get("check") != "identical":
            raise Rejected(f"re-check: outputs differ: {row['check_detail']}")
        return f"{row['check_detail']} (input sets {first_set}..{first_set + sets - 1})"

    def score(self, candidate: Path, budget_s: float | None = None, target_ci_pct: float | None = None) -> Score:
        from timing.evaluate import check_and_time_job, describe_status
        from timing.worker import Job

        budget = budget_s or self.budget_s
        job = Job.of(
            check_and_time_job,
            str(self.original),
            str(candidate),
            self.spec,
            timeout_s=budget + 120,
            l2=self.l2,
            budget_s=budget,
            target_ci_pct=target_ci_pct or self.target,
            more=self.more,
        )
        row = describe_status(self.pool.run(job))
        if row["status"] != "ok":
            raise Rejected(f"{row['status']}: {row['reason']}")
        if row.get("check") == "MISMATCH":
            raise Rejected(f"outputs differ: {row['check_detail']}")
        return Score(row["ratio"], row["ci_low"], row["ci_high"], True, row)
