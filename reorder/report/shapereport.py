"""The multi-shape part of an optimize report: the per-shape table, each shape's own best at
every shape, what the search spent where, and (with --per-shape) the per-shape binaries and
their dispatch manifest (reorder.report.pershape). Also shapes.json, every figure of it.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from reorder.base.files import write_atomic
from reorder.report.pershape import Binary, best_at, manifest, original_binary, settle_groups, write_dispatch
from reorder.report.shapekey import dispatch_key, key_of
from reorder.search.scoring import Rejected
from reorder.search.shapes import Ratio, geomean
from reorder.search.shapetrials import shape_bests


@dataclass(frozen=True)
class RunFacts:
    """What the multi-shape conclusion needs from the optimize run."""

    kernel: str
    original: Path
    output: Path
    check_launches: tuple  # LaunchSpecs of --check-launch
    recheck_sets: int
    per_shape: bool
    first_set: int  # where re-checks of per-shape binaries draw their input sets
    until: float = float("inf")  # time.monotonic by which a per-shape binary's re-check must be done (--time)
    recheck_s: float = 0.0  # what one re-check is expected to take


def conclude_shapes(scorer, study, report, folder: Path, facts: RunFacts) -> None:
    """Add the multi-shape sections to `report`, write shapes.json and, with --per-shape, the
    dispatch folder. On the static model (no GPU) only a note: no shape is measured."""
    from reorder.search.shapescorer import ShapeScorer

    if not isinstance(scorer, ShapeScorer):
        report.notes.append(
            "several --launch shapes on the static model: its prediction does not depend on the launch; "
            "the per-shape table and --per-shape need a GPU"
        )
        return
    labels = tuple(s.label for s in scorer.shapes)
    binaries, winner, original = _binaries(scorer, study, facts, labels)
    search = shape_bests(study, labels)
    report.sections += [_shape_table(scorer, binaries, winner, search), _own_best_table(scorer, binaries, winner)]
    report.sections.append(_cost_section(scorer, study))
    doc = None
    if facts.per_shape:
        doc = _per_shape(scorer, folder, facts, (binaries, winner, original), report)
    data = {
        "weights": scorer.weights,
        "winner": winner.sha256,
        "finals": {b.sha256: {"moves": b.moves, "ratios": {s: list(_t(b.row[s])) for s in labels}} for b in binaries},
        "search_best": {s: {"ratio": list(_t(v.ratio)), "trial": v.trial, "moves": v.moves} for s, v in search.items()},
        "ledger": _ledger(scorer),
        "dispatch": doc,
    }
    write_atomic(folder / "shapes.json", (json.dumps(data, indent=1) + "\n").encode())


def _t(r: Ratio) -> tuple[float, float, float]:
    return (r.value, r.low, r.high)


def _binaries(scorer, study, facts: RunFacts, labels: tuple[str, ...]) -> tuple[list[Binary], Binary, Binary]:
    """Every finalist timed at every shape and the original, the written one first; the
    written one (the original when the output is the input's copy); the original."""
    moves: dict[str, str] = {}
    for t in study.trials:  # the trial that scored a binary names it, not a later duplicate of it
        if "sha256" in t.user_attrs and "pruned" not in t.user_attrs:
            moves.setdefault(t.user_attrs["sha256"], t.user_attrs.get("moves", ""))
    original = original_binary(hashlib.sha256(facts.original.read_bytes()).hexdigest(), labels)
    out_sha = hashlib.sha256(facts.output.read_bytes()).hexdigest() if facts.output.is_file() else ""
    found = [
        Binary(sha, moves.get(sha, "the winner after pruning"), row)
        for sha, row in scorer.ledger.finals.items()
        if set(labels) <= set(row) and sha != original.sha256
    ]
    found.sort(key=lambda b: b.sha256 != out_sha)
    winner = found[0] if found and found[0].sha256 == out_sha else original
    if winner is original:
        return [original, *found], original, original
    return [*found, original], winner, original


def _shape_table(scorer, binaries: list[Binary], winner: Binary, search: dict) -> str:
    rows = [
        f"## Launch shapes: the objective is the weighted geometric mean over {len(scorer.shapes)} shapes",
        "",
        f"The written binary: {winner.moves} (geometric mean {geomean(winner.row, scorer.weights).line()}). "
        "Ratios are time(binary)/time(original), paired, 95% CI, timed again at the finalists' budget; "
        "'search' is the best any trial reached there at the trials' budget (biased low: the best of many).",
        "",
        "| shape | weight | written binary | best finalist here | best in the search (trial) | trials timed here |",
        "|---|---|---|---|---|---|",
    ]
    for s in scorer.shapes:
        best = best_at(s.label, binaries)
        found = search.get(s.label)
        seen = f"{found.ratio.line()} (#{found.trial})" if found else "-"
        rows.append(
            f"| {s.label} | {scorer.weights[s.label]:g} | {winner.row[s.label].line()} | "
            f"{best.row[s.label].line()} {best.moves} | {seen} | {scorer.ledger.timings.get(s.label, 0)} |"
        )
    return "\n".join(rows)


def _own_best_table(scorer, binaries: list[Binary], winner: Binary) -> str:
    """Each shape's own best applied to every shape, beside the written binary."""
    labels = [s.label for s in scorer.shapes]
    own: list[tuple[str, Binary]] = []
    for label in labels:
        best = best_at(label, binaries)
        for k, (names, b) in enumerate(own):
            if b is best:
                own[k] = (f"{names}, {label}", b)
                break
        else:
            own.append((label, best))
    head = "| binary | best at | " + " | ".join(labels) + " | geometric mean |"
    rows = [
        "## Each shape's own best at every shape (the single-shape winners applied to all shapes)",
        "",
        head,
        "|" + "---|" * (len(labels) + 3),
    ]
    for names, b in [("(written)", winner), *own]:
        cells = " | ".join(f"{b.row[s].value:.4f}" for s in labels)
        rows.append(f"| {b.moves} | {names} | {cells} | {geomean(b.row, scorer.weights).line()} |")
    return "\n".join(rows)


def _ledger(scorer) -> dict:
    led = scorer.ledger
    return {
        "checks": led.checks,
        "check_s": led.check_s,
        "check_shape_s": led.check_shape_s,
        "original_runs": led.references,
        "dropped_before_check": led.unchecked,
        "timings": led.timings,
        "timing_s": led.timing_s,
        "dropped": led.dropped,
        "timed_at_every_shape": led.full,
        "final_s": led.final_s,
    }


def _cost_section(scorer, study) -> str:
    """What the search spent where, and what checking and timing every trial at every shape
    would have cost."""
    led = scorer.ledger
    trials = led.checks + led.unchecked
    spent = sum(led.timing_s.values())
    every = sum(led.mean_timing_s(s.label) * trials for s in scorer.shapes)
    per_check = led.check_s / max(1, led.checks)
    dropped = ", ".join(f"{n} after {s}" for s, n in led.dropped.items()) or "none"
    rows = [
        "## What the search spent where",
        "",
        f"- search trials scored: {trials}; byte-checked at all {len(scorer.shapes)} shapes (and the filling "
        f"--check-launch when given): {led.checks}, {led.check_s:.1f} s; the original ran {led.references} time(s) "
        "in them (its outputs are kept per input set and shape after their first run)",
        f"- dropped by the race after their first shape, before any byte check: {dropped}",
        f"- timing: {spent:.1f} s; timed at every shape: {led.full}",
        f"- checking and timing every trial at every shape would have cost about {every + per_check * trials:.1f} s "
        f"(each shape's mean timing and the mean check, x {trials} trials) against {spent + led.check_s:.1f} s",
        f"- finalists, removals and re-checks, at every shape: {led.final_s:.1f} s",
        "",
        "| shape | trials timed | timing seconds | mean timing per trial | byte-check seconds |",
        "|---|---|---|---|---|",
    ]
    for s in scorer.shapes:
        n = led.timings.get(s.label, 0)
        rows.append(
            f"| {s.label} | {n} | {led.timing_s.get(s.label, 0.0):.1f} | {led.mean_timing_s(s.label):.2f} | "
            f"{led.check_shape_s.get(s.label, 0.0):.1f} |"
        )
    if "fill" in led.check_shape_s:
        rows.append(f"| fill (--check-launch) | - | - | - | {led.check_shape_s['fill']:.1f} |")
    return "\n".join(rows)


def _per_shape(scorer, folder: Path, facts: RunFacts, held: tuple[list[Binary], Binary, Binary], report) -> dict:
    """Group the shapes, re-check every binary a group needs, write the dispatch folder."""
    binaries, winner, original = held
    specs = {s.label: s.spec for s in scorer.shapes}
    key = dispatch_key([s.spec for s in scorer.shapes])
    order = sorted(specs, key=lambda label: (key_of(specs[label], key), list(specs).index(label)))
    pool = [b for b in binaries if b is winner or not scorer.ledger.rechecked.get(b.sha256, "").startswith("FAILED")]

    def checked(b: Binary) -> str:
        if b is original:
            return ""
        held = scorer.ledger.rechecked.get(b.sha256)
        if held is None and time.monotonic() + facts.recheck_s > facts.until:
            return "its re-check did not fit in --time"
        if held is None:
            held = _recheck(scorer, b, facts)
        return held.removeprefix("FAILED: ") if held.startswith("FAILED") else ""

    groups, notes = settle_groups(order, pool, scorer.weights, checked)
    report.notes += notes
    stem = facts.kernel.replace("/", "_")[:80]
    files: dict[str, str] = {}
    blobs: dict[str, bytes] = {}
    for g in groups:  # one file per distinct binary (two ranges may share one)
        if g.binary.sha256 in files:
            continue
        name = f"{stem}.{len(files)}.cubin" if len(groups) > 1 else f"{stem}.cubin"
        files[g.binary.sha256] = name
        blobs[name] = (
            facts.original.read_bytes() if g.binary is original else scorer.ledger.final_bytes[g.binary.sha256]
        )
    doc = manifest(facts.kernel, facts.original, key, groups, specs, binaries, winner, files, scorer.ledger.rechecked)
    where = write_dispatch(folder / "dispatch", doc, blobs)
    report.sections.append(_groups_section(doc, where))
    report.notes.append(f"per-shape binaries: {doc['note']}; manifest {where.relative_to(folder)}")
    return doc


def _recheck(scorer, b: Binary, facts: RunFacts) -> str:
    """Re-check one per-shape binary at every shape and --check-launch (recorded in the ledger)."""
    with tempfile.TemporaryDirectory(prefix="reorder-pershape-") as tmp:
        path = Path(tmp) / "group.cubin"
        path.write_bytes(scorer.ledger.final_bytes[b.sha256])
        try:
            return scorer.recheck(path, facts.check_launches, facts.recheck_sets, facts.first_set)
        except Rejected as exc:
            return f"FAILED: {exc}"


def _groups_section(doc: dict, where: Path) -> str:
    rows = [
        "## Per-shape binaries (--per-shape)",
        "",
        f"{doc['note']}. Dispatch on {', '.join(doc['key'])}; manifest `dispatch/{where.name}`, "
        "loader `dispatch/dispatch.py`.",
        "",
        "| range | cubin | moves | shapes: ratio (best finalist there) |",
        "|---|---|---|---|",
    ]
    for g in doc["groups"]:
        shown = "; ".join(
            f"{s['launch']} {s['ratio'][0]:.4f} [{s['ratio'][1]:.4f}, {s['ratio'][2]:.4f}] "
            f"({s['best_here']['ratio'][0]:.4f})"
            for s in g["shapes"]
        )
        bounds = _bounds(doc["key"][0], g["range"]) if g["range"] is not None else "the nearest shape"
        rows.append(f"| {bounds} | {g['cubin']} | {g['moves']} | {shown} |")
    return "\n".join(rows)


def _bounds(key: str, bounds: list) -> str:
    low, high = bounds
    if low is None and high is None:
        return "every launch"
    if low is None:
        return f"{key} <= {high:g}"
    return f"{key} >= {low:g}" if high is None else f"{low:g} <= {key} <= {high:g}"


__all__ = ["RunFacts", "conclude_shapes"]
