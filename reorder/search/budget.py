"""How one `--time T` is shared by the phases of an optimize run (docs/time_budget.md).

The phases run in order: listing the move space, the search, the finalists' longer timing,
the winner's re-check at every launch, pruning the winner's moves, and closing (the
verifier's walk of the winner, the write, the report). Each phase after the search has a
reserve at the end of T, sized from what the run has measured so far; the search gets what
the reserves leave, and a phase that finishes early leaves its time to the next. Nothing is
planned into the grace past T (reorder.base.deadline.grace_s): it is the margin for cutting
what overran and exiting.

Every figure here is a pure function of measured costs, so the rule is tested without
running anything.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

LIST_SHARE = 0.25  # listing the move space may take this share of T at most
FINAL_SHARE = 0.25  # the finalists' timing may take this share of T at most
MIN_FINAL_S = 1.0  # a finalist timed for less than this says nothing: fewer finalists instead
CLOSE_MIN_S = 2.0  # closing (verify, write, report) is never planned below this
CHECK_DEFAULT_S = 5.0  # one re-check, before any byte check has been timed
EXIT_MARGIN_S = 3.0  # closing is cut this long before the hard end: the exit itself
TRIAL_SETS = 3  # input sets in every trial's byte check (timing.evaluate.check_job)
MAX_SLOWDOWN = 5.0  # the closing floor stretches at most this much on a loaded machine


def slowdown(wall_s: float, cpu_s: float) -> float:
    """Wall over CPU seconds of a stretch that was busy on the CPU (a run's start: imports,
    decoding, listing), at least 1: how much longer than its CPU time a step takes here now."""
    return max(1.0, wall_s / cpu_s) if cpu_s > 0 else 1.0


@dataclass(frozen=True)
class Costs:
    """What the run has measured so far (seconds of wall time; None: not measured yet)."""

    round_s: float | None = None  # the longest search round (its trials built and scored)
    build_s: float | None = None  # the longest candidate build (it includes the verifier's walk)
    score_s: float | None = None  # the longest trial scoring (GPU: byte check, then timing)
    timing_s: float = 0.0  # of score_s, the paired timing's own budget (--candidate-budget)
    slowdown: float = 1.0  # wall seconds per CPU second of this run's start: a loaded machine's factor

    def seen_round(self, seconds: float) -> Costs:
        return replace(self, round_s=max(seconds, self.round_s or 0.0))

    def seen_build(self, seconds: float) -> Costs:
        return replace(self, build_s=max(seconds, self.build_s or 0.0))

    def seen_score(self, seconds: float) -> Costs:
        return replace(self, score_s=max(seconds, self.score_s or 0.0))

    @property
    def check_s(self) -> float | None:
        """One trial's byte check and module loads: its scoring less the timing budget."""
        return None if self.score_s is None else max(0.0, self.score_s - self.timing_s)


@dataclass(frozen=True)
class Rule:
    """The fixed inputs of the rule: the user's T and what each later phase will do."""

    limit_s: float  # --time
    gpu: bool  # finalists are timed and re-checked only on a GPU
    finalists: int  # --finalists wanted (reorder.optimize.FINALISTS)
    final_budget_s: float  # --final-budget: paired timing per finalist
    recheck_sets: int  # --recheck-sets
    launches: int  # launches in the re-check: --launch and each --check-launch
    trial_launches: int  # launches in every trial's check: --launch and the filling one


def close_s(costs: Costs) -> float:
    """The closing reserve: the verifier's walk of the winner, its SASS diff, the write and
    the report; a candidate build walks the verifier over a candidate too, so the longest
    build bounds it. On a machine shared with other work its floor stretches by the
    slowdown the run's start measured."""
    return max(CLOSE_MIN_S * min(MAX_SLOWDOWN, max(1.0, costs.slowdown)), costs.build_s or 0.0)


def recheck_s(rule: Rule, costs: Costs) -> float:
    """One finalist's re-check: a trial's byte check scaled from its sets and launches to the
    re-check's (GPU only)."""
    if not rule.gpu:
        return 0.0
    if costs.check_s is None:
        return CHECK_DEFAULT_S
    scale = (rule.recheck_sets * rule.launches) / (TRIAL_SETS * max(1, rule.trial_launches))
    return max(1.0, costs.check_s * scale)


def finalist_s(rule: Rule, costs: Costs) -> float:
    """One finalist's scoring: on a GPU its check and the (possibly shortened) timing; on the
    static model one trial's scoring."""
    if not rule.gpu:
        return costs.score_s or 0.0
    return (costs.check_s if costs.check_s is not None else 1.0) + final_budget(rule, costs)[1]


def final_budget(rule: Rule, costs: Costs) -> tuple[int, float]:
    """(finalists, seconds of timing each) within FINAL_SHARE of T: the timing is shortened
    first, down to MIN_FINAL_S, then the finalists are fewer (at least one)."""
    if not rule.gpu:
        return rule.finalists, 0.0
    share = FINAL_SHARE * rule.limit_s
    overhead = costs.check_s if costs.check_s is not None else 1.0
    floor = min(MIN_FINAL_S, rule.final_budget_s)
    per = min(rule.final_budget_s, share / max(1, rule.finalists) - overhead)
    if per >= floor:
        return rule.finalists, per
    return min(rule.finalists, max(1, int(share // (floor + overhead)))), floor


@dataclass(frozen=True)
class Ends:
    """Where each phase must be done, on the time.monotonic clock."""

    listing: float
    search: float
    finalists: float
    recheck: float
    close: float  # start + T: the planned work is done
    hard: float  # start + T + grace: the exit

    def closing_cut(self) -> float:
        """Closing is cut here, leaving EXIT_MARGIN_S of the grace for the exit."""
        return max(self.close, self.hard - EXIT_MARGIN_S)


def reserved_finalists(rule: Rule, costs: Costs) -> int:
    """Finalists the search leaves time for. Before any trial is scored, one: a run with no
    scored trial has no finalists to time, and its first trial is what the rest of T is for
    (a 5,648-instruction kernel under `--time 60s` cut its first round at 39 s with 20 s
    reserved and unused). Once a trial is scored the search's end moves back to the full
    reserve, and a round that no longer fits is not started."""
    count, _ = final_budget(rule, costs)
    return count if costs.score_s is not None else min(count, 1)


def ends(rule: Rule, costs: Costs, start: float, hard: float) -> Ends:
    """The phase ends for a run that started at `start`, under what it has measured."""
    close = start + rule.limit_s
    recheck = close - close_s(costs)
    finalists = recheck - recheck_s(rule, costs)
    search = finalists - reserved_finalists(rule, costs) * finalist_s(rule, costs)
    return Ends(start + LIST_SHARE * rule.limit_s, search, finalists, recheck, close, hard)


def fits(now: float, need_s: float | None, end: float) -> bool:
    """Whether a step that takes `need_s` (None: not measured yet, so try it) can start now
    and finish by `end`: a trial that cannot finish in the time left is not started."""
    if now >= end:
        return False
    return need_s is None or now + need_s <= end
