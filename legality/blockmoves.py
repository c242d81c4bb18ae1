"""Loads that moved from a block into the block before it, judged against the original.

Every other move stays inside its basic block, and the verifier's other comparisons with the
original (barrier crossings, the dataflow check of legality.equivalence) match blocks by
position. A candidate of reorder.moves.dominatorhoist keeps the blocks' order and count but
not their sizes: a block L entered only from its predecessor D lends D some of its loads. This
module finds such moves by comparing each block's instructions (opcode and operands, as
multisets) with the original's, and refuses anything else that changed blocks. A load that
moved from L into D is legal when:

- L's only predecessor in the original's CFG is D, and D ends with a branch or exit guarded by a
  predicate, so that L runs exactly for the threads whose path guard (`path_guard`) holds there;
- it is a plain global load (legality.crossings.is_global_load), unguarded or under the path
  guard in the original, and under the path guard in the candidate (it runs for no thread that
  would not have run it, at the same address: the dataflow check proves the address);
- no instruction it passed may write its buffer: those before it in the original L and those
  after it in the candidate's D (a store or atomic of another buffer only under `noalias`; the
  parameters its address derives from: reorder.analysis.buffers), and none of them is a barrier
  or an op the tool cannot read;
- D and L together leave the same values for the threads that go on into L, and D alone the same
  values and stores for those that do not (`moved_block_differences`, by the symbolic values of
  legality.equivalence under the path guard's truth on each path).

A moved instruction with an identical twin in its block (same opcode and operands) is not
judged: which of the two moved cannot be told, so the candidate is refused. So is any change of
the blocks' sizes in a kernel that holds code addresses (a call's return address, a jump table).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import networkx as nx

from legality.crossings import is_global_load, may_alias, writes_global
from legality.violation import Violation
from reorder.analysis.cfg import Block, basic_blocks, control_flow_graph
from reorder.sass.model import Instruction

_PREDICATE_GUARD = re.compile(r"^@!?P[0-6]$")


_ADDRESSED = ("CALL", "RET", "JMP", "JMX", "BRX")


def absolute_addresses(instructions: tuple[Instruction, ...]) -> bool:
    """Whether the kernel holds code addresses a shift of its instructions would break: a call's
    return address (an immediate of a MOV before it), a return, an absolute jump or a jump
    table. Such a kernel's blocks keep their sizes."""
    return any(i.base in _ADDRESSED or i.indirect_targets for i in instructions)


def block_ordinal(blocks: tuple[Block, ...], start: int) -> int:
    """The position of the block starting at index `start` among the kernel's blocks."""
    return next(k for k, b in enumerate(blocks) if b.start == start)


def sole_predecessor(cfg: nx.DiGraph, start: int) -> int | None:
    """The start of the only block that leads into the block at `start`, or None."""
    if start == 0 or start not in cfg:
        return None
    preds = list(cfg.predecessors(start))
    return preds[0] if len(preds) == 1 else None


def negated(guard: str) -> str:
    return "@" + guard[2:] if guard.startswith("@!") else "@!" + guard[1:]


def path_guard(instructions: tuple[Instruction, ...], dom: Block, block: Block) -> str | None:
    """The guard under which the last instruction of `dom` (a `@P BRA`, or a `@P EXIT`) leads
    into `block`, or None when it is no such branch or does not name `block` alone."""
    last = instructions[dom.end - 1]
    if not last.known or not _PREDICATE_GUARD.match(last.guard):
        return None
    falls = block.start == dom.end
    if last.opcode == "EXIT" and not last.operands:
        return negated(last.guard) if falls else None
    if last.opcode == "BRA" and len(last.operands) == 1 and last.target is not None:
        taken = last.target // 16 == block.start
        if taken != falls:
            return last.guard if taken else negated(last.guard)
    return None


@dataclass(frozen=True)
class MovedLoad:
    """One instruction that left block `block` (an ordinal) for `dom`: where it was in the
    original and where it is in the candidate (indices)."""

    dom: int
    block: int
    original: int
    candidate: int


_REGISTER = re.compile(r"(?<![A-Za-z0-9_])(U?R\d+|U?P\d+)(?![0-9])")

Key = Callable[[Instruction], tuple]


def exact_key(ins: Instruction) -> tuple:
    """An instruction by opcode and operands (control codes and the guard aside)."""
    return ins.opcode, tuple(t.replace(".reuse", "") for t in ins.operands)


def shape_key(ins: Instruction) -> tuple:
    """An instruction by opcode and operands with register numbers left out: what an in-block
    rename (SliceBatch) keeps."""
    return ins.opcode, tuple(_REGISTER.sub("#", t.replace(".reuse", "")) for t in ins.operands)


def moved_loads(original: tuple[Instruction, ...], candidate: tuple[Instruction, ...]) -> list[MovedLoad] | str:
    """The instructions that changed blocks, each from a block into its sole predecessor; or
    the reason the candidate's blocks cannot be matched so (module docstring). Blocks of the
    same sizes are nothing this module judges. Instructions are matched by opcode and operands;
    where in-block renames of the same candidate change operands, by their shape (register
    numbers left out), refusing twins either way."""
    o_blocks, c_blocks = basic_blocks(original), basic_blocks(candidate)
    if len(o_blocks) != len(c_blocks):
        return "the candidate's blocks differ from the original's in number"
    if all(o.end - o.start == c.end - c.start for o, c in zip(o_blocks, c_blocks)):
        return []
    if absolute_addresses(original):
        return "the blocks' sizes changed in a kernel that holds code addresses (a call, return or jump table)"
    exact = _matched(original, candidate, o_blocks, c_blocks, exact_key)
    return exact if not isinstance(exact, str) else _matched(original, candidate, o_blocks, c_blocks, shape_key)


