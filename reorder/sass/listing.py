"""Render decoded kernels as text or JSON records (the `reorder disasm` output)."""

from __future__ import annotations

import json

from reorder.sass.model import Instruction, KernelCode


def instruction_line(ins: Instruction) -> str:
    """`/*0040*/  B0-----:R-:W-:-:S01  IMAD R7, R7, UR4, R0 ;` (with `?` for unknown opcodes)."""
    mark = " " if ins.known else "?"
    return f"/*{ins.offset:04x}*/ {mark} {ins.ctrl.notation():<22} {ins.text} ;"


def instruction_record(ins: Instruction) -> dict:
    return {
        "offset": ins.offset,
        "opcode": ins.opcode,
        "text": ins.text,
        "guard": ins.guard,
        "operands": list(ins.operands),
        "reads": sorted(ins.access.reads),
        "writes": sorted(ins.access.writes),
        "known": ins.known,
        "barrier": ins.is_barrier,
        "word": f"{ins.word:032x}",
        **ins.ctrl.as_dict(),
    }


def render_text(code: KernelCode) -> str:
    k = code.kernel
    head = (
        f"// {k.name}: sm_{code.arch}, {k.instruction_count} instructions, {k.regcount} registers, "
        f"{k.shared_bytes} bytes shared, {len(k.params)} parameters"
    )
    return "\n".join([head, *(instruction_line(i) for i in code.instructions)])


def render_json(codes: list[KernelCode]) -> str:
    doc = [
        {
            "kernel": c.kernel.name,
            "arch": f"sm_{c.arch}",
            "registers": c.kernel.regcount,
            "shared_bytes": c.kernel.shared_bytes,
            "instructions": [instruction_record(i) for i in c.instructions],
        }
        for c in codes
    ]
    return json.dumps(doc, indent=1)
