"""LoopPeel: copy the body of a single-block do-while loop in front of it, so that its first
iteration is straight-line code joined to the block before it.

A loop whose body is one basic block B, ending with `@P BRA B` (its back edge), and that is
entered by falling through from the instruction before it, runs B at least once for every
thread that enters it that way: B, then B again while P holds. The peeled kernel places a copy
B' of B right before B: the instruction before falls into B', B' ends with `@!P BRA EXIT` (the
back edge's guard negated, its target the instruction after the loop), and falls into B when P
holds. Every thread runs the same instructions in the same order: B' then, while P holds, B.
A branch that jumped to B from elsewhere still lands on B (the loop itself is unchanged).

B' holds B's words bit for bit, control codes included, except the back edge's guard bit and
displacement. Its entry state is the one the loop's first iteration saw; B is now entered from
B' by falling through, where it was entered by a taken branch, and the exit by a taken branch
where it was a fall-through: the scoreboards and stall counts that protected those edges are
the same words, and a taken branch only adds cycles.

The kernel's text grows (reorder.sass.grow lays the cubin out again and maps every .nv.info
offset, relocation and symbol). Refused, never guessed: a body with a branch other than its
back edge, a call, a barrier or warp-collective op (the threads that leave B' for the exit
are no longer at B's back edge), an op the tool cannot read, a relocation, or an instruction
an .nv.info offset list names (the copy would need an entry of its own); a kernel with a jump
table or an absolute jump; a call whose return address lies at or after the loop (its MOV
immediate would change). legality.peel judges the result by structure alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reorder.analysis.cfg import Block, basic_blocks, control_flow_graph
from reorder.analysis.codeaddress import code_address_refusal
from reorder.base.errors import EncodingError, NotApplicable
from reorder.binary import branches
from reorder.binary.nvinfo import OFFSET_LIST_ATTRS
from reorder.sass.grow import Grown, Insertion, grow_kernel
from reorder.sass.model import Instruction, KernelCode
from reorder.sass.rename import GUARD_FIELD, disassemble_guarded

_PREDICATE_GUARD = re.compile(r"^@!?P[0-6]$")
# Ops whose meaning depends on which threads of the warp run them together, or that leave the
# block, or that hold code addresses: none may be copied.
_NOT_COPIED = frozenset(
    {
        "BAR",
        "BSSY",
        "BSYNC",
        "WARPSYNC",
        "SHFL",
        "VOTE",
        "VOTEU",
        "MATCH",
        "REDUX",
        "ELECT",
        "CALL",
        "RET",
        "JMP",
        "JMX",
        "BRX",
        "BRA",
        "EXIT",
        "KILL",
        "BPT",
        "BMOV",
        "YIELD",
        "NANOSLEEP",
        "ERRBAR",
        "MEMBAR",
        "CCTL",
        "S2R",  # SR_LANEMASK*, SR_CLOCK... read per-warp state; S2R outside the copy is fine
        "CS2R",
    }
)


@dataclass(frozen=True)
class PeelPlan:
    """The loop to peel: its body's indices [start, end) (the back edge at end - 1)."""

    start: int
    end: int

    @property
    def length(self) -> int:
        return self.end - self.start


def negated_guard(guard: str) -> str:
    return "@" + guard[2:] if guard.startswith("@!") else "@!" + guard[1:]


def single_block_loops(ins: tuple[Instruction, ...]) -> list[Block]:
    """Blocks that are their own loop: the last instruction a `@P BRA` to the block's start."""
    out = []
    for b in basic_blocks(ins):
        last = ins[b.end - 1]
        if (
            last.known
            and last.opcode == "BRA"
            and len(last.operands) == 1
            and _PREDICATE_GUARD.match(last.guard)
            and last.target == 16 * b.start
        ):
            out.append(b)
    return out