def _matched(
    original: tuple[Instruction, ...],
    candidate: tuple[Instruction, ...],
    o_blocks: tuple[Block, ...],
    c_blocks: tuple[Block, ...],
    _key: Key,
) -> list[MovedLoad] | str:
    o_keys = [Counter(_key(original[i]) for i in b.indices()) for b in o_blocks]
    c_keys = [Counter(_key(candidate[i]) for i in b.indices()) for b in c_blocks]
    cfg = control_flow_graph(original)
    expected: list[Counter] = [Counter() for _ in o_blocks]
    for k, b in enumerate(o_blocks):
        removed = o_keys[k] - c_keys[k]
        if not removed:
            continue
        pred = sole_predecessor(cfg, b.start)
        if pred is None:
            return f"instructions left the block at {original[b.start].offset:#06x}, which has no sole predecessor"
        expected[block_ordinal(o_blocks, pred)] += removed
    out: list[MovedLoad] = []
    for k, b in enumerate(o_blocks):
        if c_keys[k] - o_keys[k] != expected[k]:
            return f"the block at {original[b.start].offset:#06x} gained instructions that no block it leads into lost"
    for k, b in enumerate(o_blocks):
        removed = o_keys[k] - c_keys[k]
        if not removed:
            continue
        dom = block_ordinal(o_blocks, sole_predecessor(cfg, b.start))  # type: ignore[arg-type]
        for key, count in removed.items():
            if count != 1 or o_keys[k][key] != 1 or c_keys[dom][key] != 1:
                return f"a moved {key[0]} has a twin in its block: which one moved cannot be told"
            at_o = next(i for i in b.indices() if _key(original[i]) == key)
            at_c = next(i for i in c_blocks[dom].indices() if _key(candidate[i]) == key)
            out.append(MovedLoad(dom, k, at_o, at_c))
    return out


def block_move_violations(
    candidate: tuple[Instruction, ...],
    cand_buffers: dict[int, frozenset[int]],
    original: tuple[Instruction, ...],
    orig_buffers: dict[int, frozenset[int]],
    noalias: bool = False,
    declared: frozenset[int] | None = None,
    moved: list[MovedLoad] | str | None = None,
) -> tuple[Violation, ...]:
    """One violation per instruction that changed blocks illegally (module docstring); the
    values the joined blocks leave are legality.equivalence's `moved_block_differences`.
    `moved`: what `moved_loads` found, where the caller has it already."""
    if moved is None:
        moved = moved_loads(original, candidate)
    if isinstance(moved, str):
        at = candidate[0]
        return (Violation("block_move", "memory", at.offset, at.opcode, at.offset, at.opcode, "kept", "moved", moved),)
    if not moved:
        return ()
    blocks = (basic_blocks(original), basic_blocks(candidate))
    return tuple(
        v for m in moved for v in _judge(m, blocks, candidate, cand_buffers, original, orig_buffers, noalias, declared)
    )


def _judge(
    m: MovedLoad,
    blocks: tuple[tuple[Block, ...], tuple[Block, ...]],  # the original's and the candidate's
    candidate: tuple[Instruction, ...],
    cand_buffers: dict[int, frozenset[int]],
    original: tuple[Instruction, ...],
    orig_buffers: dict[int, frozenset[int]],
    noalias: bool,
    declared: frozenset[int] | None,
) -> list[Violation]:
    o_blocks, c_blocks = blocks
    dom, block = o_blocks[m.dom], o_blocks[m.block]
    was, now = original[m.original], candidate[m.candidate]
    branch = original[dom.end - 1]

    def violation(why: str) -> Violation:
        return Violation(
            "block_move", "memory", branch.offset, branch.opcode, now.offset, now.opcode, "kept", "moved", why
        )

    if not is_global_load(was):
        return [violation("only a plain global load may move into the block before it")]
    guard = path_guard(original, dom, block)
    if guard is None:
        return [violation("its block is not entered by a guarded branch or exit of the block before it")]
    if was.guard not in ("", guard) or now.guard != guard:
        return [violation(f"runs in the block before without the guard of its own block ({guard})")]
    passed = [(original[i], orig_buffers) for i in range(block.start, m.original)]
    passed += [(candidate[i], cand_buffers) for i in range(m.candidate + 1, c_blocks[m.dom].end - 1)]
    if any(not p.known or p.is_barrier for p, _ in passed):
        return [violation("moved past a barrier or an op the tool cannot read")]
    mine = orig_buffers.get(was.offset, frozenset())
    for p, buffers in passed:
        if writes_global(p) and may_alias(mine, buffers.get(p.offset, frozenset()), noalias, declared):
            assumed = "" if noalias else " (distinct parameters may alias: --assume-noalias)"
            return [violation(f"moved past {p.opcode} at {p.offset:#06x}, which may write its buffer{assumed}")]
    return []
