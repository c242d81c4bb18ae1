"""Which pointer parameters an instruction's memory address can derive from.

A forward may-analysis over the CFG: a register written from a constant-bank load of an
8-byte parameter k (c[0x0][base + offset of k]), or by an ALU op reading a register that
carries k, carries k. Merging by union makes this an over-approximation, which is what
an alias check needs: two accesses are known distinct only if their parameter sets are
non-empty and disjoint. Used only under an explicit no-alias assumption.
"""

from __future__ import annotations

import re
from functools import lru_cache

from reorder.analysis.cfg import basic_blocks, control_flow_graph
from reorder.binary.nvinfo import KernelParam
from reorder.sass.model import Instruction, KernelCode

PARAM_BASE = {90: 0x210}  # constant-bank offset of the first parameter (sm_80-style: 0x160)


def _param_at(offset: int, arch: int, params: tuple[KernelParam, ...]) -> int | None:
    base = PARAM_BASE.get(arch, 0x160)
    for index, p in enumerate(params):
        if base + p.offset <= offset < base + p.offset + max(p.size, 1):
            return index
    return None


def _const_params(ins: Instruction, arch: int, params: tuple[KernelParam, ...]) -> set[int]:
    """Pointer parameters (8-byte) read from the constant bank by this instruction."""
    out = set()
    for operand in ins.operands:
        for m in re.finditer(r"c\[0x0\]\[(0x[0-9a-f]+)\]", operand):
            k = _param_at(int(m.group(1), 16), arch, params)
            if k is not None and params[k].size == 8:
                out.add(k)
    return out


def _transfer(ins: Instruction, arch: int, params: tuple[KernelParam, ...], carries: dict[str, frozenset[int]]) -> None:
    incoming = set(_const_params(ins, arch, params))
    for r in ins.access.reads:
        incoming |= carries.get(r, frozenset())
    for w in ins.access.writes:
        # a guarded write may not happen: keep what the register carried before
        carries[w] = frozenset(incoming) | (carries.get(w, frozenset()) if ins.guard else frozenset())


def address_parameters(code: KernelCode) -> dict[int, frozenset[int]]:
    """instruction offset -> pointer parameters its memory address may derive from
    (a may-analysis over the CFG: states merge by union at block entries).

    A function of the instructions, the parameters and the arch only, so it is kept for the
    last few kernels: the verifier asks it of the same original at every step of a move."""
    return dict(_address_parameters(code.instructions, code.kernel.params, code.arch))


@lru_cache(maxsize=16)
def _address_parameters(
    instructions: tuple[Instruction, ...], params: tuple[KernelParam, ...], arch: int
) -> dict[int, frozenset[int]]:
    blocks = {b.start: b for b in basic_blocks(instructions)}
    cfg = control_flow_graph(instructions)
    entry: dict[int, dict[str, frozenset[int]]] = {s: {} for s in blocks}
    out: dict[int, frozenset[int]] = {}
    work = sorted(blocks)
    rounds = 0
    while work and rounds < 10 * len(blocks) + 10:
        rounds += 1
        start = work.pop(0)
        carries = dict(entry[start])
        for i in blocks[start].indices():
            ins = instructions[i]
            if ins.access.mem_reads or ins.access.mem_writes:
                out[ins.offset] = _address_params(ins, carries)
            _transfer(ins, arch, params, carries)
        for succ in cfg.successors(start):
            merged = dict(entry[succ])
            for r, v in carries.items():
                merged[r] = merged.get(r, frozenset()) | v
            if merged != entry[succ]:
                entry[succ] = merged
                if succ not in work:
                    work.append(succ)
    return out


def _address_params(ins: Instruction, carries: dict[str, frozenset[int]]) -> frozenset[int]:
    address = [o for o in ins.operands if "[" in o and not o.startswith("c[")]
    params: set[int] = set()
    for o in address:
        part = o.split("]")[-2] if o.startswith("desc[") else o
        for m in re.finditer(r"(?<![A-Za-z])R(\d+)", part):
            base = int(m.group(1))
            params |= carries.get(f"R{base}", frozenset()) | carries.get(f"R{base + 1}", frozenset())
    return frozenset(params)
