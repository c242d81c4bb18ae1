"""A one-thread PTX interpreter for tests: runs a kernel's body for one thread and records
every global load it makes (address and width) and every store it makes, in order.

Two versions of a kernel are compared by running both on the same memory and parameters: a
loop move is correct on that input when the stores are the same, and it never reads what
the original would not when its global loads are a subset of the original's. Only the
instructions the loop tests' kernels use are modelled; anything else raises, so a test
cannot pass by skipping an instruction. Warp and block collectives act as for a block of
one thread (shfl returns its input, bar.sync does nothing): both versions see the same.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

from reorder.ptx.analyses.cfg import Cfg
from reorder.ptx.model.model import Function

_INT = re.compile(r"-?(0[xX][0-9a-fA-F]+|\d+)")
_FLOAT = re.compile(r"0[fF]([0-9a-fA-F]{8})")


class Unmodelled(Exception):
    pass


@dataclass
class Memory:
    """Global memory: address -> 32-bit word; buffers as (base, size in bytes)."""

    words: dict[int, int] = field(default_factory=dict)
    buffers: list[tuple[int, int]] = field(default_factory=list)

    def read(self, address: int) -> int:
        if not any(b <= address < b + n for b, n in self.buffers):
            raise Unmodelled(f"load out of every buffer: {address:#x}")
        return self.words.get(address, 0)


@dataclass
class Trace:
    loads: list[int] = field(default_factory=list)
    stores: list[tuple[int, int]] = field(default_factory=list)
    steps: int = 0


def _bits(kind: str) -> int:
    return int(re.sub(r"\D", "", kind) or 32)


def _f32(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]


def _from_f32(x: float) -> int:
    import numpy as np

    return int(np.float32(x).view(np.uint32))


def _signed(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


class Thread:
    def __init__(
        self, function: Function, params: list[int], memory: Memory, tid: int = 0, ctaid: int = 0, ntid: int = 1
    ) -> None:
        self.f, self.memory = function, memory
        self.params = {p.name: v for p, v in zip(function.params, params)}
        self.regs: dict[str, int] = {}
        self.special = {"%tid.x": tid, "%ctaid.x": ctaid, "%ntid.x": ntid, "%nctaid.x": 1}
        self.shared: dict[int, int] = {}
        self.trace = Trace()

    def value(self, text: str, kind: str = "b32") -> int:
        text = text.strip()
        if text in self.special:
            return self.special[text]
        if text in self.regs:
            return self.regs[text]
        m = _FLOAT.fullmatch(text)
        if m:
            return int(m.group(1), 16)
        if _INT.fullmatch(text):
            return int(text, 0) & ((1 << 64) - 1)
        if text.startswith("%"):
            return 0  # a register no path set (a lane the collective does not read): 0 in both versions
        return 0x1000 if text == "global_smem" else self._symbol(text)

    def _symbol(self, text: str) -> int:
        """A variable's address (shared arrays): a fixed address per name, the same in both versions."""
        if not re.fullmatch(r"[A-Za-z_$][\w$]*", text):
            raise Unmodelled(f"operand {text}")
        return 0x10000 + 0x1000 * (sum(map(ord, text)) % 64)

    def run(self, limit: int = 200000) -> Trace:
        cfg = Cfg(self.f)
        where = {label: b.start for b in cfg.blocks for label in b.labels}
        i, body = 0, self.f.body
        while i < len(body):
            s = body[i]
            i += 1
            if s.kind != "instruction":
                continue
            self.trace.steps += 1
            if self.trace.steps > limit:
                raise Unmodelled("step limit")
            ins = s.ins
            if ins.guard:
                held = bool(self.value(ins.guard_register))
                if held == ins.guard_negated:
                    continue
            if ins.base == "bra":
                i = where[ins.operands[-1]]
                continue
            if ins.base in ("ret", "exit"):
                break
            self.step(ins)
        return self.trace

    def address(self, operand: str) -> int:
        inner = operand.strip()[1:-1].replace(" ", "")
        parts = inner.split("+")
        base = parts[0]
        if base in self.params:
            return ("param", base)
        total = self.value(base, "b64")
        for p in parts[1:]:
            total += int(p, 0)
        return total & ((1 << 64) - 1)

    def set(self, name: str, value: int, kind: str) -> None:
        self.regs[name.strip()] = value & ((1 << _bits(kind)) - 1) if kind != "pred" else int(bool(value))

    def step(self, ins) -> None:
        op, mods, ops = ins.base, ins.modifiers, ins.operands
        kind = mods[-1] if mods else "b32"
        if op == "ld":
            self._load(ins)
            return
        if op == "st":
            self._store(ins)
            return
        if op in ("bar", "barrier"):
            return
        if op == "shfl":
            self.set(ops[0], self.value(ops[1]), "b32")
            return
        a = [self.value(o, kind) for o in ops[1:]]
        bits = _bits(kind) if kind != "pred" else 1
        mask = (1 << bits) - 1 if kind != "pred" else 1
        if op == "mov":
            self.set(ops[0], a[0], kind)
        elif op == "cvta":
            self.set(ops[0], a[0], "b64")
        elif op == "cvt":
            self._cvt(ins, a[0])
        elif op in ("add", "sub", "mul", "mad", "fma", "div", "rsqrt", "rcp") and kind.startswith("f"):
            self._float(ins, [_f32(x) for x in a])
        elif op == "add":
            self.set(ops[0], a[0] + a[1], kind)
        elif op == "sub":
            self.set(ops[0], a[0] - a[1], kind)
        elif op in ("mul", "mad"):
            wide = "wide" in mods
            src = 32 if wide else bits
            x, y = (
                (_signed(a[0], src), _signed(a[1], src))
                if kind.startswith("s")
                else (a[0] & ((1 << src) - 1), a[1] & ((1 << src) - 1))
            )
            out = x * y + (a[2] if op == "mad" else 0)
            self.set(ops[0], out, "b64" if wide else kind)
        elif op == "shl":
            self.set(ops[0], a[0] << (a[1] & 63), kind)
        elif op == "shr":
            v = _signed(a[0], bits) if kind.startswith("s") else a[0] & mask
            self.set(ops[0], v >> (a[1] & 63), kind)
        elif op in ("and", "or", "xor"):
            f = {"and": lambda x, y: x & y, "or": lambda x, y: x | y, "xor": lambda x, y: x ^ y}[op]
            self.set(ops[0], f(a[0], a[1]), kind)
        elif op == "not":
            self.set(ops[0], (~a[0]) if kind != "pred" else 1 - a[0], kind)
        elif op == "bfe":
            v = (a[0] & mask) >> a[1]
            self.set(ops[0], v & ((1 << a[2]) - 1), kind)
        elif op == "setp":
            self.set(ops[0], self._compare(mods[0], kind, a[0], a[1]), "pred")
        elif op == "selp":
            self.set(ops[0], a[0] if a[2] else a[1], kind)
        elif op in ("min", "max"):
            x, y = (_signed(a[0], bits), _signed(a[1], bits)) if kind.startswith("s") else (a[0], a[1])
            self.set(ops[0], min(x, y) if op == "min" else max(x, y), kind)
        else:
            raise Unmodelled(f"{ins.opcode}")

    def _compare(self, cmp: str, kind: str, x: int, y: int) -> bool:
        if kind.startswith("f"):
            x, y = _f32(x), _f32(y)
        elif kind.startswith("s"):
            x, y = _signed(x, _bits(kind)), _signed(y, _bits(kind))
        else:
            m = (1 << _bits(kind)) - 1
            x, y = x & m, y & m
        table = {"lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y, "eq": x == y, "ne": x != y}
        if cmp not in table:
            raise Unmodelled(f"setp.{cmp}")
        return table[cmp]

    def _cvt(self, ins, v: int) -> None:
        mods = [m for m in ins.modifiers if m not in ("rn", "rz", "rni", "rzi", "ftz", "sat")]
        dst, src = mods[0], mods[1]
        if src.startswith("f") or dst.startswith("f"):
            if dst == "f32" and src[0] in "su":
                x = _signed(v, _bits(src)) if src[0] == "s" else v & ((1 << _bits(src)) - 1)
                self.set(ins.operands[0], _from_f32(float(x)), "b32")
                return
            raise Unmodelled(ins.opcode)
        x = _signed(v, _bits(src)) if src[0] == "s" else v & ((1 << _bits(src)) - 1)
        self.set(ins.operands[0], x, dst)

    def _float(self, ins, a: list[float]) -> None:
        import numpy as np

        f = np.float32
        op = ins.base
        with np.errstate(all="ignore"):
            out = {
                "add": lambda: f(a[0]) + f(a[1]),
                "sub": lambda: f(a[0]) - f(a[1]),
                "mul": lambda: f(a[0]) * f(a[1]),
                "div": lambda: f(a[0]) / f(a[1]),
                "fma": lambda: f(np.float64(a[0]) * np.float64(a[1]) + np.float64(a[2])),
                "mad": lambda: f(np.float64(a[0]) * np.float64(a[1]) + np.float64(a[2])),
                "rsqrt": lambda: f(1.0) / np.sqrt(f(a[0])),
                "rcp": lambda: f(1.0) / f(a[0]),
            }[op]()
        self.set(ins.operands[0], _from_f32(float(out)), "b32")

    def _targets(self, operand: str) -> list[str]:
        return [t.strip() for t in operand.strip("{} ").split(",")]

    def _load(self, ins) -> None:
        spaces = ("global", "shared", "param", "const")
        space = next((m for m in ins.modifiers if m.split("::")[0] in spaces), "generic")
        address = self.address(ins.address() and f"[{ins.address()}]")
        dests = self._targets(ins.operands[0])
        kind = ins.modifiers[-1]
        if space == "param":
            value = self.params[address[1]]
            if kind.startswith("s") and _bits(kind) == 32:
                value = _signed(value, 32)
            self.set(dests[0], value, "b64")
            return
        width = 8 if _bits(kind) == 64 else 4
        for k, d in enumerate(dests):
            if space.startswith("shared"):
                value = self.shared.get(address + k * width, 0)
            else:
                self.trace.loads.append(address + k * width)
                value = self.memory.read(address + k * width)
                if width == 8:
                    value |= self.memory.read(address + k * width + 4) << 32
            self.set(d, value, "b64" if width == 8 else "b32")

    def _store(self, ins) -> None:
        space = ins.modifiers[0].split("::")[0]
        address = self.address(f"[{ins.address()}]")
        values = self._targets(ins.operands[1])
        for k, v in enumerate(values):
            value = self.value(v)
            if space == "shared":
                self.shared[address + 4 * k] = value
            else:
                self.trace.stores.append((address + 4 * k, value))
                self.memory.words[address + 4 * k] = value
