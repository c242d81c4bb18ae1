"""The line each command ends with: what it did, in one line a script can take as the result.

A command that writes a file ends with `wrote PATH: ...` saying what is in it; one that
judges ends with its verdict (verify: `verdict: ...`; check: `identical on N input sets` or
`MISMATCH: ...`; time: the ratio with its 95% CI); one that lists (disasm, diff) ends its
listing on stdout untouched, for pipes and `--json`, and says on stderr what it listed.
optimize's last line is its `result:` line (reorder.optimize).
"""

from __future__ import annotations

import sys


def listed(command: str, what: str) -> None:
    """A listing command's closing line, on stderr (stdout stays the listing alone)."""
    print(f"reorder {command}: {what}", file=sys.stderr)


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' * (n != 1)}"


def outcome_line(path: str, outcome) -> str:
    """What a SASS pass (reorder.build.pipeline.Outcome) wrote, in one line."""
    from reorder.analysis.costmodel import stall_cycles

    kernel = outcome.after.kernel.name
    if not outcome.applied:
        return f"wrote {path}: the input's bytes unchanged ({kernel}: no step applied)"
    removed = stall_cycles(outcome.before.instructions) - stall_cycles(outcome.after.instructions)
    return (
        f"wrote {path}: {kernel}: {plural(len(outcome.applied), 'step')} applied, "
        f"{plural(outcome.moved, 'instruction')} moved, {plural(removed, 'stall cycle')} removed; "
        "every step verified legal"
    )
