"""Code addresses a kernel holds, which inserting instructions would break.

A relative call returns to an address its block put into a register with a MOV immediate (the
call's next instruction); an absolute jump or a jump table names offsets outright. Code inserted
after every such address moves none of them.
"""

from __future__ import annotations

import re

from reorder.sass.grow import return_moves
from reorder.sass.model import Instruction

_ABSOLUTE = frozenset({"JMP", "JMX", "BRX", "RET.ABS"})
# Ops whose last immediate operand is a code address (a warp-collective's reconvergence point).
_NAMES_CODE = frozenset({"WARPSYNC", "BREAK", "BMOV", "CALL", "RET", "BSSY"})
_CODE_IMMEDIATE = re.compile(r"^0x[0-9a-f]+$")


def code_address_refusal(ins: tuple[Instruction, ...], at: int, movable_returns: bool = False) -> str | None:
    """Why inserting code before index `at` would break a code address the kernel holds, or
    None. A relative call (CALL.REL) returns to an address its block put into a register with
    a MOV immediate, the call's next instruction: unchanged when that lies before `at`; with
    `movable_returns`, also when that MOV is found (`return_moves`: the grown text re-encodes it)."""
    movable = return_moves(ins) if movable_returns else {}
    for k, x in enumerate(ins):
        if x.indirect_targets or x.base in ("JMP", "JMX", "BRX") or x.opcode in _ABSOLUTE:
            return f"{x.offset:#06x} {x.opcode}: an absolute jump or a jump table"
        if x.target is None and x.operands and _CODE_IMMEDIATE.match(x.operands[-1]) and x.base in _NAMES_CODE:
            return f"{x.offset:#06x} {x.opcode}: a code address no re-encoding here follows"
        if x.base == "CALL":
            if not x.opcode.startswith("CALL.REL"):
                return f"{x.offset:#06x} {x.opcode}: an absolute call"
            back = x.offset + 16
            if back in movable.values():
                continue
            if k + 1 > at or k + 1 >= len(ins):
                return f"{x.offset:#06x} {x.opcode}: its return address {back:#x} lies at or after the insertion"
    return None
