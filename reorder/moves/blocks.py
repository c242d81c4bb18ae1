"""What the SASS moves share: the block an index is in, which loads may move, the parameters
declared not to alias, the stall sum, and renamed words put into a kernel."""

from __future__ import annotations

from dataclasses import replace

from reorder.analysis.cfg import Block, basic_blocks
from reorder.moves.protocol import Noalias
from reorder.sass.model import Instruction, KernelCode
from reorder.sass.rename import OperandRename, rename_instructions


def stall_sum(instructions: tuple[Instruction, ...]) -> int:
    return sum(i.ctrl.stall for i in instructions)


def block_at(instructions: tuple[Instruction, ...], index: int) -> Block:
    return next(b for b in basic_blocks(instructions) if b.start <= index < b.end)


def is_hoistable_load(ins: Instruction) -> bool:
    return ins.base in ("LDG", "LDS", "LDC", "LD", "LDL") and ins.known and not ins.is_barrier


def declared_parameters(noalias: Noalias) -> frozenset[int] | None:
    """The parameters declared not to alias anything: None for all of them."""
    return None if noalias is True or not noalias else frozenset(noalias)


def apply_renames(code: KernelCode, renames: list[OperandRename], regcount: int) -> KernelCode:
    """The kernel with the renamed words, each re-read from its own nvdisasm listing (the
    candidate's bytes are written and decoded whole again by the pipeline)."""
    if not renames:
        return code
    by_offset = {i.offset: i for i in code.instructions}
    renamed = rename_instructions(by_offset, renames, code.arch)
    return replace(code, instructions=tuple(renamed.get(i.offset, i) for i in code.instructions))
