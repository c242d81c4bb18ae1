"""FileCheck-style tests of the scheduler: a SASS listing in, the moved listing out
(tests/snippets/*.sass, format in tests/sass_snippet.py). Each expected listing was checked
by hand against legality/tables/sm_90.toml when written; the verifier must accept it too."""

from __future__ import annotations

from pathlib import Path

import pytest
from sass_snippet import parse_control, parse_line, read_snippet, render, run_move

from legality.verify import verify_instructions

SNIPPETS = sorted((Path(__file__).parent / "snippets").glob("*.sass"))


@pytest.mark.parametrize("path", SNIPPETS, ids=[p.stem for p in SNIPPETS])
def test_the_scheduler_turns_the_listing_in_into_the_listing_out(path: Path) -> None:
    snippet = read_snippet(path)
    assert not verify_instructions(snippet.before, snippet.arch), "the input must be legal to start with"
    out = run_move(snippet)
    assert render(out) == list(snippet.expected)
    assert not verify_instructions(out, snippet.arch)


def test_there_are_snippets_for_each_kind_of_move() -> None:
    kinds = {read_snippet(p).move[0] for p in SNIPPETS}
    assert kinds == {"stall_cut", "swap", "order"}


def test_a_distance_short_for_two_producers_grows_the_stall_by_the_larger_shortfall() -> None:
    """Both producers' distances are counted to the same issue cycle: 4 cycles after the
    nearer producer cover the farther one too (the scheduler used to add the two
    shortfalls, 2 + 3 cycles, and stalled 6 where 4 is the table's FXU -> FXU distance)."""
    lines = [
        "B------:R-:W-:-:S04  IADD3 R2, R0, 0x1, RZ",
        "B------:R-:W-:-:S04  IADD3 R3, R1, 0x2, RZ",
        "B------:R-:W-:Y:S05  IADD3 R4, R2, R3, RZ",
        "B------:R-:W-:Y:S05  EXIT",
    ]
    from reorder.moves.schedule import schedule_block

    ins = tuple(parse_line(line, k) for k, line in enumerate(lines))
    out = schedule_block(ins, 0, 4, [0, 1, 2, 3], 90, keep_reuse=True)
    assert [i.ctrl.stall for i in out[:2]] == [2, 4]  # 2: the integer pipe's issue rate (legality.issue)
    assert not verify_instructions(out, 90)
    shorter = list(out)
    shorter[1] = out[1].with_ctrl(out[1].ctrl.with_(stall=3))
    assert verify_instructions(tuple(shorter), 90), "one cycle less is refused: 4 is the floor"


def test_the_notation_reads_back_what_it_prints() -> None:
    for text in ("B0-2---:R1:W3:Y:S04", "B------:R-:W-:-:S15", "B-----5:R-:W0:-:S01:UA-C"):
        assert parse_control(text).notation() == text
