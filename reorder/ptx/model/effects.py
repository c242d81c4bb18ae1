"""What one PTX instruction does, as far as code motion cares: its kind, the registers it
writes and reads, and the memory it touches (state space and address).

The opcode classes are a data table (PTX ISA 8.x/9.x, "Instruction Set" chapter). Anything
the table does not name is 'unknown': every register operand counts as read and written,
and the dependency graph treats it as a barrier to every memory access, so nothing moves
across it; it is reported. Accesses with ordering semantics (`.volatile`, `.acquire`,
`.release`, `.relaxed` with a scope, `.mmio`) are fences.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from functools import lru_cache

from reorder.ptx.model.instruction import Instruction

# Pure register computations: no memory, no side effects, safe to execute speculatively.
PURE = frozenset(
    [
        "add",
        "sub",
        "mul",
        "mad",
        "mul24",
        "mad24",
        "sad",
        "div",
        "rem",
        "abs",
        "neg",
        "min",
        "max",
        "popc",
        "clz",
        "bfind",
        "fns",
        "brev",
        "bfe",
        "bfi",
        "bmsk",
        "szext",
        "dp4a",
        "dp2a",
        "and",
        "or",
        "xor",
        "not",
        "cnot",
        "lop3",
        "shf",
        "shl",
        "shr",
        "cvt",
        "cvta",
        "mov",
        "selp",
        "slct",
        "set",
        "setp",
        "fma",
        "rcp",
        "sqrt",
        "rsqrt",
        "sin",
        "cos",
        "lg2",
        "ex2",
        "tanh",
        "copysign",
        "testp",
        "prmt",
        "isspacep",
        "addc",
        "subc",
        "madc",
        "mapa",
        "getctarank",
        "cvt.pack",
    ]
)
# Warp-collective register operations: no memory, but every thread of the warp takes part,
# so they are never moved into or out of a branch.
WARP = frozenset(["shfl", "vote", "match", "activemask", "redux", "elect"])
LOADS = frozenset(["ld", "ldu", "ldmatrix"])
STORES = frozenset(["st", "stmatrix"])
ATOMICS = frozenset(["atom", "red"])
BARRIERS = frozenset(["bar", "barrier"])
FENCES = frozenset(["membar", "fence"])
BRANCHES = frozenset(["bra", "brx", "ret", "exit", "trap"])
# Asynchronous copies, tensor-core pipelines, memory barriers objects, calls: ordered with
# respect to every memory access (full barriers).
FULL = frozenset(
    [
        "call",
        "cp",
        "mbarrier",
        "wgmma",
        "tcgen05",
        "setmaxnreg",
        "griddepcontrol",
        "multimem",
        "tensormap",
        "cp.async",
        "prefetch",
        "prefetchu",
        "discard",
        "applypriority",
        "createpolicy",
        "alloca",
        "stacksave",
        "stackrestore",
        "nanosleep",
        "pmevent",
        "brkpt",
        "istypep",
        "clusterlaunchcontrol",
    ]
)
SPACES = ("global", "shared", "local", "const", "param")
ORDERING = frozenset(["volatile", "acquire", "release", "acq_rel", "relaxed", "mmio", "sc"])
# Special registers whose reads are not pure (their value changes from read to read).
VOLATILE_SPECIALS = ("%clock", "%clock64", "%globaltimer", "%globaltimer_lo", "%globaltimer_hi", "%pm")
# Opcodes without a destination operand: every register operand is read.
NO_DEST = frozenset(
    [
        "st",
        "stmatrix",
        "red",
        "bar",
        "barrier",
        "membar",
        "fence",
        "bra",
        "brx",
        "ret",
        "exit",
        "trap",
        "prefetch",
        "prefetchu",
    ]
)


@dataclass(frozen=True, slots=True)
class Effect:
    """kind: 'pure', 'param' (a kernel-parameter read), 'load', 'store', 'atomic', 'barrier',
    'fence', 'branch', 'warp', 'full' or 'unknown'. `space` is the state space of a memory
    access ('generic' when the opcode names none). `address` holds the registers of the
    address operand, `symbol` a variable it names (a `__shared__` array, a parameter)."""

    kind: str
    defs: frozenset[str]
    uses: frozenset[str]
    space: str | None = None
    address: frozenset[str] = frozenset()
    symbol: str | None = None
    offset: int = 0

    @property
    def reads_memory(self) -> bool:
        return self.kind in ("load", "atomic", "param")

    @property
    def writes_memory(self) -> bool:
        return self.kind in ("store", "atomic")

    @property
    def ordered(self) -> bool:
        """Kept in order with every memory access and barrier."""
        return self.kind in ("fence", "atomic", "full", "unknown")


def classify(ins: Instruction) -> str:
    """The kind of an instruction from its opcode (see Effect.kind)."""
    base, mods = ins.base, set(ins.modifiers)
    if base in FULL or f"{base}.{ins.modifiers[0] if ins.modifiers else ''}" in FULL:
        return "full"
    if mods & ORDERING and (base in LOADS or base in STORES):
        return "fence"
    if base == "barrier" and "cluster" in mods:
        return "full"  # orders memory across the cluster, not only the CTA
    for kinds, name in (
        (PURE, "pure"),
        (WARP, "warp"),
        (LOADS, "load"),
        (STORES, "store"),
        (ATOMICS, "atomic"),
        (BARRIERS, "barrier"),
        (FENCES, "fence"),
        (BRANCHES, "branch"),
    ):
        if base in kinds:
            return name
    return "unknown"


def space_of(ins: Instruction) -> str:
    """The state space an access names, 'generic' when none."""
    for mod in ins.modifiers:
        head = mod.split("::", 1)[0]
        if head in SPACES:
            return head
    return "generic"


def effect(ins: Instruction, registers: dict[str, str], kernel_params: frozenset[str]) -> Effect:
    """The effect of `ins`; `registers` maps each register token it names to the register
    meant there (a scoped name is qualified, see reorder.ptx.model.registers).

    A `ld.param` of one of the kernel's own parameters is a 'param' read (kernel parameters
    are read-only); any other `.param` access belongs to a call sequence and is 'full'.
    """
    kind = classify(ins)
    specials = [t for t in operand_tokens(ins) if t.startswith("%") and t not in registers]
    if kind == "pure" and any(t.startswith(VOLATILE_SPECIALS) for t in specials):
        kind = "full"
    address, symbol, offset = _address(ins, registers)
    space = space_of(ins) if kind in ("load", "store", "atomic") else None
    if space == "param":
        kind = "param" if kind == "load" and symbol in kernel_params else "full"
    defs, uses = _defs_uses(ins, kind, registers)
    return Effect(kind, defs, uses, space, address, symbol, offset)


def _defs_uses(ins: Instruction, kind: str, registers: dict[str, str]) -> tuple[frozenset[str], frozenset[str]]:
    """Registers written and read. The guard is read; an unknown or 'full' instruction is
    taken to write and read every register it names."""
    per_operand = [frozenset(r for t in tokens(o) if (r := registers.get(t))) for o in ins.operands]
    guard = frozenset([registers[ins.guard_register]]) if ins.guard_register in registers else frozenset()
    everything = frozenset().union(*per_operand)
    if kind in ("unknown", "full"):
        return everything, everything | guard
    reduces = ins.base in BARRIERS and "red" in ins.modifiers  # bar.red.popc.u32 %r1, 0, %p1: a result
    if (ins.base in NO_DEST and not reduces) or not per_operand or ins.operands[0].startswith("["):
        return frozenset(), everything | guard
    return per_operand[0], frozenset().union(*per_operand[1:]) | guard


def _address(ins: Instruction, registers: dict[str, str]) -> tuple[frozenset[str], str | None, int]:
    """Registers, symbol and constant offset of the address operand (`[%rd3+4096]`, `[slots+4]`)."""
    text = ins.address()
    if text is None:
        return frozenset(), None, 0
    names = tokens(text)
    regs = frozenset(r for t in names if (r := registers.get(t)))
    symbols = [t for t in names if t not in registers]
    offset = 0
    for part in text.replace(" ", "").split("+")[1:]:
        with contextlib.suppress(ValueError):
            offset += int(part, 0)
    return regs, (symbols[0] if symbols and not regs else None), offset


_TOKEN = re.compile(r"[%A-Za-z_$][\w$]*")


def tokens(text: str) -> list[str]:
    """Name-like tokens of an operand: registers, special registers, symbols, labels."""
    return _TOKEN.findall(text)


def operand_tokens(ins: Instruction) -> list[str]:
    """Name-like tokens of the guard and every operand."""
    found = [ins.guard.lstrip("!")] if ins.guard else []  # the guard register, typed as present
    for o in ins.operands:
        found += tokens(o)
    return found


def function_effects(function) -> tuple[Effect | None, ...]:
    """The effect of every statement of a function's body (None for non-instructions)."""
    from reorder.ptx.model.registers import resolver

    resolve = resolver(function)
    params = frozenset(p.name for p in function.params)
    out: list[Effect | None] = []
    for index, s in enumerate(function.body):
        if s.ins is None:
            out.append(None)
            continue
        names = tuple((t, r) for t in operand_tokens(s.ins) if (r := resolve(index, t)))
        out.append(_effect_of(s.ins, names, params))
    return tuple(out)


@lru_cache(maxsize=1 << 16)
def _effect_of(ins: Instruction, names: tuple[tuple[str, str], ...], params: frozenset[str]) -> Effect:
    """`effect` remembered by value: a move re-analyses a function in which almost every
    instruction, and what its names mean, is as it was (each hoist of a search candidate
    re-reads the whole kernel)."""
    return effect(ins, dict(names), params)
