"""Violations the compiler made itself: a candidate is judged against its original.

The tables are conservative: where ptxas schedules a pair closer than any entry allows (a
store's operand read covered by in-order dispatch to the memory pipe, a write-after-read
the tables have never seen ptxas emit), the verifier reports the compiler's own code. On
such a kernel (Triton's GEMMs, for one) every candidate would be rejected for what the
original already does, and the search could not start.

So a candidate's violation is *inherited*, not a rejection, when the original has the same
violation (kind, resource, and the same producer and consumer instruction text: a renamed
register does not match) and the candidate leaves at least as many cycles between the two
as the original's tightest instance of it. That is the rule the latency tables already
follow for ptxas' exact opcode pairs ("never below the compiler's own choice"), applied
to the instance itself. Everything else still needs the table's cycles.
"""

from __future__ import annotations

from dataclasses import dataclass

from legality.violation import Violation
from reorder.sass.model import Instruction

SCHEDULE_KINDS = frozenset(
    {"raw", "raw_pred", "raw_guard", "raw_u", "waw", "war", "scoreboard", "untracked", "barrier"}
)


@dataclass(frozen=True, slots=True)
class Pattern:
    """A violation with the offsets taken out: what it is between, not where."""

    kind: str
    resource: str
    producer: str  # instruction text, guard included
    consumer: str


def pattern(v: Violation, text_at: dict[int, str]) -> Pattern:
    return Pattern(v.kind, v.resource, text_at.get(v.producer_offset, "?"), text_at.get(v.consumer_offset, "?"))


def compiler_made(original: tuple[Instruction, ...], violations: tuple[Violation, ...]) -> dict[Pattern, int]:
    """Each schedule violation of the original -> the fewest cycles it is ever given there."""
    text_at = {i.offset: i.text for i in original}
    floor: dict[Pattern, int] = {}
    for v in violations:
        if v.kind in SCHEDULE_KINDS and v.cycles is not None:
            key = pattern(v, text_at)
            floor[key] = min(v.cycles, floor.get(key, v.cycles))
    return floor


def split(
    candidate: tuple[Instruction, ...], violations: tuple[Violation, ...], floor: dict[Pattern, int]
) -> tuple[tuple[Violation, ...], tuple[Violation, ...]]:
    """(new, inherited): inherited ones match a compiler-made pattern at no fewer cycles."""
    text_at = {i.offset: i.text for i in candidate}
    new: list[Violation] = []
    inherited: list[Violation] = []
    for v in violations:
        known = floor.get(pattern(v, text_at))
        kept = known is not None and v.cycles is not None and v.cycles >= known
        (inherited if kept else new).append(v)
    return tuple(new), tuple(inherited)
