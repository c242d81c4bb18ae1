"""Memory accesses that cross a barrier: which a candidate may move, judged against the original.

A barrier (`BAR.SYNC`, `BAR.RED`, ...) orders every thread's memory accesses before it against
every thread's after it; the timing rules (legality.verify) cannot see that order, since no
register links a store of one thread to a load of another. So a candidate's blocks are compared
with the original's, barrier by barrier: before each barrier the candidate must hold the same
memory accesses as the original, by kind and by the pointer parameters their addresses derive
from (reorder.analysis.buffers), with one exception: a global load that moved up across the
barrier, when nothing that can run before that barrier may have written its buffer. That is:
every global or generic store and atomic earlier in the barrier's block, in a block that can
reach it, or anywhere in that block when it lies on a loop, and every instruction the tool cannot
read, is known to write another buffer (distinct pointer parameters are distinct buffers only
under `noalias`: `--assume-noalias`); or the load is non-coherent (`LDG.E.CONSTANT`, whose data
the program promised read-only for the kernel's lifetime). A strong or volatile load never
crosses. A load moved down across a barrier, and a store or shared-memory access moved either
way, is refused. An access the candidate adds or drops (a probe's stores) is another check's
business: only kinds present as often in the candidate's block as in the original's are judged.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

import networkx as nx

from legality.violation import Violation
from reorder.analysis.cfg import Block, basic_blocks, control_flow_graph
from reorder.sass.model import Instruction

_WRITTEN_SPACES = ("global", "generic")
_NEVER = ("STRONG", "VOLATILE", "MMIO", "SYS")


def writes_global(ins: Instruction) -> bool:
    """Whether `ins` may write global memory (a store, an atomic, or an op the tool cannot read)."""
    return not ins.known or ins.access.mem_writes in _WRITTEN_SPACES


def before_barrier(instructions: Sequence[Instruction], q: int) -> list[int]:
    """Indices of the instructions that may write global memory and can run before the barrier
    at index `q`: earlier in its block, in any block that reaches its block, and the whole of its
    block when that block reaches itself (a loop)."""
    kernel = tuple(instructions)
    blocks, _, writers = _graph(kernel)
    mine = next(b for b in blocks if b.start <= q < b.end)
    above, looped = _reached_from(kernel, mine.start)
    out = [i for start in above if start != mine.start for i in writers.get(start, ())]
    out += [i for i in writers[mine.start] if (i < q or looped) and i != q]
    return sorted(out)


@lru_cache(maxsize=8)
def _graph(
    instructions: tuple[Instruction, ...],
) -> tuple[tuple[Block, ...], nx.DiGraph, dict[int, tuple[int, ...]]]:
    """The kernel's blocks, control-flow graph and, per block start, the indices of its
    instructions that may write global memory (read only here): the crossing rule asks them of
    the same original once per barrier at every step of a move."""
    blocks = basic_blocks(instructions)
    writers = {b.start: tuple(i for i in b.indices() if writes_global(instructions[i])) for b in blocks}
    return blocks, control_flow_graph(instructions), writers


@lru_cache(maxsize=256)
def _reached_from(instructions: tuple[Instruction, ...], start: int) -> tuple[frozenset[int], bool]:
    """The starts of the blocks that reach the block at `start`, and whether it reaches itself."""
    cfg = _graph(instructions)[1]
    above = frozenset(nx.ancestors(cfg, start)) if start in cfg else frozenset()
    return above, start in above or (cfg.has_edge(start, start) if start in cfg else False)


def may_alias(load: frozenset[int], writer: frozenset[int], noalias: bool, declared: frozenset[int] | None) -> bool:
    """Whether a store whose address derives from parameters `writer` may write what a load from
    parameters `load` reads (the rule of legality.graph.memory_conflict, on parameter sets)."""
    if not noalias or not load or not writer or load & writer:
        return True
    return not (declared is None or load <= declared or writer <= declared)


def is_global_load(ins: Instruction) -> bool:
    """A plain global load: the only access that may cross a barrier."""
    return (
        ins.known
        and ins.base == "LDG"
        and ins.access.mem_reads == "global"
        and not ins.access.mem_writes
        and not any(word in ins.opcode.split(".") for word in _NEVER)
    )


def crossable_load(
    ins: Instruction,
    writers: Sequence[Instruction],
    noalias: bool,
    buffers: dict[int, frozenset[int]],
    declared: frozenset[int] | None,
    writer_buffers: dict[int, frozenset[int]] | None = None,
) -> bool:
    """Whether the global load `ins` reads the same bytes above a barrier as below it, given the
    instructions that may write global memory before that barrier (`buffers`: offset ->
    parameters, of `ins`'s kernel; `writer_buffers`: of the writers' kernel, the same by default)."""
    if not is_global_load(ins):
        return False
    if "CONSTANT" in ins.opcode.split("."):
        return True
    mine = buffers.get(ins.offset, frozenset())
    theirs = buffers if writer_buffers is None else writer_buffers
    return not any(
        not w.known or may_alias(mine, theirs.get(w.offset, frozenset()), noalias, declared) for w in writers
    )


def has_fences(instructions: tuple[Instruction, ...]) -> bool:
    """Whether some block holds a barrier before its end (else nothing can cross one)."""
    ends = {b.end - 1 for b in basic_blocks(instructions)}
    return any(ins.is_barrier and k not in ends for k, ins in enumerate(instructions))


def _key(ins: Instruction, buffers: dict[int, frozenset[int]]) -> tuple:
    return (ins.opcode, ins.access.mem_reads, ins.access.mem_writes, buffers.get(ins.offset, frozenset()))


def crossing_violations(
    candidate: tuple[Instruction, ...],
    cand_buffers: dict[int, frozenset[int]],
    original: tuple[Instruction, ...],
    orig_buffers: dict[int, frozenset[int]],
    noalias: bool = False,
    declared: frozenset[int] | None = None,
) -> tuple[Violation, ...]:
    """One violation per memory access kind that crossed a barrier of a block illegally (module
    docstring). Blocks are matched in order; kernels whose block counts differ are not judged here."""
    o_blocks, c_blocks = basic_blocks(original), basic_blocks(candidate)
    if len(o_blocks) != len(c_blocks):
        return ()
    found: list[Violation] = []
    for ob, cb in zip(o_blocks, c_blocks):
        o_mem = [i for i in ob.indices() if _memory(original[i])]
        c_mem = [i for i in cb.indices() if _memory(candidate[i])]
        o_total = Counter(_key(original[i], orig_buffers) for i in o_mem)
        c_total = Counter(_key(candidate[i], cand_buffers) for i in c_mem)
        judged = {k for k in o_total if o_total[k] == c_total[k]}
        o_bars = [i for i in ob.indices() if original[i].is_barrier and not _terminator(original, ob, i)]
        c_bars = [i for i in cb.indices() if candidate[i].is_barrier and not _terminator(candidate, cb, i)]
        if len(o_bars) != len(c_bars):
            bar = candidate[c_bars[0]] if c_bars else candidate[cb.start]
            found.append(_violation(bar, bar, "the block's barriers differ from the original's"))
            continue
        for ob_q, cb_q in zip(o_bars, c_bars):
            o_before = Counter(_key(original[i], orig_buffers) for i in o_mem if i < ob_q)
            c_before: dict[tuple, list[int]] = {}
            for i in c_mem:
                if i < cb_q:
                    c_before.setdefault(_key(candidate[i], cand_buffers), []).append(i)
            writers: list[Instruction] | None = None  # asked for only when a load crossed
            for key in sorted(judged, key=repr):
                have, want = len(c_before.get(key, [])), o_before[key]
                if have == want:
                    continue
                bar = candidate[cb_q]
                if have < want:
                    found.append(_violation(bar, bar, f"a {key[0]} moved down below the barrier"))
                    continue
                load = candidate[c_before[key][-1]]
                if writers is None:
                    writers = [original[i] for i in before_barrier(original, ob_q)]
                if not crossable_load(load, writers, noalias, cand_buffers, declared, orig_buffers):
                    found.append(_violation(bar, load, _why(load, noalias)))
    return tuple(found)


def _why(load: Instruction, noalias: bool) -> str:
    if not is_global_load(load):
        return "only a plain global load may cross a barrier"
    assumed = "" if noalias else " (distinct parameters may alias: --assume-noalias)"
    return f"moved above the barrier, but a store before it may write its buffer{assumed}"


def _memory(ins: Instruction) -> bool:
    return bool(ins.access.mem_reads or ins.access.mem_writes)


def _terminator(instructions: tuple[Instruction, ...], block, i: int) -> bool:
    """The block's last instruction when it is a branch or exit (a block boundary, not a fence)."""
    return i == block.end - 1 and instructions[i].base in ("BRA", "EXIT", "RET", "BRX", "JMP", "CALL", "BSYNC")


def _violation(bar: Instruction, at: Instruction, why: str) -> Violation:
    return Violation("barrier_crossing", "memory", bar.offset, bar.opcode, at.offset, at.opcode, "kept", "crossed", why)
