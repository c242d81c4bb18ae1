"""A peeled loop judged against the original by structure alone (reorder.moves.peel).

The candidate is legal when it is the original with one single-block do-while loop's body B
copied, instruction for instruction, right before B, and nothing else changed:

- the loop is one the move may peel in the original (`peel_refusal`: entered by falling
  through, no other branch, call, barrier, warp-collective op, relocation or .nv.info-named
  instruction in the body; no code address the insertion would shift);
- every original instruction keeps its word, except a PC-relative one (branch, BSSY, relative
  call or return) whose span crosses the copy: re-encoded to reach the same instruction, every
  other bit kept;
- the copy's words are the body's, bit for bit, except its last: the back edge with its guard
  negated, jumping to the instruction after the loop;
- what follows the last original instruction is padding NOPs;
- every .nv.info record names the same instructions (offsets mapped), in the same order.

Then every thread runs the same instructions in the same order as in the original: the copy is
the loop's first iteration, which a do-while runs on every entry by falling through.
"""

from __future__ import annotations

from dataclasses import dataclass

from reorder.analysis.cfg import Block
from reorder.binary import branches
from reorder.binary.nvinfo import remap_record
from reorder.moves.peel import negated_guard, peel_refusal, single_block_loops
from reorder.sass.grow import pc_target
from reorder.sass.model import Instruction, KernelCode


@dataclass(frozen=True)
class PeelMatch:
    """The loop found peeled: its body's original indices and the old -> new offset map."""

    start: int
    end: int
    new_offset_of: dict[int, int]


def peel_match(original: KernelCode, candidate: KernelCode) -> PeelMatch | str:
    """The loop `candidate` peels, or why it is no legal peel of `original` (module docstring)."""
    o, c = original.instructions, candidate.instructions
    arch = original.arch
    if candidate.arch != arch or candidate.kernel.name != original.kernel.name:
        return "another kernel or arch"
    o_core, c_core = _core(o), _core(c)
    grown = len(c_core) - len(o_core)
    if grown <= 0:
        return "the candidate does not hold more instructions than the original"
    why = "no single-block loop of the original is peeled by exactly the instructions added"
    for body in single_block_loops(o):
        if body.end - body.start != grown:
            continue
        found = _judge(original, candidate, body, o_core, c_core)
        if isinstance(found, PeelMatch):
            return found
        why = found
    return why


def _core(ins: tuple[Instruction, ...]) -> tuple[Instruction, ...]:
    """The instructions without the trailing padding NOPs."""
    end = len(ins)
    while end and ins[end - 1].opcode == "NOP" and not ins[end - 1].guard:
        end -= 1
    return ins[:end]


def _judge(
    original: KernelCode,
    candidate: KernelCode,
    body: Block,
    o: tuple[Instruction, ...],
    c: tuple[Instruction, ...],
) -> PeelMatch | str:
    arch = original.arch
    head = 16 * body.start
    why = peel_refusal(original, body)
    if why:
        return f"loop at {head:#06x}: {why}"
    n = body.end - body.start
    shift = 16 * n
    new_offset_of = {x.offset: x.offset + (shift if x.offset >= head else 0) for x in original.instructions}
    for x in o:
        new = new_offset_of[x.offset]
        got = c[new // 16]
        target = pc_target(x, arch)
        want = x.word
        if target is not None and new_offset_of[target] - new != target - x.offset:
            want = branches.encode_target(x.word, arch, new, new_offset_of[target], x.base)
        if got.word != want:
            return f"{x.offset:#06x} {x.opcode}: changed (at {new:#06x} in the candidate)"
    for k in range(n - 1):
        x, got = o[body.start + k], c[body.start + k]
        if got.word != x.word:
            return f"copy of {x.offset:#06x} {x.opcode}: another word at {got.offset:#06x}"
    back, copy = o[body.end - 1], c[body.end - 1]
    exit_at = new_offset_of[16 * body.end]
    if (
        copy.opcode != back.opcode
        or copy.guard != negated_guard(back.guard)
        or copy.target != exit_at
        or copy.operands != (f"{exit_at:#x}",)
        or branches.encode_target(copy.word ^ (8 << 12), arch, copy.offset, back.target or 0, back.base) != back.word
    ):
        return f"the copy's back edge at {copy.offset:#06x} is not {negated_guard(back.guard)} BRA {exit_at:#x}"
    if any(x.opcode != "NOP" for x in candidate.instructions[len(c) :]):
        return "the candidate's text holds more than the copy and padding"
    o_attrs = tuple(remap_record(a, new_offset_of) for a in original.kernel.attrs)
    c_attrs = candidate.kernel.attrs
    if [(a.attr, a.fmt, a.payload) for a in o_attrs] != [(a.attr, a.fmt, a.payload) for a in c_attrs]:
        return ".nv.info records differ from the original's with offsets mapped"
    return PeelMatch(body.start, body.end, new_offset_of)
