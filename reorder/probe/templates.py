"""Encodings of new instructions, taken from ptxas's own output and patched field by field.

reorder never assembles SASS from a mnemonic: a tiny PTX kernel is compiled with ptxas
once per arch, the wanted instruction is picked from its listing, and only operand
fields are patched (register numbers, an immediate, a constant-bank offset, a memory
offset). Field positions are those of reference/sass_hopper_facts.md §1.2 and of the
ptxas listings decoded there (c-bank byte offset at bit 38, LDC/ULDC/IMAD.MOV; memory
offset at bit 40, signed 24 bits, LDG/STG; STG's descriptor uniform register at bit 64).
Every generated word is disassembled with nvdisasm (one batched call) and compared with
the text it should show before it is used: a field at a wrong place is refused, never
emitted.
"""

from __future__ import annotations

import functools
import tempfile
from dataclasses import dataclass
from pathlib import Path

from reorder.base.errors import EncodingError
from reorder.binary.cubin import parse_cubin
from reorder.binary.tools import run_tool
from reorder.sass.control import ControlCode
from reorder.sass.model import Instruction, decode_kernel
from reorder.sass.rename import disassemble_words

# name -> (bit, width). Register fields are 8 bits (255 = RZ), uniform ones 6 (63 = URZ).
FIELDS: dict[str, tuple[int, int]] = {
    "Rd": (16, 8),
    "Ra": (24, 8),
    "Rb": (32, 8),
    "Rc": (64, 8),
    "URd": (16, 6),
    "URc": (64, 6),
    "imm32": (32, 32),
    "cbank": (38, 16),
    "memoff": (40, 24),
}

_PTX = """.version 8.0
.target sm_{arch}
.address_size 64
.visible .entry probe_templates(.param .u64 p0, .param .u64 p1)
{{
  .reg .b32 %r<24>;
  .reg .b64 %rd<12>;
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %tid.y;
  mov.u32 %r3, %tid.z;
  mov.u32 %r4, %ctaid.x;
  mov.u32 %r5, %ctaid.y;
  mov.u32 %r6, %ctaid.z;
  mov.u32 %r7, %smid;
  mov.u32 %r8, %clock;
  mov.u64 %rd5, %globaltimer;
  ld.param.u64 %rd1, [p1];
  ld.volatile.global.u64 %rd6, [%rd1];
  mad.lo.s32 %r9, %r2, 1234, %r1;
  mad.lo.s32 %r9, %r3, 4567, %r9;
  shr.u32 %r9, %r9, 5;
  mad.lo.s32 %r10, %r5, 777, %r4;
  mad.lo.s32 %r10, %r6, 888, %r10;
  mad.lo.s32 %r11, %r10, 9, %r9;
  mad.wide.u32 %rd3, %r11, 24, %rd6;
  mov.u32 %r12, %clock;
  st.global.v2.u32 [%rd3], {{%r8, %r12}};
  st.global.u32 [%rd3+8], %r7;
  st.global.u64 [%rd3+16], %rd5;
  st.global.u64 [%rd3+24], %rd1;
  ret;
}}
"""

# template name -> (opcode, a predicate on its operands) to pick it from the listing.
_PICK: dict[str, tuple[str, tuple[str, ...] | None]] = {
    "S2R": ("S2R", None),
    "CS2R.32": ("CS2R.32", ("SR_CLOCKLO",)),
    "CS2R": ("CS2R", ("SR_GLOBALTIMERLO",)),
    "IMAD": ("IMAD", None),
    "SHF.R.U32.HI": ("SHF.R.U32.HI", None),
    "IMAD.WIDE.U32": ("IMAD.WIDE.U32", None),
    "ULDC.64": ("ULDC.64", None),
    "LDC.64": ("LDC.64", None),
    "MOV": ("MOV", None),
    "STG.E.64": ("STG.E.64", None),
}


