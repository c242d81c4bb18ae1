"""Which registers, predicates and memory an instruction reads and writes.

nvdisasm prints operands as text ("R4, desc[UR8][R4.64]"); the read/write split and the
widths come from the opcode's shape (reorder.sass.opcodes) and its modifiers. Where a width
is uncertain the wider reading is taken: an extra edge only costs speed, a missing one
costs correctness.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from reorder.sass import opcodes as op

_REG = re.compile(r"^[-!|~]*\|?(R|UR|P|UP)(\d+|Z|T)(?:\.(?:reuse|64|H0|H1|B\d|F32|X\d|H0_H0|H1_H1|[A-Z0-9_]+))*\|?$")
_TOKEN = re.compile(r"(?<![A-Za-z0-9_])(UR\d+|URZ|R\d+|RZ|UP\d+|UPT|P\d+|PT|SR_[A-Za-z0-9_.]+|SRZ|B\d+)(\.64)?")


@dataclass(frozen=True, slots=True)
class Access:
    """Read and write sets of one instruction. Resources are names: R4, UR6, P0, UP1, B0, SR_TID.X."""

    reads: frozenset[str]
    writes: frozenset[str]
    mem_reads: str | None  # memory space read: global, shared, local, generic
    mem_writes: str | None


def exclusive_guards(a: str, b: str) -> bool:
    """True for @P0 / @!P0: at most one of the two instructions runs, provided the predicate is
    not written between them (the verifier and the scheduler forget a guard when it is)."""
    return bool(a) and bool(b) and a.lstrip("@!") == b.lstrip("@!") and a.startswith("@!") != b.startswith("@!")


@lru_cache(maxsize=1 << 17)  # a kernel is decoded many times (each command, each move read back)
def split_operands(text: str) -> tuple[str, ...]:
    """Split at commas that are not inside brackets."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    tail = "".join(cur).strip()
    if tail:
        parts.append(tail)
    return tuple(parts)


def is_predicate(operand: str) -> bool:
    return re.fullmatch(r"!?U?P(\d+|T)", operand) is not None


def _names(kind_index: str, width: int) -> list[str]:
    """Register names covered by `R4` at `width` (R4, R5 for 2). Zero registers name nothing."""
    m = re.fullmatch(r"(UR|R|UP|P)(\d+)", kind_index)
    if not m:
        return []
    kind, index = m.group(1), int(m.group(2))
    return [f"{kind}{index + i}" for i in range(width)]


def _operand_resources(operand: str, width: int) -> list[str]:
    """Every register, predicate or special register named inside one operand.

    A bare register gets `width`; registers inside an address get their own width
    (`.64` = a pair, a descriptor `desc[URx]` = a uniform pair).
    """
    out: list[str] = []
    bare = operand.startswith(("R", "UR", "-R", "|R", "-|R", "!P", "P", "UP", "!UP", "~R"))
    for m in _TOKEN.finditer(operand):
        name, pair = m.group(1), m.group(2)
        if name.startswith("SR_"):
            out.append(name)
            continue
        if name in ("RZ", "URZ", "PT", "UPT", "SRZ") or re.fullmatch(r"B\d+", name):
            continue
        inside = operand.find("[") != -1 and operand.find("[") < m.start()
        if pair or (operand.startswith("desc[") and inside and name.startswith("UR")):
            n = 2
        elif bare and not inside:
            n = width
        else:
            n = 1
        out += _names(name, n)
    return out


def _type_widths(base: str, modifiers: list[str]) -> tuple[int, int]:
    """(destination width, source width) of a conversion from its type modifiers. nvdisasm omits
    the default type (S32 for integers, F32 for floats), so a lone type is the destination's or
    the source's by its kind: `I2F.U64.RP R5, UR4` reads UR4:UR5 and writes R5 alone (sm_120's
    int_divmod: a pair destination there made a false write-after-write with the LDC.64 into R6),
    `I2F.F64 R2, R4` writes R2:R3 from R4, `F2I.F64.TRUNC R2, R4` writes R2 from R4:R5."""
    types = [m for m in modifiers if m in op.TYPE_WIDTH]
    if not types:
        return 1, 1
    if len(types) == 1:
        width = op.TYPE_WIDTH[types[0]]
        is_float = types[0].startswith(("F", "BF", "TF", "E"))
        if base == "I2F":
            return (width, 1) if is_float else (1, width)
        if base == "F2I":
            return (1, width) if is_float else (width, 1)
        return width, width
    return op.TYPE_WIDTH[types[0]], op.TYPE_WIDTH[types[1]]


