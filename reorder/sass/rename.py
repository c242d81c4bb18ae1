"""Rename register and predicate operands inside instruction words, learning each
operand's bit field by patching and disassembling.

Register fields on sm_75..sm_90 are 8 bits at Rd [23:16], Ra [31:24], Rb [39:32] and
Rc [71:64] (reference/sass_hopper_facts.md §1.2), but which operand sits in which field
depends on the instruction's format. Predicates are 3-bit fields: the guard at [14:12]
(negation at 15), destinations Pu [83:81] / Pv [86:84], and source predicates (carry-ins,
SEL's selector, ISETP's combine operand) at places that vary by format. So for every
operand to rename, each field holding the old number is patched in turn and the
candidate words are disassembled in one nvdisasm call; the field whose disassembly shows
exactly the intended operand change (and nothing else) is taken. No candidate matching
means the rename is refused. A second call checks each rewritten word as a whole.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reorder.base.errors import EncodingError, ToolError
from reorder.binary.tools import tool_identity
from reorder.sass.model import Instruction, nvdisasm_json

FIELDS: dict[str, int] = {"Rd": 16, "Ra": 24, "Rb": 32, "Rc": 64}
GUARD_FIELD = 12  # Pg [14:12]; Pg.not is bit 15
GUARD_OPERAND = -1  # `operand_index` of a rename in the guard
# Predicate fields, tried in tiers (a tier is disassembled only for the renames the
# earlier ones left): Pu [83:81], Pv [86:84], Pp [89:87] (destinations, and the carry-in /
# selector / combine source of IADD3.X, LEA.HI.X, SEL, ISETP); then [79:77] (PLOP3's
# second source) and [92:90]; then every other 3-bit window between the guard and the
# control bits, so a format whose predicate sits elsewhere is found by the same
# disassembly check rather than by a table.
PREDICATE_TIERS: tuple[tuple[int, ...], ...] = ((81, 84, 87), (77, 90))
OTHER_WINDOWS: tuple[int, ...] = tuple(b for b in range(16, 103) if b not in (81, 84, 87, 77, 90))
TIERS = len(PREDICATE_TIERS) + 1


@dataclass(frozen=True, slots=True)
class OperandRename:
    """Rename the register `old` in operand `operand_index` of the instruction at `offset` to `new`."""

    offset: int
    operand_index: int  # GUARD_OPERAND for the guard predicate
    old: int
    new: int
    kind: str = "R"  # "R": general register (8-bit fields); "P": predicate (3-bit fields)

    @property
    def width(self) -> int:
        return 8 if self.kind == "R" else 3


def disassemble_words(words: list[int], arch: int) -> list[tuple[str, tuple[str, ...]]]:
    """(opcode, operands) of raw instruction words, via `nvdisasm -b SMxx -json`."""
    return [(opcode, operands) for _, opcode, operands in disassemble_guarded(words, arch)]


def disassemble_guarded(words: list[int], arch: int) -> list[tuple[str, str, tuple[str, ...]]]:
    """(guard, opcode, operands) of raw instruction words, via `nvdisasm -b SMxx -json`.

    nvdisasm's JSON puts P2R's `PR` source in the predicate field; like the decoder, that
    is moved back into the operands (it is no guard). Words all listed alone before (the
    final check of a rename whose word was its chosen candidate) take those records: a
    record of a word that is not control flow is a function of the word
    (reorder.sass.readback)."""
    from reorder.base.diskcache import cached_json, key_of
    from reorder.sass.operands import split_operands
    from reorder.sass.readback import listed_before, remember

    held = [listed_before(w, arch) for w in words]
    if all(r is not None for r in held):  # every word listed alone before: no process
        records: list = held
    else:
        blob = b"".join(w.to_bytes(16, "little") for w in words)
        records = cached_json(
            "nvdisasm",
            key_of(blob, f"SM{arch}", tool_identity("nvdisasm")),
            lambda: nvdisasm_json(blob, ".bin", "-b", f"SM{arch}")[1][0]["sass-instructions"],
        )
        remember(words, records, arch)
    out = []
    for r in records:
        guard, operands = r.get("predicate", ""), split_operands(r.get("operands", ""))
        if guard and not guard.startswith("@"):
            operands, guard = operands[:1] + (guard,) + operands[1:], ""
        out.append((guard, r.get("opcode", ""), operands))
    return out


def _clean(operands: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(o.replace(".reuse", "") for o in operands)


def register_regex(index: int) -> re.Pattern[str]:
    """Matches register R<index> in operand text (not R<index>0, not UR<index>)."""
    return re.compile(rf"(?<![A-Za-z0-9])R{index}(?![0-9])")


def predicate_regex(index: int) -> re.Pattern[str]:
    """Matches predicate P<index> in operand text (not UP<index>, not P<index>0)."""
    return re.compile(rf"(?<![A-Za-z0-9])P{index}(?![0-9])")


def with_register(operand: str, old: int, new: int) -> str:
    """`operand` with register R<old> written as R<new>."""
    return register_regex(old).sub(f"R{new}", operand)


def with_predicate(operand: str, old: int, new: int) -> str:
    """`operand` (or a guard like `@!P0`) with predicate P<old> written as P<new>."""
    return predicate_regex(old).sub(f"P{new}", operand)


def _substituted(text: str, renames: list[OperandRename]) -> str:
    """`text` with every rename applied at once (R4->R6 and R6->R9 in one operand stay apart)."""
    table = {(r.kind, r.old): r.new for r in renames}
    if not table:
        return text

    def swap(m: re.Match[str]) -> str:
        kind, number = m.group(1), int(m.group(2))
        return f"{kind}{table.get((kind, number), number)}"

    return re.sub(r"(?<![A-Za-z0-9])([RP])(\d+)(?![0-9])", swap, text)


def _expected(ins: Instruction, renames: list[OperandRename]) -> tuple[str, tuple[str, ...]]:
    """(guard, operands) the instruction should disassemble to with `renames` applied."""
    guard = _substituted(ins.guard, [r for r in renames if r.operand_index == GUARD_OPERAND])
    ops = tuple(
        _substituted(o, [r for r in renames if r.operand_index == k]) for k, o in enumerate(_clean(ins.operands))
    )
    return guard, ops


def _fields(rename: OperandRename, tier: int) -> tuple[int, ...]:
    """The candidate fields of a rename in a tier (registers and guards have one tier)."""
    if rename.kind == "R":
        return tuple(FIELDS.values()) if tier == 0 else ()
    if rename.operand_index == GUARD_OPERAND:
        return (GUARD_FIELD,) if tier == 0 else ()
    return PREDICATE_TIERS[tier] if tier < len(PREDICATE_TIERS) else OTHER_WINDOWS


def _candidates(word: int, rename: OperandRename, tier: int = 0) -> list[tuple[int, int]]:
    """(field bit, patched word) for every candidate field of `word` in `tier` that holds the old number."""
    mask = (1 << rename.width) - 1
    return [
        (bit, (word & ~(mask << bit)) | (rename.new << bit))
        for bit in _fields(rename, tier)
        if (word >> bit) & mask == rename.old
    ]


_BAD_ADDRESS = re.compile(r"at address (0x[0-9a-fA-F]+)")


def _listed(words: list[int], arch: int) -> list[tuple[str, str, tuple[str, ...]] | None]:
    """Disassembly of each word, None for a word nvdisasm rejects (a patched window can make
    an invalid encoding). nvdisasm names the first bad word's address: it is dropped and the
    rest disassembled again; without an address the batch is split in halves."""
    if not words:
        return []
    try:
        return list(disassemble_guarded(words, arch))
    except ToolError as exc:
        if len(words) == 1:
            return [None]
        found = _BAD_ADDRESS.search(f"{exc} {exc.stderr}")
        bad = int(found.group(1), 16) // 16 if found else -1
        if 0 <= bad < len(words):
            return _listed(words[:bad], arch) + [None] + _listed(words[bad + 1 :], arch)
        half = len(words) // 2
        return _listed(words[:half], arch) + _listed(words[half:], arch)


def _choose(
    instructions: dict[int, Instruction], renames: list[OperandRename], arch: int, tier: int
) -> dict[OperandRename, int]:
    """rename -> field bit, for the renames one of whose candidate fields does exactly the rename."""
    trials: list[tuple[OperandRename, int, int]] = []  # (rename, field bit, candidate word)
    for r in renames:
        trials += [(r, bit, word) for bit, word in _candidates(instructions[r.offset].word, r, tier)]
    chosen: dict[OperandRename, int] = {}
    for (r, bit, _), text in zip(trials, _listed([word for _, _, word in trials], arch)):
        if r not in chosen and text is not None and _changes_only(instructions[r.offset], text, r):
            chosen[r] = bit
    return chosen


def _changes_only(ins: Instruction, listed: tuple[str, str, tuple[str, ...]], rename: OperandRename) -> bool:
    """Does this disassembly differ from the original in exactly the intended operand (or guard)?"""
    guard, opcode, operands = listed
    want_guard, want = _expected(ins, [rename])
    return opcode.replace(".reuse", "") == ins.opcode and guard == want_guard and _clean(operands) == want


def rename_words(instructions: dict[int, Instruction], renames: list[OperandRename], arch: int) -> dict[int, int]:
    """offset -> new word with every rename applied (see `_rename`)."""
    return {off: word for off, (word, _) in _rename(instructions, renames, arch).items()}


def rename_instructions(
    instructions: dict[int, Instruction], renames: list[OperandRename], arch: int
) -> dict[int, Instruction]:
    """offset -> the renamed instruction, decoded from nvdisasm's listing of its new word
    (the check `_rename` ends with), so no whole-kernel disassembly is needed."""
    from reorder.sass.model import make_instruction

    out = {}
    for off, (word, (guard, opcode, operands)) in _rename(instructions, renames, arch).items():
        record = {"opcode": opcode, "operands": ", ".join(operands), "predicate": guard}
        out[off] = make_instruction(off, word, record, instructions[off].has_relocation, arch)
    return out


def _rename(
    instructions: dict[int, Instruction], renames: list[OperandRename], arch: int
) -> dict[int, tuple[int, tuple[str, str, tuple[str, ...]]]]:
    """offset -> (new word, its disassembly) with every rename applied.

    One nvdisasm call disassembles every first-tier candidate of every rename; the field
    whose candidate changes exactly the intended operand is taken (predicates not found
    there go on to the next tiers). A last call checks each instruction with all its
    renames applied together.
    """
    renames = list(dict.fromkeys(renames))
    for r in renames:
        ins = instructions[r.offset]
        if _expected(ins, [r]) == (ins.guard, _clean(ins.operands)):
            # Nothing to rename: a patched window that changes no text would pass the check
            # below while altering bits nvdisasm does not show.
            raise EncodingError(f"operand {r.operand_index} names no {r.kind}{r.old}", r.offset, ins.opcode)
    chosen = _choose(instructions, renames, arch, 0)
    for tier in range(1, TIERS):
        missing = [r for r in renames if r not in chosen and r.kind == "P"]
        if missing:
            chosen |= _choose(instructions, missing, arch, tier)
    words: dict[int, int] = {}
    for r in renames:
        if r not in chosen:
            raise EncodingError(
                f"no field renames operand {r.operand_index} ({r.kind}{r.old}->{r.kind}{r.new})",
                r.offset,
                instructions[r.offset].opcode,
            )
        word = words.get(r.offset, instructions[r.offset].word)
        mask = (1 << r.width) - 1
        words[r.offset] = (word & ~(mask << chosen[r])) | (r.new << chosen[r])
    offsets = sorted(words)
    done = {}
    for off, got in zip(offsets, _listed([words[o] for o in offsets], arch)):
        if got is None:
            raise EncodingError(f"renaming at {off:#x} makes a word nvdisasm rejects", off, instructions[off].opcode)
        guard, opcode, operands = got
        todo = [r for r in renames if r.offset == off]
        if opcode.replace(".reuse", "") != instructions[off].opcode or (guard, _clean(operands)) != _expected(
            instructions[off], todo
        ):
            raise EncodingError(f"renaming at {off:#x} disassembles as {got}", off, instructions[off].opcode)
        done[off] = (words[off], got)
    return done
