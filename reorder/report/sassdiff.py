"""What a candidate changed, as a kernel engineer reads it: a SASS diff with control codes.

A ratio says a candidate is faster; the diff says what it did: which loads moved up, which
stall counts were cut, which registers were renamed. Lines carry no offsets (every
instruction after a moved one has a new offset, and a diff keyed on offsets would show the
whole kernel), so an instruction that only moved shows as one removal and one addition,
and one whose stall count was cut as a changed control code on the same text. Each hunk
header names the original offset where it starts.
"""

from __future__ import annotations

import difflib
from collections import Counter
from dataclasses import dataclass

from reorder.analysis.costmodel import kernel_cycles, stall_cycles
from reorder.sass.model import Instruction, KernelCode


@dataclass(frozen=True, slots=True)
class Summary:
    """The numbers that come before the diff."""

    kernel: str
    instructions: int
    moved: int  # same text, out of the original order
    control_only: int  # same text, in order, another control code
    text_changed: int  # texts A does not have: renamed operands, inserted instructions
    stalls: tuple[int, int]
    predicted: tuple[int, int]  # static-model cycles, one pass per block
    registers: tuple[int, int]

    def lines(self) -> list[str]:
        return [
            f"// {self.kernel}: {self.instructions} instructions; {self.moved} moved, "
            f"{self.control_only} with only a new control code, {self.text_changed} rewritten",
            f"// stall cycles {self.stalls[0]} -> {self.stalls[1]}; registers {self.registers[0]} -> "
            f"{self.registers[1]}; predicted cycles (static model, not a measurement) "
            f"{self.predicted[0]} -> {self.predicted[1]}",
        ]


def text_of(ins: Instruction) -> str:
    """The instruction without its reuse marks (the control notation shows those)."""
    return ins.text.replace(".reuse", "")


def line_of(ins: Instruction) -> str:
    """One diff line: control code notation and text, no offset."""
    return f"{ins.ctrl.notation()}  {text_of(ins)}"


def summarize(a: KernelCode, b: KernelCode) -> Summary:
    """Counts over the longest common subsequence of instruction texts: aligned pairs whose
    words differ changed only their control code; other instructions of B moved if their
    text is in A, else they were rewritten (renamed operands) or added."""
    ta, tb = [text_of(i) for i in a.instructions], [text_of(i) for i in b.instructions]
    aligned = [
        (i, j) for op, i1, i2, j1, j2 in _opcodes(ta, tb) if op == "equal" for i, j in zip(range(i1, i2), range(j1, j2))
    ]
    control_only = sum(a.instructions[i].word != b.instructions[j].word for i, j in aligned)
    rewritten = sum((Counter(tb) - Counter(ta)).values())
    moved = len(tb) - len(aligned) - rewritten
    return Summary(
        a.kernel.name,
        len(tb),
        moved,
        control_only,
        rewritten,
        (stall_cycles(a.instructions), stall_cycles(b.instructions)),
        (kernel_cycles(a.instructions), kernel_cycles(b.instructions)),
        (a.kernel.regcount, b.kernel.regcount),
    )


def _opcodes(ta: list[str], tb: list[str]) -> list[tuple[str, int, int, int, int]]:
    return list(difflib.SequenceMatcher(a=ta, b=tb, autojunk=False).get_opcodes())


def sass_diff(a: KernelCode, b: KernelCode, context: int = 3) -> list[str]:
    """The summary, then a unified diff of the two listings (empty diff when identical)."""
    la, lb = [line_of(i) for i in a.instructions], [line_of(i) for i in b.instructions]
    out = summarize(a, b).lines()
    for line in difflib.unified_diff(la, lb, "original", "candidate", n=context, lineterm=""):
        if line.startswith("@@"):
            first = int(line.split()[1].split(",")[0].lstrip("-")) - 1
            where = a.instructions[min(max(first, 0), len(a.instructions) - 1)].offset
            line = f"{line} original /*{where:04x}*/"
        out.append(line)
    return out
