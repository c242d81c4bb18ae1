"""One binary per group of launch shapes, when the best binaries at different shapes differ
beyond their CIs; a dispatch manifest that says which cubin serves which launch, and why.

The candidates are the finalists of a multi-shape run, each timed again at every shape
(reorder.search.shapescorer), plus the original itself (ratio 1 everywhere: where every
candidate is slower, the original serves). At each shape the *acceptable* binaries are those
whose CI reaches the best's (within what noise explains); the shapes, in the order of the
dispatch key (reorder.report.shapekey), are cut into the fewest runs that each share an
acceptable binary (greedy, which is optimal for runs); a run takes the single binary (the
multi-shape winner) where it is acceptable, else the acceptable one with the best geometric
mean over the run's shapes. One run is "no real gain": a single binary,
and the manifest says so. Every binary the manifest names passed the re-check at every
shape and every --check-launch before it is written.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from reorder.base.files import write_atomic
from reorder.report.shapekey import key_of, split_ranges
from reorder.search.shapes import Ratio, Row, geomean

ORIGINAL = "original"
UNIT = Ratio(1.0, 1.0, 1.0)


@dataclass(frozen=True, slots=True)
class Binary:
    """A candidate binary with its final per-shape ratios (the original: 1 at every shape)."""

    sha256: str
    moves: str
    row: Row


@dataclass(frozen=True, slots=True)
class Group:
    """Consecutive shapes (in key order) served by one binary."""

    labels: tuple[str, ...]
    binary: Binary


def original_binary(sha256: str, labels: Sequence[str]) -> Binary:
    return Binary(sha256, ORIGINAL, dict.fromkeys(labels, UNIT))


def best_at(label: str, binaries: Sequence[Binary]) -> Binary:
    """The binary with the lowest ratio at one shape (the earlier one on a tie)."""
    return min(binaries, key=lambda b: b.row[label].value)


def acceptable(label: str, binaries: Sequence[Binary]) -> set[str]:
    """The binaries (by sha256) whose CI at `label` reaches the best's CI there."""
    best = best_at(label, binaries).row[label]
    return {b.sha256 for b in binaries if b.row[label].low <= best.high}


def group_shapes(order: Sequence[str], binaries: Sequence[Binary], weights: Mapping[str, float]) -> list[Group]:
    """The fewest runs of consecutive shapes of `order` that each share an acceptable binary;
    each run served by the first of `binaries` (the single binary) where it is acceptable, else by
    the acceptable one with the best geometric mean over the run's shapes."""
    runs: list[tuple[list[str], set[str]]] = []
    for label in order:
        here = acceptable(label, binaries)
        if runs and runs[-1][1] & here:
            runs[-1][0].append(label)
            runs[-1] = (runs[-1][0], runs[-1][1] & here)
        else:
            runs.append(([label], here))
    groups = []
    for labels, shas in runs:
        pool = [b for b in binaries if b.sha256 in shas]
        if binaries[0] in pool:  # the single binary, wherever it is as good as the best: fewer binaries
            pick = binaries[0]
        else:
            pick = min(pool, key=lambda b: (geomean({s: b.row[s] for s in labels}, weights).value, binaries.index(b)))
        groups.append(Group(tuple(labels), pick))
    return groups


def settle_groups(
    order: Sequence[str],
    binaries: list[Binary],
    weights: Mapping[str, float],
    checked: Callable[[Binary], str],
) -> tuple[list[Group], list[str]]:
    """Groups whose every binary passed its re-check: `checked(binary)` says "" when it did, or
    why not; a binary that fails is removed and the shapes grouped again. (groups, notes)."""
    notes: list[str] = []
    while True:
        groups = group_shapes(order, binaries, weights)
        failed = [(g.binary, why) for g in groups if (why := checked(g.binary))]
        if not failed:
            return groups, notes
        for binary, why in failed:
            notes.append(f"{binary.moves}: left out of the per-shape binaries: {why}")
            binaries.remove(binary)


def manifest(
    kernel: str,
    original: Path,
    key: tuple[str, ...],
    groups: Sequence[Group],
    specs: Mapping[str, object],
    everyone: Sequence[Binary],
    winner: Binary,
    files: Mapping[str, str],
    rechecks: Mapping[str, str],
) -> dict:
    """The dispatch manifest (see reorder/report/dispatch.py for how it is read)."""
    ranges = split_ranges([[key_of(specs[s], key)[0] for s in g.labels] for g in groups]) if len(key) == 1 else None
    gain = len(groups) > 1
    out_groups = []
    for k, g in enumerate(groups):
        shapes = []
        for label in g.labels:
            best = best_at(label, everyone)
            shapes.append(
                {
                    "launch": label,
                    "key": list(key_of(specs[label], key)),
                    "ratio": _triple(g.binary.row[label]),
                    "best_here": {"ratio": _triple(best.row[label]), "moves": best.moves},
                    "single_binary": _triple(winner.row[label]),
                }
            )
        out_groups.append(
            {
                "range": ranges[k] if ranges else None,
                "cubin": files[g.binary.sha256],
                "sha256": g.binary.sha256,
                "moves": g.binary.moves,
                "recheck": rechecks.get(g.binary.sha256, "the original's own bytes"),
                "shapes": shapes,
            }
        )
    return {
        "format": "reorder-dispatch/1",
        "kernel": kernel,
        "original": str(original),
        "key": list(key),
        "gain": gain,
        "note": _note(groups, winner),
        "ratio": "time(binary)/time(original), paired, 95% CI; best_here: the best any finalist reached there",
        "groups": out_groups,
    }


def _note(groups: Sequence[Group], winner: Binary) -> str:
    if len(groups) == 1:
        return (
            f"no real gain from per-shape binaries: {groups[0].binary.moves} is within its CI of each shape's "
            "best at every shape, so one binary serves every launch"
        )
    return (
        f"{len(groups)} groups: at some shape the single binary ({winner.moves}) is behind that shape's best "
        "beyond both CIs"
    )


def _triple(r: Ratio) -> list[float]:
    return [r.value, r.low, r.high]


def write_dispatch(folder: Path, doc: dict, blobs: Mapping[str, bytes]) -> Path:
    """manifest.json, the group cubins (name -> bytes) and dispatch.py in `folder`; each file
    whole or absent."""
    from reorder.report import dispatch

    folder.mkdir(parents=True, exist_ok=True)
    for name, data in blobs.items():
        write_atomic(folder / name, data)
    write_atomic(folder / "dispatch.py", Path(dispatch.__file__).read_bytes())
    return write_atomic(folder / "manifest.json", (json.dumps(doc, indent=1) + "\n").encode())


__all__ = [
    "Binary",
    "Group",
    "acceptable",
    "best_at",
    "group_shapes",
    "manifest",
    "original_binary",
    "settle_groups",
    "write_dispatch",
]
