"""The control code of a Volta..Blackwell SASS instruction, as its own small value.

Bit positions in the 128-bit word (bit 0 = LSB of the first little-endian u64) are the
same on sm_70..sm_100 (reference/sass_hopper_facts.md §1.1):
stall [108:105], yield bit 109, write scoreboard [112:110], read scoreboard [115:113],
wait mask [121:116], reuse flags [124:122]. Scoreboard 7 means "none".

Yield polarity: bit 109 set means the warp keeps issuing (no switch); clear means the
scheduler may switch warps. The compact notation prints `Y` when bit 109 is clear, as
CuAssembler and maxas do, and the JSON field `yield` has the same meaning.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

NO_SCOREBOARD = 7
CONTROL_SHIFT = 105
CONTROL_MASK = (1 << 20) - 1  # bits 105..124


@dataclass(frozen=True, slots=True)
class ControlCode:
    """Scheduling fields of one instruction. `yield_bit` is raw bit 109."""

    stall: int
    yield_bit: int
    wbar: int
    rbar: int
    wait: int
    reuse: int

    @classmethod
    def from_word(cls, word: int) -> ControlCode:
        c = word >> CONTROL_SHIFT
        return cls(
            stall=c & 0xF,
            yield_bit=(c >> 4) & 1,
            wbar=(c >> 5) & 7,
            rbar=(c >> 8) & 7,
            wait=(c >> 11) & 0x3F,
            reuse=(c >> 17) & 7,
        )

    def bits(self) -> int:
        """The 20 control bits, shifted back to bit 0."""
        return self.stall | self.yield_bit << 4 | self.wbar << 5 | self.rbar << 8 | self.wait << 11 | self.reuse << 17

    def apply(self, word: int) -> int:
        """`word` with its control fields replaced by these."""
        return (word & ~(CONTROL_MASK << CONTROL_SHIFT)) | (self.bits() << CONTROL_SHIFT)

    @property
    def yields(self) -> bool:
        """True when the scheduler may switch warps after this instruction (bit 109 clear)."""
        return self.yield_bit == 0

    def with_(self, **changes: int) -> ControlCode:
        return replace(self, **changes)

    def waits_on(self, scoreboard: int) -> bool:
        return bool(self.wait >> scoreboard & 1)

    def notation(self) -> str:
        """Compact form, e.g. `B0-----:R-:W2:Y:S04` (wait mask, read SB, write SB, yield, stall)."""
        mask = "".join(str(i) if self.wait >> i & 1 else "-" for i in range(6))
        rbar = "-" if self.rbar == NO_SCOREBOARD else str(self.rbar)
        wbar = "-" if self.wbar == NO_SCOREBOARD else str(self.wbar)
        yld = "Y" if self.yields else "-"
        reuse = "".join("ABC"[i] if self.reuse >> i & 1 else "-" for i in range(3))
        suffix = f":U{reuse}" if self.reuse else ""
        return f"B{mask}:R{rbar}:W{wbar}:{yld}:S{self.stall:02d}{suffix}"

    def as_dict(self) -> dict[str, int | bool]:
        return {
            "stall": self.stall,
            "yield": self.yields,
            "yield_bit": self.yield_bit,
            "wbar": self.wbar,
            "rbar": self.rbar,
            "wait": self.wait,
            "reuse": self.reuse,
        }

    def encoding_problem(self) -> str | None:
        """Why this stall/yield/reuse combination is not a legal `usched_info`, or None.

        From NVIDIA's USCHED_INFO enum: stall 0 exists only as DRAIN (bit 109 clear);
        the transN form (bit 109 set) exists only for stalls 1..11; reuse flags require
        the transN form.
        """
        if self.stall == 0 and self.yield_bit:
            return "stall 0 with the yield bit set is undefined (0 is only legal as DRAIN)"
        if self.stall >= 12 and self.yield_bit:
            return f"stall {self.stall} needs the yield bit clear (no transN form above 11)"
        if self.reuse and not self.yield_bit:
            return "operand reuse needs the yield bit set (transN form)"
        return None
