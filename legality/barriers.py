"""Rules around barriers: how soon a memory access may follow one, and who may stand beside it.

No move crosses a barrier (the graph makes every barrier depend on everything), but a move
inside a block can change what sits right next to one: a swap once put an LDS directly
behind `BAR.SYNC.DEFER_BLOCKING`, 1 cycle after it, and on an H200 it read shared memory
before the other warps' stores had landed (wrong at 4 rows, right at 1). The latency
tables say nothing about that, because no register links the two.

Two kinds of rule, from `tables/barriers.toml` and, for an arch whose GPU ran
`reorder latency-probe --barriers`, from the `barriers_sm_XX.toml` it wrote (found like the
measured latency tables, `legality.latency.measured_path`; its distances replace the family's):
- a distance: a memory access issued after a barrier with a rule needs that many cycles
  from the barrier's issue. It is checked in the verifier's dataflow (`record`, `check`),
  so it holds on every path, across branches, standalone;
- neighbours: a barrier-like opcode with no distance rule keeps the instructions just
  before and after it (same bits) and no fewer cycles into and out of it than the
  compiler gave. That needs the original schedule (`neighbour_violations`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from legality.latency import measured_path
from reorder.binary.arches import family
from reorder.binary.branches import encode_target
from reorder.sass.model import Instruction

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

TABLE = Path(__file__).parent / "tables" / "barriers.toml"
RESOURCE = "barrier"  # the pseudo-resource a barrier's issue is recorded under
CONTROL_BITS = 105  # bits [127:105] are the control code (stall, yield, scoreboards, wait, reuse)
_CODE_MASK = (1 << CONTROL_BITS) - 1


@dataclass(frozen=True, slots=True)
class DistanceRule:
    """A memory access after `barrier` (an opcode prefix) needs `cycles` from its issue."""

    barrier: str
    cycles: int
    provenance: str


@dataclass(frozen=True)
class BarrierRules:
    arch: int
    distances: tuple[DistanceRule, ...]
    neighbour_opcodes: frozenset[str]  # base opcodes kept beside their compiler-placed neighbours

    def distance_for(self, opcode: str) -> DistanceRule | None:
        """The distance rule of a barrier opcode, or None."""
        return next((r for r in self.distances if _matches(opcode, r.barrier)), None)

    def keeps_neighbours(self, ins: Instruction) -> bool:
        """A barrier-like instruction with no measured rule, or one the tool cannot read (its
        operands unknown: HGMMA, WARPGROUP.ARRIVE): its neighbours stay."""
        return not ins.known or (ins.base in self.neighbour_opcodes and self.distance_for(ins.opcode) is None)


def _matches(opcode: str, prefix: str) -> bool:
    return opcode == prefix or opcode.startswith(prefix + ".")


@lru_cache(maxsize=4)
def load_rules(arch: int) -> BarrierRules:
    """The rules of an arch family (sm_80's for sm_75..sm_89, sm_90's for Hopper; Blackwell's
    families have none: their barriers keep their neighbours) or the arch's own measured ones."""
    doc = tomllib.loads(TABLE.read_text())
    measured = measured_path(arch, "barriers")
    rows = tomllib.loads(measured.read_text()).get("distance", []) if measured else None
    if rows is None:
        rows = [d for d in doc.get("distance", []) if int(d["arch"]) == family(arch)]
    distances = tuple(DistanceRule(d["barrier"], int(d["cycles"]), d["provenance"]) for d in rows)
    return BarrierRules(arch, distances, frozenset(doc.get("neighbours", {}).get("opcodes", ())))


def touches_memory(ins: Instruction) -> bool:
    return bool(ins.access.mem_reads or ins.access.mem_writes)


# ---------------------------------------------------------------- neighbours (needs the original)


def code_bits(ins: Instruction) -> int:
    """The instruction without its control code: what it does, not when."""
    return ins.word & _CODE_MASK


def placed_bits(ins: Instruction, arch: int) -> int:
    """code_bits with a PC-relative immediate cleared: a branch re-targeted because code was
    inserted before its target (a probe's clock read) is the instruction the compiler placed.
    Its target is checked where code is inserted (reorder.sass.grow.changed_originals). The
    probe after lastBlockSum's `@P0 BRA` (its window reaches the MEMBAR.SC.GPU five
    instructions on) was refused for its BRA's new immediate."""
    if ins.target is None:
        return code_bits(ins)
    return encode_target(ins.word, arch, 0, 16, ins.base) & _CODE_MASK