def peel_refusal(code: KernelCode, body: Block) -> str | None:
    """Why the loop `body` cannot be peeled (module docstring), or None."""
    ins = code.instructions
    if body.start == 0 or body.end >= len(ins):
        return "the loop has no instruction before it or after it"
    cfg = control_flow_graph(ins)
    prev = next(b for b in basic_blocks(ins) if b.end == body.start)
    if not cfg.has_edge(prev.start, body.start) or cfg.edges[prev.start, body.start].get("kind") != "fallthrough":
        return "the loop is not entered by falling through from the instruction before it"
    named = _offsets_named(code)
    for i in range(body.start, body.end - 1):
        x = ins[i]
        if not x.known:
            return f"{x.offset:#06x} {x.opcode}: an op the tool cannot read"
        if x.base in _NOT_COPIED or x.target is not None:
            return f"{x.offset:#06x} {x.opcode}: not copied (control flow, warp-collective or per-warp state)"
        if x.has_relocation:
            return f"{x.offset:#06x} {x.opcode}: carries a relocation"
        if x.offset in named:
            return f"{x.offset:#06x} {x.opcode}: named by an .nv.info offset list"
    if ins[body.end - 1].offset in named:
        return "the back edge is named by an .nv.info offset list"
    return code_address_refusal(ins, body.start)


def _offsets_named(code: KernelCode) -> frozenset[int]:
    out: set[int] = set()
    for a in code.kernel.attrs:
        if a.attr in OFFSET_LIST_ATTRS:
            out.update(a.words())
    return frozenset(out)


def plans(code: KernelCode) -> list[PeelPlan]:
    """Every loop of the kernel that can be peeled, holding at least one global load."""
    from legality.crossings import is_global_load

    ins = code.instructions
    return [
        PeelPlan(b.start, b.end)
        for b in single_block_loops(ins)
        if any(is_global_load(ins[i]) for i in b.indices()) and peel_refusal(code, b) is None
    ]


def peeled_back_edge(back: Instruction, arch: int, here: int, exit_at: int) -> int:
    """The copy's last word: the back edge with its guard negated, jumping to `exit_at` from
    `here` (bit 3 of the guard field is the negation; every other bit is the original's)."""
    word = back.word ^ (8 << (GUARD_FIELD + 0))
    word = branches.encode_target(word, arch, here, exit_at, back.base)
    ((guard, opcode, _),) = disassemble_guarded([word], arch)
    if guard != negated_guard(back.guard) or opcode != back.opcode:
        raise EncodingError(f"{back.offset:#06x}: the negated back edge did not encode ({guard} {opcode})", back.offset)
    if branches.decode_target(word, arch, here, back.base) != exit_at:
        raise EncodingError(f"{back.offset:#06x}: the peeled back edge does not reach {exit_at:#x}", back.offset)
    return word


def peel_loop(code: KernelCode, plan: PeelPlan) -> Grown:
    """The cubin with the loop's body copied before it (module docstring)."""
    ins = code.instructions
    body = Block(plan.start, plan.end)
    if body not in single_block_loops(ins):
        raise NotApplicable(f"no single-block loop at index {plan.start}")
    why = peel_refusal(code, body)
    if why:
        raise NotApplicable(f"loop at {ins[plan.start].offset:#06x}: {why}")
    n = plan.length
    here = 16 * (plan.end - 1)  # the copy's back edge sits where the original body's last did
    exit_at = 16 * (plan.end + n)  # the instruction after the loop, once the copy is in
    words = tuple(ins[i].word for i in range(plan.start, plan.end - 1))
    words += (peeled_back_edge(ins[plan.end - 1], code.arch, here, exit_at),)
    return grow_kernel(code, [Insertion(plan.start, words)])


def note(code: KernelCode, plan: PeelPlan) -> str:
    ins = code.instructions
    return (
        f"loop {ins[plan.start].offset:#06x}-{ins[plan.end - 1].offset:#06x} peeled: its {plan.length} "
        f"instructions copied before it, the copy's back edge {negated_guard(ins[plan.end - 1].guard)} BRA "
        f"to the instruction after the loop"
    )
