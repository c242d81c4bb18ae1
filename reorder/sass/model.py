"""SASS instructions as immutable values, decoded from a cubin's `.text` and nvdisasm.

The raw 128-bit word comes from the cubin bytes; opcode and operand text come from
`nvdisasm -json` (one record per 16-byte slot). Read/write sets are derived from them
(reorder.sass.operands). An opcode reorder does not know is kept with `known=False` and is
treated by every later stage as a barrier.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field, replace
from functools import lru_cache

from reorder.base.errors import InputError, ToolTimeout
from reorder.binary.cubin import Cubin, Kernel
from reorder.binary.tools import run_tool, tool_identity, tool_version
from reorder.sass import opcodes as op
from reorder.sass.control import ControlCode
from reorder.sass.operands import Access, access, split_operands


@dataclass(frozen=True, slots=True)
class Instruction:
    """One SASS instruction: where it is, its exact bits, and what it does."""

    offset: int
    word: int  # 128-bit little-endian word: lo | hi << 64
    opcode: str  # with modifiers, e.g. "LDG.E.128"
    operands: tuple[str, ...]
    guard: str  # "" or "@P0" / "@!P0" / "@UP0"
    access: Access
    known: bool
    target: int | None  # branch / BSSY target offset
    has_relocation: bool = False
    indirect_targets: tuple[int, ...] = ()  # a BRX/JMX's jump-table targets (EIATTR_INDIRECT_BRANCH_TARGETS)
    # The arch of the cubin it came from (0: none named): whether an op is variable latency
    # depends on it (the FP64 pipe, opcodes.VARIABLE_LATENCY_ON). Not compared: one kernel's
    # instructions share it.
    arch: int = field(default=0, compare=False)
    # Derived once, when the value is made (the verifier and the scheduler read them millions
    # of times a search); not compared, so two instructions are equal exactly as before.
    ctrl: ControlCode = field(init=False, repr=False, compare=False)
    base: str = field(init=False, repr=False, compare=False)
    variable: bool = field(init=False, repr=False, compare=False)  # is_variable_latency, derived once
    # The hash, kept: the verifier's block memo hashes whole blocks of instructions per walk
    # (17 million hashes, a fifth of an optimize on a 5,696-instruction kernel, when computed
    # each time). Strings hash differently in every process, so a pickle carries the fields
    # only (__reduce__) and the receiver computes its own.
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ctrl", ControlCode.from_word(self.word))
        object.__setattr__(self, "base", self.opcode.split(".")[0])
        object.__setattr__(self, "variable", op.is_variable_latency(self.base, self.arch))
        object.__setattr__(self, "_hash", hash(self._fields()))

    def _fields(self) -> tuple:
        return (
            self.offset,
            self.word,
            self.opcode,
            self.operands,
            self.guard,
            self.access,
            self.known,
            self.target,
            self.has_relocation,
            self.indirect_targets,
        )

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self):
        return (Instruction, (*self._fields(), self.arch))

    @property
    def modifiers(self) -> tuple[str, ...]:
        return tuple(self.opcode.split(".")[1:])

    @property
    def text(self) -> str:
        ops = ", ".join(self.operands)
        guard = f"{self.guard} " if self.guard else ""
        return f"{guard}{self.opcode} {ops}".rstrip()

    @property
    def is_barrier(self) -> bool:
        """Never moved and nothing moves across it. That includes an op guarded by @!PT, which
        never runs: ptxas places such ops on purpose (three `@!PT LDS RZ, [RZ]` before each
        LDGSTS in Triton's pipelined kernels; Triton candidates that moved them gave wrong bytes
        on an H200, 2026-11-30), for reasons the tool does not model."""
        return (
            not self.known
            or self.guard == "@!PT"
            or self.base in op.BARRIERS
            or self.has_relocation
            or any(r in op.CLOCK_REGISTERS for r in self.access.reads)
        )

    @property
    def is_variable_latency(self) -> bool:
        """Whether its results arrive through a scoreboard its readers wait on, on its arch."""
        return self.variable

    @property
    def is_load(self) -> bool:
        return self.base in op.LOADS

    @property
    def bytes(self) -> bytes:
        return self.word.to_bytes(16, "little")

    def with_word(self, word: int) -> Instruction:
        return replace(self, word=word)

    def with_ctrl(self, ctrl: ControlCode) -> Instruction:
        return replace(self, word=ctrl.apply(self.word))

    def at(self, offset: int) -> Instruction:
        return replace(self, offset=offset)


@dataclass(frozen=True)
class KernelCode:
    """The decoded instructions of one kernel, in order, with the cubin it came from."""

    cubin: Cubin
    kernel: Kernel
    instructions: tuple[Instruction, ...]
    # nvdisasm's JSON record of each instruction (reorder.sass.readback reads a rewritten
    # kernel's words back through them); not compared
    records: tuple[dict, ...] = field(default=(), repr=False, compare=False)

    @property
    def arch(self) -> int:
        return self.cubin.arch

    def registers_used(self) -> int:
        """1 + the highest general register any instruction names (0 if none)."""
        return highest_register(self.instructions) + 1


def highest_register(instructions) -> int:
    """The highest general register index read or written, or -1."""
    return max(
        (int(r[1:]) for i in instructions for r in i.access.reads | i.access.writes if r[0] == "R" and r[1:].isdigit()),
        default=-1,
    )


def decode_kernel(cubin: Cubin, name: str | None = None) -> KernelCode:
    """Decode one kernel (the first entry kernel when name is None)."""
    kernel = cubin.kernel(name)
    listing = disassemble(cubin.data).get(kernel.name)
    if listing is None:
        raise InputError(f"{cubin.path}: nvdisasm listed no function {kernel.name!r}")
    return kernel_from_listing(cubin, kernel, listing)


def kernel_from_listing(cubin: Cubin, kernel: Kernel, listing: list[dict]) -> KernelCode:
    """The kernel's instructions: its words, with one nvdisasm record per word."""
    if len(listing) != kernel.instruction_count:
        raise InputError(
            f"{cubin.path}: nvdisasm gave {len(listing)} instructions for {kernel.name}, .text holds "
            f"{kernel.instruction_count}"
        )
    reloc_offsets = {r.offset - r.offset % 16 for r in kernel.relocations}
    jumps = _indirect_targets(kernel)
    instructions = tuple(
        make_instruction(
            i * 16,
            int.from_bytes(kernel.text[i * 16 : i * 16 + 16], "little"),
            record,
            i * 16 in reloc_offsets,
            cubin.arch,
        )
        for i, record in enumerate(listing)
    )
    if jumps:
        instructions = tuple(
            replace(ins, indirect_targets=jumps[ins.offset]) if ins.offset in jumps else ins for ins in instructions
        )
    return KernelCode(cubin, kernel, instructions, tuple(listing))


