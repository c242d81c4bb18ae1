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


def _candidates(word: int, old: int, new: int) -> list[tuple[int, int]]:
    """(field bit, patched word) for every register field of `word` that holds `old`."""
    return [(bit, (word & ~(0xFF << bit)) | (new << bit)) for bit in FIELDS.values() if (word >> bit) & 0xFF == old]


def _changes_only(ins: Instruction, listed: tuple[str, tuple[str, ...]], rename: OperandRename) -> bool:
    """Does this disassembly differ from the original in exactly the intended operand?"""
    opcode, operands = listed
    current, got = _clean(ins.operands), _clean(operands)
    want = with_register(current[rename.operand_index], rename.old, rename.new)
    changed = [i for i, (a, b) in enumerate(zip(current, got)) if a != b]
    return (opcode.replace(".reuse", "") == ins.opcode and len(got) == len(current)
            and changed == [rename.operand_index] and got[rename.operand_index] == want)


def rename_words(instructions: dict[int, Instruction], renames: list[OperandRename], arch: int) -> dict[int, int]:
    """offset -> new word with every rename applied.

    One nvdisasm call disassembles every single-field candidate of every rename; the
    field whose candidate changes exactly the intended operand is taken. A second call
    checks each instruction with all its renames applied together.
    """
    trials: list[tuple[OperandRename, int, int]] = []  # (rename, field bit, candidate word)
    for r in renames:
        found = _candidates(instructions[r.offset].word, r.old, r.new)
        if not found:
            raise EncodingError(f"no register field holds R{r.old}", r.offset, instructions[r.offset].opcode)
        trials += [(r, bit, word) for bit, word in found]
    listed = disassemble_words([word for _, _, word in trials], arch)
    chosen: dict[OperandRename, int] = {}
    for (r, bit, _), text in zip(trials, listed):
        if r not in chosen and _changes_only(instructions[r.offset], text, r):
            chosen[r] = bit
    words: dict[int, int] = {}
    for r in renames:
        if r not in chosen:
            raise EncodingError(f"no field renames operand {r.operand_index} (R{r.old}->R{r.new})", r.offset,
                                instructions[r.offset].opcode)
        word = words.get(r.offset, instructions[r.offset].word)
        words[r.offset] = (word & ~(0xFF << chosen[r])) | (r.new << chosen[r])
    offsets = sorted(words)
    for off, got in zip(offsets, disassemble_words([words[o] for o in offsets], arch)):
        todo = [r for r in renames if r.offset == off]
        if got[0].replace(".reuse", "") != instructions[off].opcode or _clean(got[1]) != _expected(instructions[off], todo):
            raise EncodingError(f"renaming at {off:#x} disassembles as {got}", off, instructions[off].opcode)
    return words
