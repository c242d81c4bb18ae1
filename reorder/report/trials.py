"""trials.csv, and the report's trial counts read from the same rows.

Optuna's dataframe names its columns after its own storage (`number`, `value`,
`params_sc0`, `user_attrs_moves`, a `duration` timedelta); trials.csv names them for the
reader: `trial`, `ratio` (time(candidate)/time(original): measured, or predicted by the
static model, as the `measured` column says), `state`, `duration_s`, the search's decisions
as `param:NAME`, and what each trial recorded under its own name (`moves`, `failure`,
`pruned`, `ci_low`, ...). The report's trial line counts these rows by their `state`, so the
two can never disagree (a study stopped at its budget or --time can hold trials enqueued
but never run: WAITING, not "trials").
"""

from __future__ import annotations

from collections import Counter

# what a state means, for the report's line (Optuna's TrialState names, as trials.csv writes them)
STATE_WORDS = {
    "COMPLETE": "with a score",
    "PRUNED": "unbuildable or refused before scoring",
    "FAIL": "failed",
    "WAITING": "enqueued, never run (the search ended first)",
    "RUNNING": "still running when the search ended",
}
_RENAMED = {"number": "trial", "value": "ratio", "state": "state"}


def column_name(optuna_name: str) -> str:
    """The trials.csv name of one of Optuna's dataframe columns."""
    if optuna_name in _RENAMED:
        return _RENAMED[optuna_name]
    if optuna_name.startswith("params_"):
        return "param:" + optuna_name.removeprefix("params_")
    if optuna_name.startswith("user_attrs_"):
        return optuna_name.removeprefix("user_attrs_")
    return optuna_name


def trials_frame(study, failure_class):
    """Every trial of the study as trials.csv holds it (module docstring); `failure_class`
    adds failure_class and pruned_class beside the reasons."""
    frame = study.trials_dataframe(attrs=("number", "value", "state", "params", "user_attrs", "duration"))
    if "duration" in frame:
        import pandas as pd

        frame["duration"] = pd.to_timedelta(frame["duration"]).dt.total_seconds()
        frame = frame.rename(columns={"duration": "duration_s"})
    frame = frame.rename(columns={c: column_name(c) for c in frame.columns})
    for column, named in (("failure", "failure_class"), ("pruned", "pruned_class")):
        if column in frame:
            frame[named] = [failure_class(r) if isinstance(r, str) else "" for r in frame[column]]
    return frame


def state_counts(frame) -> dict[str, int]:
    """trials.csv's rows by their `state` (the very rows written, so the report counts them)."""
    if "state" not in frame:
        return {"(no state)": len(frame)} if len(frame) else {}
    return dict(Counter(str(state) for state in frame["state"]))


def trials_line(counts: dict[str, int]) -> str:
    """'- trials: N rows in trials.csv: a scored, b failed, ...' in a fixed order."""
    total = sum(counts.values())
    order = [*STATE_WORDS, *sorted(set(counts) - set(STATE_WORDS))]
    parts = [f"{counts[s]} {STATE_WORDS.get(s, s)} ({s})" for s in order if counts.get(s)]
    return f"- trials: {total} rows in trials.csv: " + ("; ".join(parts) or "none")
