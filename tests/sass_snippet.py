"""SASS snippets as text, for FileCheck-style tests of the scheduler (tests/snippets/*.sass).

A line is an instruction in the notation `reorder disasm` prints: control code, then text,

    B0-----:R-:W2:Y:S04  @P0 LDG.E R4, desc[UR4][R2.64]

The word holds the control code and the line number (so equal texts stay distinct); the
operand sets come from reorder.sass.operands, as for a decoded cubin. A snippet file holds

    # move: stall_cut | swap K | order I J K ...   (a new order by input line, 0-based)
    # arch: 90                                      (optional, default 90)
    # in:
    <lines>
    # out:
    <lines>

and the test checks that the scheduler turns `in` into exactly `out`, and that the verifier
accepts `out`. The expected text was read and checked by hand against the latency tables
(legality/tables) when the snippet was written: change it only for a reason you can name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from reorder.sass.control import ControlCode
from reorder.sass.model import Instruction, make_instruction

NOTATION = re.compile(
    r"B(?P<wait>[0-5-]{6}):R(?P<rbar>[0-5-]):W(?P<wbar>[0-5-]):(?P<y>[Y-]):S(?P<stall>\d\d)(?::U(?P<reuse>[ABC-]{3}))?"
)


def parse_control(text: str) -> ControlCode:
    m = NOTATION.fullmatch(text)
    if m is None:
        raise ValueError(f"not a control code: {text!r}")
    wait = sum(1 << i for i, c in enumerate(m["wait"]) if c != "-")
    reuse = sum(1 << i for i, c in enumerate(m["reuse"] or "---") if c != "-")
    return ControlCode(
        stall=int(m["stall"]),
        yield_bit=0 if m["y"] == "Y" else 1,
        wbar=7 if m["wbar"] == "-" else int(m["wbar"]),
        rbar=7 if m["rbar"] == "-" else int(m["rbar"]),
        wait=wait,
        reuse=reuse,
    )


def parse_line(line: str, k: int, arch: int = 0) -> Instruction:
    ctrl_text, _, text = line.strip().partition(" ")
    text = text.strip().rstrip(";").strip()
    guard = ""
    if text.startswith("@"):
        guard, _, text = text.partition(" ")
    opcode, _, operands = text.partition(" ")
    word = parse_control(ctrl_text).apply(k + 1)
    record = {"opcode": opcode, "operands": operands.strip(), "predicate": guard}
    return make_instruction(16 * k, word, record, arch=arch)


def listing(*lines: str, arch: int = 0) -> tuple[Instruction, ...]:
    """Instructions from lines in the notation above, closed by an EXIT (a block that ends); as
    decoded from an `arch` cubin (0: none named)."""
    return tuple(parse_line(line, k, arch) for k, line in enumerate([*lines, "B------:R-:W-:Y:S05  EXIT"]))


def render(instructions) -> list[str]:
    return [f"{i.ctrl.notation()}  {i.text}" for i in instructions]


@dataclass(frozen=True)
class Snippet:
    name: str
    move: tuple[str, ...]
    arch: int
    before: tuple[Instruction, ...]
    expected: tuple[str, ...]


def read_snippet(path: Path) -> Snippet:
    move, arch, part = (), 90, None
    lines: dict[str, list[str]] = {"in": [], "out": []}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            key, _, value = line[1:].partition(":")
            key, value = key.strip(), value.strip()
            if key == "move":
                move = tuple(value.split())
            elif key == "arch":
                arch = int(value)
            elif key in lines:
                part = key
            continue
        lines[part].append(line)
    before = tuple(parse_line(line, k) for k, line in enumerate(lines["in"]))
    expected = tuple(render(parse_line(line, k) for k, line in enumerate(lines["out"])))
    return Snippet(path.stem, move, arch, before, expected)


def run_move(snippet: Snippet) -> tuple[Instruction, ...]:
    """The scheduler's answer for the snippet's move (one block: the whole snippet)."""
    from reorder.moves.schedule import schedule_block

    ins, n = snippet.before, len(snippet.before)
    kind, *args = snippet.move
    if kind == "stall_cut":
        return schedule_block(ins, 0, n, list(range(n)), snippet.arch, keep_reuse=True)
    if kind == "swap":
        k = int(args[0])
        order = list(range(n))
        order[k], order[k + 1] = order[k + 1], order[k]
        return schedule_block(ins, 0, n, order, snippet.arch, keep_stalls=True)
    if kind == "order":
        return schedule_block(ins, 0, n, [int(a) for a in args], snippet.arch)
    raise ValueError(f"{snippet.name}: unknown move {kind!r}")
