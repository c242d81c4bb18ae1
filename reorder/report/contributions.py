"""The contribution table of an optimize report: each move of the output, what it pays.

Backward elimination (reorder.optimize._prune) scores the winner without each of its moves
and drops, one per round, a move whose removal scores no worse. What the table says must be
true of the binary that was written, so each row carries a status:

- `pays`: measured on the output itself; without the move the kernel scores worse (by how
  much, and for measured scores whether the two intervals overlap, i.e. within noise);
- `pruned`: the move is not in the output (the table was scored before it was dropped);
- `kept`: the move is in the output although the table cannot show that it pays, and why
  (its removal not scored before --time, the rounds ran out, it was scored only before
  another move was pruned).
"""

from __future__ import annotations

PAYS, PRUNED, KEPT = "pays", "pruned", "kept"


def _paying(row: dict) -> str:
    """The status of a row scored on the output itself."""
    ratio = row.get("ratio")
    if ratio is None:
        return f"{KEPT}: its removal has no score ({row['without']})"
    if ratio > 1.0:
        noise = " (within noise: the intervals overlap)" if row.get("overlaps") else ""
        return f"{PAYS}: without it {100 * (ratio - 1):+.3f}%{noise}"
    return f"{KEPT}: does not pay (without it {100 * (ratio - 1):+.3f}%), not removed: {row.get('stopped', '')}"


def settle(rows: list[dict], on_output: bool, pruned: str, stopped: str) -> list[dict]:
    """`rows` (one per move, scored on one winner) with a status each. `on_output`: they were
    scored on the output itself; else before `pruned` was dropped from it. `stopped`: why
    the elimination ended (for a move kept that does not pay)."""
    out = []
    for row in rows:
        if row.get("ratio") is None and str(row.get("without", "")).startswith("not scored"):
            status = f"{KEPT}: its removal was not scored ({row['without']})"
        elif on_output:
            status = _paying({**row, "stopped": stopped})
        elif row["move"] == pruned:
            status = f"{PRUNED}: not in the output"
        else:
            status = f"{KEPT}: scored before {pruned} was pruned, not again after ({stopped})"
        out.append({**row, "status": status})
    return out


def overlaps(a, b) -> bool:
    """Whether two measured scores' intervals overlap (predicted scores are exact: never)."""
    return bool(a.measured and b.measured and a.low <= b.high and b.low <= a.high)


def none_line(best_moves: str, note: str) -> str:
    """What the section says when there is no table."""
    if best_moves in ("", "(none)"):
        return "(no moves: the output is the input's copy)"
    return f"({note})" if note else "(not measured)"
