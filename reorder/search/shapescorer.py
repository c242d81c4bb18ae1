"""The GPU scorer for several launch shapes: every trial that can still count checked at every
shape, timed at each (paired, with its CI), scored by the weighted geometric mean
(reorder.search.shapes).

A search trial (scored without a budget) is raced: timed first at the most informative shape,
before its byte check, and dropped there when clearly worse (reorder.search.shapes.race); a
dropped trial is never checked and never counts (its value for the sampler is an estimate
worse than the incumbent's). A trial that survives is checked at every shape, then timed at
the others. On the H200 a 5-shape RMSNorm trial's byte check had cost more than its timing
(9 s against 0.7 s, 2026-12-01), so the race now saves checks as well as timing. A finalist
(scored with its budget) is checked and timed at every shape. The timing budget
(--candidate-budget, a finalist's) is the candidate's, shared by its shapes (MIN_SHAPE_S each
at least); the paired timing stops earlier at each shape once its CI is narrow enough. The
scorer keeps a ledger of what was spent where (seconds of byte checks per shape, of timing per
shape, trials dropped at which shape before any check) and of every finalist's per-shape
ratios, for the report's per-shape table and the per-shape binaries (reorder.report.pershape).
It is a GpuScorer, so the finalists, the re-check and the pruning of the winner treat it as one.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from reorder.search.scoring import GpuScorer, Rejected, Score
from reorder.search.shapes import Ratio, Row, estimate, geomean, informative_order, race

TRIAL_SETS = 3  # input sets of every trial's byte check at each shape (as a single-shape trial's)
MIN_SHAPE_S = 0.25  # seconds of paired timing at one shape at least, however many shapes share the budget
UNCHECKED = "not checked: dropped by the race before its byte check (it never counts)"


@dataclass(frozen=True, slots=True)
class Shape:
    """One launch the kernel serves: its label (the spec file's stem), spec and weight."""

    label: str
    spec: object  # timing.spec.LaunchSpec
    weight: float = 1.0


@dataclass
class Ledger:
    """What the scorer spent and measured. Seconds are wall time of the worker jobs."""

    check_s: float = 0.0  # byte checks of search trials (every shape each), wall seconds of the jobs
    checks: int = 0  # search trials byte-checked (those the race dropped first are not)
    check_shape_s: dict[str, float] = field(default_factory=dict)  # shape -> seconds of those checks there
    references: int = 0  # the original's runs those checks made (its outputs are then kept per set)
    timing_s: dict[str, float] = field(default_factory=dict)  # shape -> seconds of search-trial timing
    timings: dict[str, int] = field(default_factory=dict)  # shape -> search trials timed there
    dropped: dict[str, int] = field(default_factory=dict)  # first shape -> trials the race dropped there
    full: int = 0  # search trials timed at every shape
    final_s: float = 0.0  # finalists, removals and re-checks (every shape each)
    finals: dict[str, Row] = field(default_factory=dict)  # sha256 -> per-shape ratios at final budget
    final_bytes: dict[str, bytes] = field(default_factory=dict)  # sha256 -> the finalist's cubin
    rechecked: dict[str, str] = field(default_factory=dict)  # sha256 -> what its re-check covered, or why it failed
    history: list[Row] = field(default_factory=list)  # search trials timed at every shape

    @property
    def unchecked(self) -> int:
        """Search trials dropped by the race before their byte check."""
        return sum(self.dropped.values())

    def mean_timing_s(self, label: str) -> float:
        return self.timing_s.get(label, 0.0) / max(1, self.timings.get(label, 0))


def _launch(spec):
    """A spec as the launch it makes (the file it was read from aside): two files of one launch
    are checked once."""
    from dataclasses import replace

    return replace(spec, source="")


class ShapeScorer(GpuScorer):
    """Byte check at every shape, paired timing at each, the weighted geometric mean as the score."""

    def __init__(
        self,
        original: Path,
        shapes: Sequence[Shape],
        pool,
        l2: str = "warm",
        budget_s: float = 2.0,
        target_ci_pct: float = 1.0,
        fill=None,
        racing: bool = True,
    ) -> None:
        super().__init__(original, shapes[0].spec, pool, l2=l2, budget_s=budget_s, target_ci_pct=target_ci_pct)
        self.shapes = tuple(shapes)
        self.weights = {s.label: s.weight for s in self.shapes}
        self.fill = fill
        self.racing = racing
        self.ledger = Ledger()

    def _others(self, extra: Sequence = ()) -> tuple:
        """The launches besides the first shape's: the other shapes, then `extra`, each once."""
        out: list = []
        seen = [_launch(self.spec)]
        for spec in (*(s.spec for s in self.shapes[1:]), *extra):
            if spec is not None and _launch(spec) not in seen:
                seen.append(_launch(spec))
                out.append(spec)
        return tuple(out)

    def recheck(self, candidate: Path, launches: tuple, sets: int, first_set: int) -> str:
        """The winner's re-check at every shape and each of `launches` (--check-launch)."""
        started = time.monotonic()
        sha = hashlib.sha256(candidate.read_bytes()).hexdigest()
        try:
            line = super().recheck(candidate, self._others(launches), sets, first_set)
        except Rejected as exc:
            self.ledger.rechecked[sha] = f"FAILED: {exc}"
            raise
        finally:
            self.ledger.final_s += time.monotonic() - started
        self.ledger.rechecked[sha] = line
        return line

    def score(self, candidate: Path, budget_s: float | None = None, target_ci_pct: float | None = None) -> Score:
        """A search trial (no budget given) is timed first at its race's shape, *before* any byte
        check: dropped there, it is never checked (it cannot win, and it never counts); kept, it
        is checked at every shape and timed at the rest. A finalist is checked at every shape and
        timed at each with its budget. A wrong candidate that survives the race is rejected by
        its check like any other, so nothing unchecked is ever a result."""
        final = budget_s is not None
        started = time.monotonic()
        budget = max(MIN_SHAPE_S, (budget_s or self.budget_s) / len(self.shapes))  # the budget is the trial's
        target = target_ci_pct or self.target
        labels = [s.label for s in self.shapes]
        seconds = {s: self.ledger.mean_timing_s(s) for s in labels}
        order = labels if final else informative_order(labels, self.weights, self.ledger.history, seconds)
        row: dict[str, Ratio] = {}
        rows: dict[str, dict] = {}
        if not final and self.racing and len(order) > 1:
            self._time_into(candidate, order[0], budget, target, row, rows, final)
            verdict = race(order[0], row[order[0]], self.ledger.history, self.weights)
            if verdict.drop:
                self.ledger.dropped[order[0]] = self.ledger.dropped.get(order[0], 0) + 1
                return self._score(row, rows, verdict.why, UNCHECKED)
        checked = self._check(candidate, final)
        for label in order:
            if label not in row:
                self._time_into(candidate, label, budget, target, row, rows, final)
        if final:
            self.ledger.final_s += time.monotonic() - started
            sha = hashlib.sha256(candidate.read_bytes()).hexdigest()
            self.ledger.finals[sha] = row
            self.ledger.final_bytes[sha] = candidate.read_bytes()
        else:
            self.ledger.full += 1
            self.ledger.history.append(row)
        return self._score(row, rows, "", checked)

    def _time_into(self, candidate: Path, label: str, budget: float, target: float, row, rows, final: bool) -> None:
        """Time at one shape, into `row` and `rows`; a search trial's seconds go to the ledger."""
        t0 = time.monotonic()
        rows[label] = self._time(candidate, label, budget, target)
        row[label] = Ratio(rows[label]["ratio"], rows[label]["ci_low"], rows[label]["ci_high"])
        if not final:
            self.ledger.timing_s[label] = self.ledger.timing_s.get(label, 0.0) + time.monotonic() - t0
            self.ledger.timings[label] = self.ledger.timings.get(label, 0) + 1

    def _score(self, row: Row, rows: dict[str, dict], why: str, checked: str) -> Score:
        """The Score of one candidate: the geometric mean (or, for a dropped trial, its estimate
        with the incumbent's ratios at the shapes not timed), and the per-shape rows."""
        incumbent = min(self.ledger.history, key=lambda r: geomean(r, self.weights).value, default=None)
        total = estimate(row, incumbent, self.weights) if why and incumbent else geomean(row, self.weights)
        shown = self.shapes[0].label if self.shapes[0].label in rows else next(iter(rows))
        detail = {
            **rows[shown],  # one shape's timing fields (us per launch, rounds, clock): the first --launch's if timed
            "shape": shown,
            "check": "identical",
            "check_detail": checked,
            "ratio": total.value,
            "ci_low": total.low,
            "ci_high": total.high,
            "verdict": "faster" if total.high < 1.0 else "slower" if total.low > 1.0 else "indistinguishable",
            "shapes": {label: [r.value, r.low, r.high] for label, r in row.items()},
            "shape_us": {label: [rows[label].get("a_us"), rows[label].get("b_us")] for label in rows},
            "raced": why,
            "trial_attrs": {"shape_ratios": {label: [r.value, r.low, r.high] for label, r in row.items()}}
            | ({"raced": why} if why else {}),
        }
        return Score(total.value, total.low, total.high, True, detail)

    def _check(self, candidate: Path, final: bool = False) -> str:
        """Byte check at the first shape, every other shape and the filling launch: what was
        checked, or Rejected with the first difference. A search trial's seconds go to the
        ledger, per shape where the worker says (the first check also draws the input sets and
        runs the original, whose outputs are kept: timing.inputmemo)."""
        from timing.evaluate import check_job, describe_status
        from timing.worker import Job

        more = self._others((self.fill,) if self.fill is not None else ())
        job = Job.of(
            check_job,
            str(self.original),
            str(candidate),
            self.spec,
            sets=TRIAL_SETS,
            more=more,
            timeout_s=120 + 10.0 * (1 + len(more)),
        )
        started = time.monotonic()
        row = describe_status(self.pool.run(job))
        if not final:
            self._count_check(time.monotonic() - started, (self.spec, *more), row)
        if row["status"] != "ok":
            raise Rejected(f"{row['status']}: {row['reason']}")
        if row.get("check") != "identical":
            raise Rejected(f"outputs differ: {row['check_detail']}")
        return row["check_detail"]

    def _count_check(self, seconds: float, launches: tuple, row: dict) -> None:
        """One search trial's byte check in the ledger: its wall seconds, and each launch's
        seconds under its shape's label ('fill' for the filling --check-launch)."""
        led = self.ledger
        led.check_s += seconds
        led.checks += 1
        led.references += int(row.get("check_references") or 0)
        names = {_launch(s.spec): s.label for s in reversed(self.shapes)}
        for spec, took in zip(launches, row.get("check_launch_s") or ()):
            label = names.get(_launch(spec), "fill")
            led.check_shape_s[label] = led.check_shape_s.get(label, 0.0) + took

    def _time(self, candidate: Path, label: str, budget_s: float, target: float) -> dict:
        """Paired timing at one shape: the time job's row, or Rejected."""
        from timing.evaluate import describe_status, time_job
        from timing.worker import Job

        spec = next(s.spec for s in self.shapes if s.label == label)
        job = Job.of(
            time_job,
            str(self.original),
            str(candidate),
            spec,
            timeout_s=budget_s + 120,
            l2=self.l2,
            budget_s=budget_s,
            target_ci_pct=target,
        )
        row = describe_status(self.pool.run(job))
        if row["status"] != "ok":
            raise Rejected(f"timing at {label}: {row['status']}: {row['reason']}")
        return row


def shape_weights(paths: Sequence[Path], weights: Sequence[float]) -> tuple[float, ...]:
    """One weight per --launch (all 1 when none are given); an InputError when they do not match."""
    from reorder.base.errors import InputError

    if not weights:
        return (1.0,) * len(paths)
    if len(weights) != len(paths):
        raise InputError(f"--weights: {len(weights)} weight(s) for {len(paths)} --launch shape(s)")
    if not all(w > 0 and w < float("inf") for w in weights):
        raise InputError(f"--weights: every weight must be a positive number, got {','.join(map(str, weights))}")
    return tuple(weights)


def labels_for(paths: Sequence[Path]) -> tuple[str, ...]:
    """Each launch's label: its file's stem, made unique with its position when two share one."""
    stems = [p.stem for p in paths]
    return tuple(s if stems.count(s) == 1 else f"{s}#{i + 1}" for i, s in enumerate(stems))


def shape_scorer(original: Path, paths: Sequence[Path], weights: Sequence[float], kernel: str, pool, **kw):
    """A ShapeScorer over the launch specs at `paths` (validated against the kernel)."""
    from timing.cli_support import validated_spec

    shapes = [
        Shape(label, validated_spec(path, [original], kernel), w)
        for label, path, w in zip(labels_for(paths), paths, shape_weights(paths, weights))
    ]
    return ShapeScorer(original, shapes, pool, **kw)


__all__ = ["Ledger", "Shape", "ShapeScorer", "labels_for", "shape_scorer", "shape_weights"]
