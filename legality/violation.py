"""One broken dependency, as the verifier reports it and `legality.inherited` compares it:
its own module so both build on it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken dependency: who produced, who consumed too early, and by how much."""

    kind: str  # raw, raw_pred, raw_guard, raw_u, waw, war, scoreboard, untracked, encoding, registers,
    #            barrier (a memory access too soon after one), barrier_neighbour (legality.barriers),
    #            scoreboard_reuse (legality.scoreboards)
    resource: str
    producer_offset: int
    producer_opcode: str
    consumer_offset: int
    consumer_opcode: str
    required: int | str
    provided: int | str
    detail: str = ""
    elapsed: int | None = None  # cycles from producer to consumer, where `provided` is not a count
    scoreboard: int | None = None  # kind 'scoreboard': the scoreboard the consumer must wait on

    @property
    def key(self) -> tuple[str, str, int, int]:
        """Which dependency is broken (not by how much): the same pair on two paths is one."""
        return self.kind, self.resource, self.producer_offset, self.consumer_offset

    @property
    def cycles(self) -> int | None:
        """Cycles the schedule leaves between the two instructions (None: not known)."""
        return self.provided if isinstance(self.provided, int) else self.elapsed

    def line(self) -> str:
        return (
            f"{self.kind:<10} {self.resource:<6} {self.producer_offset:#06x} {self.producer_opcode:<18} -> "
            f"{self.consumer_offset:#06x} {self.consumer_opcode:<18} required {self.required}, "
            f"provided {self.provided}{'; ' + self.detail if self.detail else ''}"
        )
