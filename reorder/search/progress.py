"""The progress lines of an optimize run: where it is, what it has, how long it has left.

One line per event, on stderr: the phase, the trials scored, pruned and failed, the best
candidate so far with its CI and whether it was measured or predicted, and the seconds
left, both of the phase and of --time. A user watching a run (or a log of one that was
killed) sees from the last line what the run had and what it was doing.
"""

from __future__ import annotations

import time

WIDTH = 30


def best_so_far(study) -> str:
    """'best 0.9412 [0.9390, 0.9433] measured' or 'no candidate yet'."""
    import optuna

    complete = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE and "pruned" not in t.user_attrs]
    if not complete:
        return "no candidate scored yet"
    best = min(complete, key=lambda t: t.value)
    if not best.user_attrs.get("measured"):
        return f"best {best.value:.4f} PREDICTED"  # the static model's figure has no interval
    low = best.user_attrs.get("ci_low", best.value)
    high = best.user_attrs.get("ci_high", best.value)
    return f"best {best.value:.4f} [{low:.4f}, {high:.4f}] measured"


def counts(study) -> tuple[int, int, int]:
    """(scored, pruned, failed) trials: scored and failed as the budget counts them
    (reorder.search.study.finished_trials), a failure by its stated reason; pruned trials
    were settled before scoring."""
    import optuna

    state = optuna.trial.TrialState
    scored = sum(t.state == state.COMPLETE and "pruned" not in t.user_attrs for t in study.trials)
    pruned = sum("pruned" in t.user_attrs for t in study.trials)
    failed = sum(t.state == state.FAIL and "failure" in t.user_attrs for t in study.trials)
    return scored, pruned, failed


def left_text(end: float, limit_end: float | None = None) -> str:
    """'12 s left in the phase, 40 s of --time' (or only the first)."""
    now = time.monotonic()
    text = f"{max(0.0, end - now):.0f} s left in the phase"
    if limit_end is not None:
        text += f", {max(0.0, limit_end - now):.0f} s of --time"
    return text


def progress_line(
    study, done: int, budget: int, end: float, limit_end: float | None = None, phase: str = "search"
) -> str:
    """One search progress line: bar (`done` of `budget` trials), counts, the best so far and
    the time left."""
    bar = "#" * int(WIDTH * min(done, budget) / max(budget, 1))
    scored, pruned, failed = counts(study)
    return (
        f"{phase}: [{bar:<{WIDTH}}] {done}/{budget} trials: {scored} scored, {pruned} pruned, {failed} failed; "
        f"{best_so_far(study)}; {left_text(end, limit_end)}"
    )


def phase_line(phase: str, what: str, end: float, limit_end: float | None = None) -> str:
    """A line of a phase after the search: 'finalists: 2 of 3 scored ...; 9 s left ...'."""
    return f"{phase}: {what}; {left_text(end, limit_end)}"