def _widths(base: str, modifiers: list[str]) -> tuple[int, int]:
    """(width of the destination register, width of data source registers)."""
    vec = max((op.VECTOR_WIDTH.get(m, 1) for m in modifiers), default=1)
    if base in op.DOUBLE_PRECISION:
        return 2, 2
    if base in ("F2F", "I2F", "F2I", "FRND", "I2I"):
        return _type_widths(base, modifiers)
    if base == "CS2R":
        return (1 if "32" in modifiers else 2), 1
    if base in ("LEPC", "ULEPC"):
        return 2, 1
    if base in ("IMAD", "UIMAD") and "WIDE" in modifiers:
        return 2, 1
    if base == "LDSM":
        count = {"2": 2, "4": 4}.get(modifiers[-1], 1) if modifiers else 1
        return count, 1
    return vec, vec


OperandNames = list[tuple[int, list[str]]]


def operand_names(opcode: str, operands: tuple[str, ...]) -> tuple[OperandNames, OperandNames]:
    """(destination operands, source operands), each as (operand index, the registers,
    predicates and other resources it names at the width the opcode gives it)."""
    base, *mods = opcode.split(".")
    dst_width, src_width = _widths(base, mods)
    n_dst = destination_count(base, operands)
    dsts: OperandNames = []
    srcs: OperandNames = []
    for i, operand in enumerate(operands):
        if i < n_dst:
            dsts.append((i, _operand_resources(operand, dst_width if not is_predicate(operand) else 1)))
        else:
            srcs.append((i, _operand_resources(operand, _source_width(base, mods, i - n_dst, src_width))))
    return dsts, srcs


@lru_cache(maxsize=1 << 17)  # an Access is frozen: one per distinct instruction text is shared
def access(opcode: str, operands: tuple[str, ...], guard: str) -> Access:
    """Read and write sets of an instruction of a known opcode."""
    base = opcode.split(".")[0]
    reads: list[str] = []
    writes: list[str] = []
    if guard:
        reads += _operand_resources(guard.lstrip("@"), 1)
    dsts, srcs = operand_names(opcode, operands)
    for _, names in dsts:
        writes += names
    for i, names in srcs:
        reads += names
        if operands[i] == "PR":
            reads += predicate_file(operands)
    if base == "R2P":
        writes += predicate_file(operands)
    if base == "BSSY" and operands:
        writes.append(operands[0])
    if base in ("BSYNC", "BREAK") and operands and re.fullmatch(r"B\d+", operands[0]):
        reads.append(operands[0])
    if base == "RET" and operands:
        reads += _operand_resources(operands[0].split()[0], 2)
    return Access(
        reads=frozenset(reads),
        writes=frozenset(writes),
        mem_reads=op.MEMORY_READS.get(base),
        mem_writes=op.MEMORY_WRITES.get(base),
    )


_DATA_CARRIERS = op.STORES | {"ATOM", "ATOMG", "ATOMS", "RED", "REDG", "F2F", "F2I", "I2F", "FRND", "I2I"}


def predicate_file(operands: tuple[str, ...]) -> list[str]:
    """The predicates P2R reads / R2P writes: bit k of the trailing mask selects Pk (all
    seven when the mask is not an immediate)."""
    try:
        mask = int(operands[-1], 16) if operands[-1].startswith("0x") else int(operands[-1])
    except (ValueError, IndexError):
        mask = 0x7F
    return [f"P{k}" for k in range(7) if mask >> k & 1]


def _source_width(base: str, mods: list[str], source_index: int, data_width: int) -> int:
    """Width of the n-th source operand.

    Data operands of stores, atomics and conversions carry the instruction's data width
    (address operands inside brackets have their own), doubles read pairs, and
    IMAD.WIDE's addend (third source) is a pair.
    """
    if base in ("IMAD", "UIMAD") and "WIDE" in mods:
        return 2 if source_index == 2 else 1
    if base in op.DOUBLE_PRECISION:
        return 2
    return data_width if base in _DATA_CARRIERS else 1


def destination_count(base: str, operands: tuple[str, ...]) -> int:
    """How many leading operands are destinations, from the opcode's shape."""
    shape = op.SHAPES.get(base, op.SHAPE_NONE)
    if shape == op.SHAPE_NONE:
        return 0
    if shape == op.SHAPE_SETP:
        n = 0
        while n < min(2, len(operands)) and is_predicate(operands[n]):
            n += 1
        return n
    if shape == op.SHAPE_VOTE:
        # VOTE.ANY R5, PT, P0 / VOTE.ANY P1, !P1: everything but the last operand is written;
        # the last is the predicate voted on, a source (it was once counted as a destination,
        # so the verifier missed ISETP -> VOTE and a stall cut broke warp_select_k100 on an H200)
        return max(0, min(2, len(operands) - 1))
    if base == "BSSY":
        return 0
    n = 0
    while n < len(operands) and is_predicate(operands[n]):
        n += 1
    if n < len(operands):
        n += 1  # the register destination
    carries = 0
    while n < len(operands) and carries < 2 and is_predicate(operands[n]) and n + 1 < len(operands):
        n += 1
        carries += 1
    return n