def neighbour_violations(
    candidate: tuple[Instruction, ...], original: tuple[Instruction, ...], arch: int
) -> list[tuple[Instruction, Instruction, str]]:
    """(barrier, offending instruction, why) for each barrier-like instruction without a
    distance rule whose neighbourhood the candidate changed.

    The k-th such barrier of the candidate is matched with the k-th of the original (moves
    never move barriers); its bits must match, its neighbours' bits must match, its own
    stall (cycles out of it) and its predecessor's (cycles into it) must not shrink, and it
    must wait on at least the scoreboards it waited on."""
    rules = load_rules(arch)
    mine = [i for i, x in enumerate(candidate) if rules.keeps_neighbours(x)]
    theirs = [i for i, x in enumerate(original) if rules.keeps_neighbours(x)]
    if len(mine) != len(theirs):
        return [
            (
                candidate[mine[0]] if mine else candidate[0],
                candidate[0],
                f"{len(mine)} barrier-like instructions, the original has {len(theirs)}",
            )
        ]
    found = []
    kernel_bits = frozenset(placed_bits(x, arch) for x in original) if mine else frozenset()
    for c, o in zip(mine, theirs):
        why = _changed(candidate, c, original, o, kernel_bits, arch)
        if why:
            found.append((candidate[c], why[0], why[1]))
    return found


def _changed(
    cand: tuple[Instruction, ...], c: int, orig: tuple[Instruction, ...], o: int, kernel_bits: frozenset, arch: int
):
    """(instruction, why) for the first change to barrier cand[c] (orig[o]) or its neighbours
    (`kernel_bits`: every instruction of the original, without control codes)."""
    bar, was = cand[c], orig[o]
    if code_bits(bar) != code_bits(was):
        return bar, "not the original's barrier"
    if bar.ctrl.stall < was.ctrl.stall or (was.ctrl.wait & ~bar.ctrl.wait):
        return bar, f"its control code shrank ({bar.ctrl.stall} < {was.ctrl.stall} cycles or fewer waits)"
    for dc, do in ((c - 1, o - 1), (c + 1, o + 1)):
        inside_c, inside_o = 0 <= dc < len(cand), 0 <= do < len(orig)
        if inside_c != inside_o or (inside_c and placed_bits(cand[dc], arch) != placed_bits(orig[do], arch)):
            return (cand[dc] if inside_c else bar), "a different neighbour than the compiler placed"
    return _window_changed(cand, c, orig, o, kernel_bits, arch)


WINDOW_CYCLES = 16  # no fixed latency in the tables reaches further (R2UR -> uniform reader: 15)


def _window_changed(
    cand: tuple[Instruction, ...], c: int, orig: tuple[Instruction, ...], o: int, kernel_bits: frozenset, arch: int
):
    """Every instruction the compiler placed within WINDOW_CYCLES before the barrier stays
    before it, in its order, with no fewer cycles into it, and nothing else of the kernel moves
    in between: the barrier may read what they write (an unknown op's operands are not known;
    a barrier waits on what is in flight). New code (a probe's clock reads) may stand among
    them: it only adds cycles. On an H200, Triton matmuls whose stalls before HGMMA and DEPBAR
    were cut (UIADD3.64 UR10 S09 -> S01 before an HGMMA reading it as a descriptor) gave wrong
    bytes or faulted, 2026-11-30."""
    k, into_c, into_o = c, 0, 0
    for m in range(1, o + 1):
        want = placed_bits(orig[o - m], arch)
        into_o += orig[o - m].ctrl.stall
        while True:
            k -= 1
            if k < 0:
                return cand[c], "an instruction the compiler placed before it is gone"
            into_c += cand[k].ctrl.stall
            bits = placed_bits(cand[k], arch)
            if bits == want:
                break
            if bits in kernel_bits and cand[k].base != "NOP":  # a NOP does nothing a barrier could see
                return cand[k], "a different instruction before it than the compiler placed"
        if into_c < into_o:
            return cand[k], f"fewer cycles into the barrier ({into_c} < {into_o} from {m} instruction(s) before)"
        if into_o >= WINDOW_CYCLES:
            break
    return None
