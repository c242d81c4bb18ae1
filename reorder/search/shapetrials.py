"""What a multi-shape study's trials say per shape: each shape's best trial, and the finalists.

Each trial scored by the ShapeScorer keeps its per-shape ratios in its `shape_ratios` user
attribute (a trial the race dropped: its first shape only), so this reads the same from a
resumed study or from the trials of several workers.
"""

from __future__ import annotations

from dataclasses import dataclass

from reorder.build.space import Choice, SearchSpace
from reorder.search.shapes import Ratio
from reorder.search.study import ORIGINAL, choice_of, ranked_choices


@dataclass(frozen=True, slots=True)
class ShapeBest:
    """The best ratio any trial reached at one shape, and that trial."""

    label: str
    ratio: Ratio
    trial: int
    moves: str
    sha256: str


def _scored(study):
    """Completed trials that were checked and scored here at every shape (not one the race dropped
    before its check, not a duplicate's copied value, not the original)."""
    import optuna

    for t in study.trials:
        if t.state != optuna.trial.TrialState.COMPLETE or t.user_attrs.get("pruned") == ORIGINAL:
            continue
        if "shape_ratios" in t.user_attrs and "raced" not in t.user_attrs:  # dropped by the race: never checked
            yield t


def shape_bests(study, labels: tuple[str, ...]) -> dict[str, ShapeBest]:
    """label -> the trial with the lowest ratio at that shape (shapes no trial was timed at are absent)."""
    out: dict[str, ShapeBest] = {}
    for t in _scored(study):
        for label, (value, low, high) in t.user_attrs["shape_ratios"].items():
            if label in labels and (label not in out or value < out[label].ratio.value):
                moves, sha = t.user_attrs.get("moves", ""), t.user_attrs.get("sha256", "")
                out[label] = ShapeBest(label, Ratio(value, low, high), t.number, moves, sha)
    return out


def finalist_choices(study, space: SearchSpace, count: int, labels: tuple[str, ...]) -> list[tuple[Choice, float]]:
    """The `count` best trials by the objective, then each shape's best trial not among them
    (distinct binaries): a shape's own best is what a search at that shape alone would keep,
    so it is timed again at every shape beside the overall best, and the winner is the best of
    all of them by the objective measured again."""
    ranked = ranked_choices(study, space, count)
    seen = {c for c, _ in ranked}
    trials = {t.number: t for t in study.trials}
    for best in sorted(shape_bests(study, labels).values(), key=lambda b: labels.index(b.label)):
        t = trials[best.trial]
        choice = choice_of(t.params, space)
        if choice not in seen:
            seen.add(choice)
            ranked.append((choice, t.value))
    return ranked


__all__ = ["ShapeBest", "finalist_choices", "shape_bests"]
