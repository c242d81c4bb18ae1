"""The one shape of every SASS move, and what every move family is told.

A move family is a frozen dataclass with

- `name`: short and stable ('stall_cut', 'swap', 'load_batch', 'slice_batch'); the search
  and the reports name moves by it;
- `instances(code, options)`: a static method listing the family's legal instances on a
  freshly decoded kernel (`options`: a `MoveOptions`, the same value for every family);
- `blocks`: where an instance applies, for reports and the pipeline's message when the
  verifier refuses one: the starts of the basic blocks it changes (a Swap names the index of
  its first instruction, which lies in the one block it changes);
- `apply(code, instructions)`: a `Candidate`, or NotApplicable when an earlier move left
  nothing to do, or LegalityError / EncodingError when it cannot be made.

Every move works inside basic blocks, leaves branches, barriers and unknown opcodes where
they are, and hands its new order to `reorder.moves.schedule` for control codes; callers
write, re-read and verify the result (`reorder.build.pipeline`). The families the build
knows, in the order it applies them, are `reorder.moves.families.FAMILIES`: a new move is a
new module here and one line there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from reorder.sass.model import Instruction, KernelCode
from reorder.sass.writer import patch_kernel

Noalias = bool | tuple[int, ...]  # False: nothing assumed; True: all pointer parameters; or these indices


@dataclass(frozen=True, slots=True)
class MoveOptions:
    """What every family's `instances` is told (each reads what concerns it)."""

    noalias: Noalias = False  # which pointer parameters may be assumed not to alias
    ranges: tuple[tuple[int, int], ...] = ()  # only blocks whose first offset is in [lo, hi); empty: all
    extra_registers: int = 32  # how far a renaming move may raise REGCOUNT

    def covers(self, offset: int) -> bool:
        """Whether a block starting at `offset` is one the options let moves change."""
        return not self.ranges or any(lo <= offset < hi for lo, hi in self.ranges)


@dataclass(frozen=True)
class Candidate:
    """A transformed kernel: its instructions (in new order), register count and notes."""

    code: KernelCode  # the kernel the instructions belong to (after any renaming)
    instructions: tuple[Instruction, ...]
    regcount: int
    notes: tuple[str, ...] = ()
    moved: int = 0

    def cubin_bytes(self) -> bytes:
        return patch_kernel(self.code.cubin, self.code.kernel, self.instructions, self.regcount)


@runtime_checkable
class Move(Protocol):
    """One instance of a move family."""

    @property
    def name(self) -> str: ...

    @property
    def blocks(self) -> tuple[int, ...]: ...

    def apply(self, code: KernelCode, instructions: tuple[Instruction, ...]) -> Candidate: ...


class MoveFamily(Protocol):
    """A move family (the class): it lists its instances."""

    name: str

    @staticmethod
    def instances(code: KernelCode, options: MoveOptions = ...) -> Sequence[Move]: ...
