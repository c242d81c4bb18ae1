"""The scheduler places stalls and waits with its own model (reorder.moves.distances) and asks
the verifier only for verdicts: it never steps the verifier's state machine, and its own plan
is what the verdict accepts in nearly every block, so the verdict checks it rather than makes it."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import reorder.moves.schedule as schedule
from reorder.build.pipeline import apply_each, cut_stalls
from reorder.moves.core import Swap

MOVES = Path(schedule.__file__).parent
# free_scoreboards and reuse_verdict: which scoreboards no foreign op holds over a range, and
# whether a reassignment is refused; questions the verifier answers, as block_violations is
VERDICTS = {
    "Violation",
    "block_violations",
    "original_violations",
    "verify_instructions",
    "verify_kernel",
    "free_scoreboards",
    "reuse_verdict",
}


def test_the_moves_take_only_verdicts_from_the_verifier():
    taken = {
        (path.name, alias.name)
        for path in MOVES.glob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and node.module == "legality.verify"
        for alias in node.names
    }
    assert taken and {name for _, name in taken} <= VERDICTS, taken
    assert ("schedule.py", "block_violations") in taken


def test_the_plan_alone_passes_the_verdict_in_nearly_every_block(corpus, monkeypatch):
    """Stall cuts and swaps over a quarter of the corpus: a block is planned, judged, and
    planned again only where the verdict faulted it."""
    seen = Counter()
    verdict = schedule.block_violations

    def counted(block, start, kernel, arch):
        found = verdict(block, start, kernel, arch)
        seen["faulted" if found else "clean"] += 1
        return found

    monkeypatch.setattr(schedule, "block_violations", counted)
    for _, code in corpus[::4]:
        if code.kernel.is_entry:
            cut_stalls(code)
            for move in Swap.instances(code)[:2]:
                apply_each(code, [move])
    blocks = seen["clean"]  # each settled block ends on one clean verdict
    assert blocks > 120, seen
    assert seen["faulted"] <= 0.02 * blocks, seen