@dataclass(frozen=True, slots=True)
class Template:
    """One ptxas-emitted instruction to patch: its word (control bits cleared) and listing."""

    name: str
    arch: int
    word: int
    opcode: str
    operands: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Generated:
    """A new instruction word and the text nvdisasm must show for it."""

    word: int
    opcode: str
    operands: tuple[str, ...]

    @property
    def text(self) -> str:
        return f"{self.opcode} {', '.join(self.operands)}".rstrip()

    def with_ctrl(self, ctrl: ControlCode) -> Generated:
        return Generated(ctrl.apply(self.word), self.opcode, self.operands)


def _compile(arch: int) -> tuple[Instruction, ...]:
    with tempfile.TemporaryDirectory(prefix="reorder-tpl-") as folder:
        ptx, cubin = Path(folder) / "t.ptx", Path(folder) / "t.cubin"
        ptx.write_text(_PTX.format(arch=arch))
        run_tool("ptxas", f"-arch=sm_{arch}", str(ptx), "-o", str(cubin))
        parsed = parse_cubin(cubin.read_bytes(), f"templates sm_{arch}")
        return decode_kernel(parsed, "probe_templates").instructions


@functools.cache
def templates(arch: int) -> dict[str, Template]:
    """Every template of an arch, compiled once per process (ptxas takes ~50 ms).

    Forms ptxas did not emit on this arch (LDC.64 on sm_80) are simply absent; the
    builders pick what exists.
    """
    listing = _compile(arch)
    out: dict[str, Template] = {}
    for ins in listing:
        if ins.base == "S2R":
            out.setdefault(f"S2R {ins.operands[1]}", _template(f"S2R {ins.operands[1]}", arch, ins))
            continue
        for name, (opcode, ops) in _PICK.items():
            if ins.opcode == opcode and (ops is None or ins.operands[1:] == ops) and name not in out:
                out[name] = _template(name, arch, ins)
    return out


def _template(name: str, arch: int, ins: Instruction) -> Template:
    blank = ControlCode(stall=1, yield_bit=0, wbar=7, rbar=7, wait=0, reuse=0)
    return Template(name, arch, blank.apply(ins.word), ins.opcode, ins.operands)


def template(arch: int, name: str) -> Template:
    found = templates(arch).get(name)
    if found is None:
        raise EncodingError(f"no {name} template on sm_{arch} (ptxas did not emit that form)")
    return found


def patch(word: int, field: str, value: int) -> int:
    """`word` with one operand field set; values that do not fit are refused."""
    bit, width = FIELDS[field]
    if field in ("memoff",):
        if not -(1 << (width - 1)) <= value < (1 << (width - 1)):
            raise EncodingError(f"{field} {value} does not fit {width} signed bits")
        value &= (1 << width) - 1
    elif not 0 <= value < (1 << width):
        raise EncodingError(f"{field} {value} does not fit {width} bits")
    return (word & ~(((1 << width) - 1) << bit)) | (value << bit)


def reg(index: int) -> str:
    return "RZ" if index == 255 else f"R{index}"


def _addr(arch: int, ur: int, base: int, offset: int) -> str:
    inner = f"[R{base}.64{f'+{offset:#x}' if offset else ''}]"
    return f"desc[UR{ur}]{inner}" if arch >= 90 else inner


# ---------------------------------------------------------------- builders (one per form)


def s2r(arch: int, rd: int, special: str) -> Generated:
    t = template(arch, f"S2R {special}")
    return Generated(patch(t.word, "Rd", rd), "S2R", (reg(rd), special))


def nop(arch: int) -> Generated:  # `arch` unused: one encoding on every arch this tool writes
    """A NOP (its control code is set by the scheduler): a stall pad."""
    from reorder.sass.grow import NOP_WORD

    return Generated(NOP_WORD, "NOP", ())


def clock32(arch: int, rd: int) -> Generated:
    t = template(arch, "CS2R.32")
    return Generated(patch(t.word, "Rd", rd), "CS2R.32", (reg(rd), "SR_CLOCKLO"))