def _indirect_targets(kernel) -> dict[int, tuple[int, ...]]:
    """Branch offset -> jump-table targets, from the kernel's EIATTR_INDIRECT_BRANCH_TARGETS.

    A BRX's targets are not in its encoding; without them a block boundary at a switch
    case is invisible, and a swap across it runs the wrong instruction on entry there
    (switch_interpreter gave wrong bytes on an H200 before this)."""
    from reorder.binary.nvinfo import ATTR_INDIRECT_BRANCH_TARGETS, decode_indirect_branches

    out: dict[int, tuple[int, ...]] = {}
    for record in kernel.attr(ATTR_INDIRECT_BRANCH_TARGETS):
        for branch in decode_indirect_branches(record):
            out[branch.branch] = tuple(sorted(set(out.get(branch.branch, ())) | set(branch.targets)))
    return out


def make_instruction(offset: int, word: int, record: dict, has_relocation: bool = False, arch: int = 0) -> Instruction:
    """Build an Instruction from its word and its nvdisasm JSON record (`arch`: its cubin's).

    A value of the record's opcode, operands and predicate and of the other arguments, kept
    for the words decoded last: every step of a move reads the whole kernel back, and most of
    its words are those of the step before."""
    return _made(
        offset,
        word,
        record.get("opcode", ""),
        record.get("operands", ""),
        record.get("predicate", ""),
        has_relocation,
        arch,
    )


@lru_cache(maxsize=1 << 16)
def _made(
    offset: int, word: int, opcode: str, operand_text: str, guard: str, has_relocation: bool, arch: int
) -> Instruction:
    operands = split_operands(operand_text)
    if guard and not guard.startswith("@"):
        # nvdisasm's JSON puts P2R's `PR` source in the predicate field ("P2R R80, PR, RZ, 0x2"
        # in the text listing): it is an operand, the whole predicate file read, not a guard.
        operands = operands[:1] + (guard,) + operands[1:]
        guard = ""
    base = opcode.split(".")[0]
    known = base in op.KNOWN
    acc = access(opcode, operands, guard) if known else Access(frozenset(), frozenset(), None, None)
    return Instruction(
        offset=offset,
        word=word,
        opcode=opcode,
        operands=operands,
        guard=guard,
        access=acc,
        known=known,
        target=_target(base, operands),
        has_relocation=has_relocation,
        arch=arch,
    )


