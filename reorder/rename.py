"""Rename register operands inside instruction words, learning each operand's bit field
by patching and disassembling.

Register fields on sm_75..sm_90 are 8 bits at Rd [23:16], Ra [31:24], Rb [39:32] and
Rc [71:64] (reference/sass_hopper_facts.md §1.2), but which operand sits in which field
depends on the instruction's format. So for every operand to rename, each field holding
the old register number is patched in turn and the candidate words are disassembled in
one nvdisasm call; the field whose disassembly shows exactly the intended operand change
(and nothing else) is taken. No candidate matching means the rename is refused.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass

from reorder.errors import EncodingError
from reorder.sass import Instruction
from reorder.tools import run_tool

FIELDS: dict[str, int] = {"Rd": 16, "Ra": 24, "Rb": 32, "Rc": 64}


@dataclass(frozen=True, slots=True)
class OperandRename:
    """Rename the register `old` in operand `operand_index` of the instruction at `offset` to `new`."""

    offset: int
    operand_index: int
    old: int
    new: int


def disassemble_words(words: list[int], arch: int) -> list[tuple[str, tuple[str, ...]]]:
    """(opcode, operands) of raw instruction words, via `nvdisasm -b SMxx -json`."""
    from reorder.operands import split_operands

    with tempfile.NamedTemporaryFile(suffix=".bin", delete=False) as handle:
        handle.write(b"".join(w.to_bytes(16, "little") for w in words))
        path = handle.name
    try:
        doc = json.loads(run_tool("nvdisasm", "-b", f"SM{arch}", "-json", path))
    finally:
        os.unlink(path)
    records = doc[1][0]["sass-instructions"]
    return [(r.get("opcode", ""), split_operands(r.get("operands", ""))) for r in records]


def _clean(operands: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(o.replace(".reuse", "") for o in operands)


def register_regex(index: int) -> re.Pattern[str]:
    """Matches register R<index> in operand text (not R<index>0, not UR<index>)."""
    return re.compile(rf"(?<![A-Za-z0-9])R{index}(?![0-9])")


def with_register(operand: str, old: int, new: int) -> str:
    """`operand` with register R<old> written as R<new>."""
    return register_regex(old).sub(f"R{new}", operand)


def _expected(ins: Instruction, renames: list[OperandRename]) -> tuple[str, ...]:
    ops = list(_clean(ins.operands))
    for r in renames:
        ops[r.operand_index] = with_register(ops[r.operand_index], r.old, r.new)
    return tuple(ops)


def _candidates(word: int, old: int, new: int) -> list[tuple[str, int]]:
    return [(name, (word & ~(0xFF << bit)) | (new << bit)) for name, bit in FIELDS.items() if (word >> bit) & 0xFF == old]


def rename_words(instructions: dict[int, Instruction], renames: list[OperandRename], arch: int) -> dict[int, int]:
    """offset -> new word with every rename applied, each checked by disassembly."""
    by_offset: dict[int, list[OperandRename]] = {}
    for r in renames:
        by_offset.setdefault(r.offset, []).append(r)
    words = {off: instructions[off].word for off in by_offset}
    for off, todo in by_offset.items():
        current = list(_clean(instructions[off].operands))
        for r in todo:
            words[off], current = _apply_one(instructions[off], words[off], r, arch, current)
        got = disassemble_words([words[off]], arch)[0]
        if _clean(got[1]) != _expected(instructions[off], todo):
            raise EncodingError(f"renaming at {off:#x} disassembles as {got}", off, instructions[off].opcode)
    return words


def _apply_one(ins: Instruction, word: int, rename: OperandRename, arch: int,
               current: list[str]) -> tuple[int, list[str]]:
    """Patch the one field that moves operand `rename.operand_index` from old to new."""
    candidates = _candidates(word, rename.old, rename.new)
    if not candidates:
        raise EncodingError(f"no register field holds R{rename.old}", ins.offset, ins.opcode)
    listed = disassemble_words([w for _, w in candidates], arch)
    for (_, patched), (opcode, operands) in zip(candidates, listed):
        want = list(current)
        want[rename.operand_index] = with_register(want[rename.operand_index], rename.old, rename.new)
        got = _clean(operands)
        changed = [i for i, (a, b) in enumerate(zip(current, got)) if a != b]
        if opcode.replace(".reuse", "") == ins.opcode and changed == [rename.operand_index] and \
                got[rename.operand_index] == want[rename.operand_index]:
            return patched, list(got)
    raise EncodingError(f"no field renames operand {rename.operand_index} (R{rename.old}->R{rename.new})",
                        ins.offset, ins.opcode)