def globaltimer64(arch: int, rd: int) -> Generated:
    t = template(arch, "CS2R")
    return Generated(patch(t.word, "Rd", rd), "CS2R", (reg(rd), "SR_GLOBALTIMERLO"))


IMAD_ALIASES = {0: "IMAD.MOV", 1: "IMAD.IADD"}  # how nvdisasm names IMAD by these multipliers


def imad(arch: int, rd: int, ra: int, imm: int, rc: int) -> Generated:
    """Rd = Ra * imm + Rc (32-bit)."""
    t = template(arch, "IMAD")
    word = patch(patch(patch(patch(t.word, "Rd", rd), "Ra", ra), "imm32", imm), "Rc", rc)
    return Generated(word, IMAD_ALIASES.get(imm, "IMAD"), (reg(rd), reg(ra), f"{imm:#x}", reg(rc)))


def shr5(arch: int, rd: int, rc: int) -> Generated:
    """Rd = Rc >> 5 (lane index dropped: thread -> warp)."""
    t = template(arch, "SHF.R.U32.HI")
    word = patch(patch(t.word, "Rd", rd), "Rc", rc)
    return Generated(word, "SHF.R.U32.HI", (reg(rd), "RZ", "0x5", reg(rc)))


def imad_wide(arch: int, rd: int, ra: int, imm: int, rc: int) -> Generated:
    """Rd:Rd+1 = Ra * imm + Rc:Rc+1 (unsigned 32x32 -> 64, plus a 64-bit addend)."""
    t = template(arch, "IMAD.WIDE.U32")
    word = patch(patch(patch(patch(t.word, "Rd", rd), "Ra", ra), "imm32", imm), "Rc", rc)
    return Generated(word, "IMAD.WIDE.U32", (reg(rd), reg(ra), f"{imm:#x}", reg(rc)))


def uldc64(arch: int, urd: int, offset: int) -> Generated:
    t = template(arch, "ULDC.64")
    word = patch(patch(t.word, "URd", urd), "cbank", offset)
    return Generated(word, "ULDC.64", (f"UR{urd}", f"c[0x0][{offset:#x}]"))


def ldc64(arch: int, rd: int, offset: int) -> Generated:
    t = template(arch, "LDC.64")
    word = patch(patch(t.word, "Rd", rd), "cbank", offset)
    return Generated(word, "LDC.64", (reg(rd), f"c[0x0][{offset:#x}]"))


def mov_const(arch: int, rd: int, offset: int) -> Generated:
    """Rd = c[0x0][offset] through MOV (sm_80's fixed-latency parameter read)."""
    t = template(arch, "MOV")
    word = patch(patch(t.word, "Rd", rd), "cbank", offset)
    return Generated(word, "MOV", (reg(rd), f"c[0x0][{offset:#x}]"))


def stg64(arch: int, ur: int, base: int, offset: int, data: int) -> Generated:
    """STG.E.64 [base.64 + offset], data:data+1 through the global descriptor in UR `ur`."""
    t = template(arch, "STG.E.64")
    word = patch(patch(patch(patch(t.word, "URc", ur), "Ra", base), "memoff", offset), "Rb", data)
    return Generated(word, "STG.E.64", (_addr(arch, ur, base, offset), reg(data)))


def check_generated(items: list[Generated], arch: int) -> None:
    """Disassemble every generated word in one nvdisasm call; refuse any that reads wrong."""
    if not items:
        return
    listed = disassemble_words([g.word for g in items], arch)
    for g, (opcode, operands) in zip(items, listed):
        got = tuple(o.replace(" ", "") for o in operands)
        want = tuple(o.replace(" ", "") for o in g.operands)
        if opcode != g.opcode or got != want:
            raise EncodingError(
                f"generated word {g.word:#034x} disassembles as {opcode} {', '.join(operands)}, expected {g.text}",
                opcode=g.opcode,
            )