def _target(base: str, operands: tuple[str, ...]) -> int | None:
    if base not in op.PC_RELATIVE:
        return None
    for operand in reversed(operands):
        token = operand.split()[-1] if operand else ""
        if token.startswith("0x"):
            try:
                return int(token, 16)
            except ValueError:
                return None
    return None


LISTING_KIND = "nvdisasm-cubin"  # the cache kind of a cubin's listing (reorder.base.diskcache)


def listing_key(data: bytes) -> str:
    """The cache key of a cubin's listing: its bytes and this nvdisasm's name and version line."""
    from reorder.base.diskcache import key_of

    return key_of(data, tool_identity("nvdisasm"))


@lru_cache(maxsize=64)
def _disassemble_cached(digest: str, data: bytes) -> dict[str, list[dict]]:
    from reorder.base.diskcache import cached_json

    return cached_json(LISTING_KIND, listing_key(data), lambda: _listing(data))


def _listing(data: bytes) -> dict[str, list[dict]]:
    doc = nvdisasm_json(data, ".cubin")
    functions = doc[1] if isinstance(doc, list) and len(doc) > 1 and isinstance(doc[1], list) else None
    if functions is None or not all(
        isinstance(f, dict) and isinstance(f.get("function-name"), str) and isinstance(f.get("sass-instructions"), list)
        for f in functions
    ):
        raise InputError(
            f"nvdisasm {tool_version('nvdisasm')}: its JSON listing does not have the expected "
            "[header, [functions]] shape"
        )
    return {f["function-name"]: f["sass-instructions"] for f in functions}


# nvdisasm lists a few hundred KB per second and spins on some corrupt inputs (a mangled
# .rela.debug_frame ran for over 11 minutes): its time is bounded by the input's size.
NVDISASM_BASE_S = 15.0
NVDISASM_S_PER_MIB = 15.0


def nvdisasm_timeout(size: int) -> float:
    """Seconds nvdisasm may take for `size` bytes of input."""
    return NVDISASM_BASE_S + NVDISASM_S_PER_MIB * size / 2**20


def nvdisasm_json(data: bytes, suffix: str, *options: str) -> list:
    """nvdisasm's `-json` document for `data` (a cubin, or raw words with `-b SMxx`)."""
    with tempfile.NamedTemporaryFile(suffix=suffix, delete=False) as handle:
        handle.write(data)
        path = handle.name
    timeout = nvdisasm_timeout(len(data))
    try:
        out = run_tool("nvdisasm", *options, "-json", path, timeout=timeout)
    except ToolTimeout:
        raise InputError(
            f"nvdisasm did not finish within {timeout:.0f} s on {len(data) // 1024} KB (its bound "
            "for this size): the input is corrupt in a way reorder's own checks do not see"
        ) from None
    finally:
        os.unlink(path)
    try:
        return json.loads(out)
    except json.JSONDecodeError as exc:
        raise InputError(f"nvdisasm produced unreadable JSON: {exc}") from None


# Listings known without an nvdisasm process (prime_listing), by the cubin's SHA-256: what
# `disassemble` returns for them.
_PRIMED: dict[str, dict[str, list[dict]]] = {}
PRIMED_HELD = 256


def prime_listing(data: bytes, listing: dict[str, list[dict]]) -> None:
    """Hold `listing` as the listing of `data`, a cubin of one function: the records
    reorder.sass.readback read a rewritten kernel back with (what the verifier judged)."""
    if len(_PRIMED) >= PRIMED_HELD:
        _PRIMED.clear()
    _PRIMED[hashlib.sha256(data).hexdigest()] = listing


def disassemble(data: bytes) -> dict[str, list[dict]]:
    """function name -> nvdisasm JSON instruction records (cached by content)."""
    digest = hashlib.sha256(data).hexdigest()
    primed = _PRIMED.get(digest)
    return primed if primed is not None else _disassemble_cached(digest, data)
