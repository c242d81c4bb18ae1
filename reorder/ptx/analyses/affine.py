"""Addresses as affine forms modulo 2**32: proof that a loop's load and store of one buffer
never meet a given number of iterations apart.

An in-place loop (`x[i:i+B] = f(x[i:i+B])` chunk by chunk, a gradient written over its
logits) reads and writes one pointer, so the memory rule alone keeps its loads from running
iterations early. They may when iteration N + j's load and iteration N's store touch
different bytes. Each address is written as `c + sum(k * atom)` modulo 2**32, where an atom
is the iteration N, or a value the loop does not change: a parameter, a special register
(%tid.x, %ctaid.x), a computation the form cannot see through made before the loop. An
induction variable is its value on entering the loop plus N steps, so iteration N + j's
address is the form plus j times N's coefficient.

Why modulo 2**32 is enough: every operation followed here (add, sub, mul and mad by a
constant, their .wide forms, shl by a constant, integer cvt between 32 and 64 bits) is exact
modulo 2**32, so the true 64-bit difference D is congruent to r; two accesses of widths wa
and wb overlap only when -wa < D < wb, and then r is in that window too. No reasoning about
overflow is needed: a difference known only modulo 2**32 is still a proof of disjointness.

`or` and `and` with a constant are followed when they add or keep bits the value cannot
have (Triton's `tid * 8 | 6144`): the bits a value may have come from %tid's bound (the
kernel's .reqntid / .maxntid, else 1024), shifts, masks and disjoint adds. Anything else
(a value loaded in the loop, a register with several definitions reaching, a guarded
definition, code inside a `{ }` scope) has no form, and the load stays.

Every pair of threads, not only a thread with itself: the difference's thread-own part
(%tid, %laneid times a constant) is taken over its whole range on each side, independently,
and every other value must cancel and be the same in every thread of the CTA (a parameter,
%ctaid, the iteration N, what is computed from those alone). The memory model orders only a
thread's own accesses without a barrier, but warps that run in step would see another
thread's store of iteration N - 1; a load is never run early into those bytes either.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from reorder.ptx.analyses.analysis import Analysis
from reorder.ptx.analyses.counted import CountedLoop, precedes
from reorder.ptx.model.registers import resolver

MODULUS = 1 << 32
_INT = frozenset({"s32", "u32", "b32", "s64", "u64", "b64"})
_BYTES = {"8": 1, "16": 2, "32": 4, "64": 8, "128": 16}
_THREADS = re.compile(r"\.(?:reqntid|maxntid)\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?")
_IMMEDIATE = re.compile(r"-?(?:0[xX][0-9a-fA-F]+|\d+)")
_INVARIANT_SPECIALS = ("%tid.", "%ntid.", "%ctaid.", "%nctaid.", "%laneid")  # not %warpid, %smid: they may change
_DEPTH = 64  # definitions followed back from one operand, at most

# ('n',) the iteration | ('param', name, offset, type) | ('special', name) | ('def', statement, uniform)
# | ('varying', statement)
Atom = tuple
_THREAD = ("%tid.", "%laneid")  # the thread's own specials; the others are the same across the CTA


@dataclass(frozen=True, slots=True)
class Form:
    """c + sum(k * atom) modulo 2**32. A `varying` atom is a value the loop changes other
    than through an induction (no form of it at another iteration can be made)."""

    const: int
    terms: tuple[tuple[Atom, int], ...] = ()

    @staticmethod
    def of(const: int, terms: dict[Atom, int] | None = None) -> Form:
        kept = tuple(sorted(((a, k % MODULUS) for a, k in (terms or {}).items() if k % MODULUS), key=repr))
        return Form(const % MODULUS, kept)

    def plus(self, other: Form, sign: int = 1) -> Form:
        terms = dict(self.terms)
        for a, k in other.terms:
            terms[a] = terms.get(a, 0) + sign * k
        return Form.of(self.const + sign * other.const, terms)

    def times(self, k: int) -> Form:
        return Form.of(self.const * k, {a: c * k for a, c in self.terms})

    @property
    def constant(self) -> int | None:
        return None if self.terms else self.const


def access_bytes(opcode_modifiers: tuple[str, ...]) -> int | None:
    """Bytes one thread's load or store touches (`.v4.b32`: 16), None when not plain."""
    count, size = 1, None
    for m in opcode_modifiers:
        if m in ("v2", "v4", "v8"):
            count = int(m[1:])
        elif m[:1] in "bsuf" and m[1:] in _BYTES:
            size = _BYTES[m[1:]]
    return None if size is None else count * size


class LoopForms:
    """The affine forms of the addresses in one counted loop (computed on demand, kept)."""

    def __init__(self, analysis: Analysis, loop: CountedLoop) -> None:
        self.analysis = analysis
        self.loop = loop
        self.body = analysis.function.body
        self.resolve = resolver(analysis.function)
        self._forms: dict[tuple[int, str], Form | None] = {}
        self._ones: dict[tuple[int, str], int | None] = {}

    @cached_property
    def _threads(self) -> int:
        """Threads per CTA at most: the product of .reqntid's or .maxntid's extents (each
        %tid component is below it), else the hardware's 1024."""
        found = _THREADS.search(self.analysis.function.head)
        product = 1
        for g in found.groups() if found else ():
            product *= int(g) if g else 1
        return product if found else 1024

    @cached_property
    def thread_limit(self) -> dict[str, int]:
        """The largest value of each thread special register."""
        return {f"%tid.{c}": self._threads - 1 for c in "xyz"} | {"%laneid": 31}

    def induction(self, reg: str) -> Form | None:
        """An induction's value at the start of iteration N: its value on entering the loop
        plus N steps (N the `('n',)` atom: the iteration, the same in every thread that runs
        it), None unless one definition enters and the step is a constant."""
        key = (-1, reg)
        if key not in self._forms:
            self._forms[key] = self._induction(reg)
        return self._forms[key]

    def _induction(self, reg: str) -> Form | None:
        analysis, loop = self.analysis, self.loop
        x = loop.induction(reg)
        entering = [d for d in analysis.defuse.entry_defs(loop.loop.header, reg) if not loop.holds(analysis, d)]
        if x is None or len(entering) != 1:
            return None
        step = Form.of(x.immediate) if x.immediate is not None else self.operand(x.update, x.step, _DEPTH)
        if step is None or step.constant is None:
            return None
        start = self._defined(entering[0], reg, _DEPTH)
        sign = -1 if x.negated and x.immediate is None else 1
        return None if start is None else start.plus(Form.of(0, {("n",): sign * step.const}))

    def address(self, i: int) -> Form | None:
        """The form of statement i's address (its one register plus the constant offset)."""
        effect = self.analysis.effects[i]
        if effect is None or effect.symbol is not None or len(effect.address) != 1:
            return None
        (reg,) = effect.address
        found = self.value(i, reg, _DEPTH)
        return None if found is None else found.plus(Form.of(effect.offset))

    @staticmethod
    def ahead(form: Form, j: int) -> Form:
        """The form at iteration N + j of a form at iteration N."""
        return form.plus(Form.of(j * dict(form.terms).get(("n",), 0)))

    # -- values -------------------------------------------------------------------------

    def operand(self, i: int, text: str, depth: int) -> Form | None:
        """The form of an operand of statement i (an immediate, a register, a special register)."""
        if _IMMEDIATE.fullmatch(text):
            return Form.of(int(text, 0))
        if text.startswith(_INVARIANT_SPECIALS):
            return Form.of(0, {("special", text): 1})
        reg = self.resolve(i, text)
        return None if reg is None else self.value(i, reg, depth)

    def value(self, i: int, reg: str, depth: int) -> Form | None:
        """The form of register `reg` just before statement i."""
        key = (i, reg)
        if key not in self._forms:
            self._forms[key] = self._value(i, reg, depth) if depth > 0 else None
        return self._forms[key]

    def _value(self, i: int, reg: str, depth: int) -> Form | None:
        analysis, loop = self.analysis, self.loop
        defs = analysis.defuse.reaching(i, reg)
        induction = loop.induction(reg)
        inside = {d for d in defs if loop.holds(analysis, d)}
        stepped = induction is not None and induction.update in defs and inside == {induction.update}
        if stepped and loop.holds(analysis, i) and len(defs) > 1 and not precedes(analysis, induction.update, i):
            return self.induction(reg)  # before the step, from the loop's entry or its back edge
        if len(defs) != 1:
            return None
        (d,) = defs
        if loop.holds(analysis, d) and not precedes(analysis, d, i):
            return None  # written later in the iteration: the previous iteration's value
        return self._defined(d, reg, depth - 1)

    def _defined(self, d: int, reg: str, depth: int) -> Form | None:
        """The form of the value statement d writes into `reg`."""
        ins, effect = self.body[d].ins, self.analysis.effects[d]
        if ins is None or effect is None or ins.guard or self.analysis.depth[d] != 0 or effect.defs != {reg}:
            return None
        inside = self.loop.holds(self.analysis, d)
        if effect.kind == "param":
            return Form.of(0, {("param", effect.symbol, effect.offset, ins.modifiers[-1]): 1})  # as loaded: its width
        if effect.kind != "pure":
            return None if inside else Form.of(0, {("def", d, False): 1})
        found = self._arithmetic(d, depth)
        if found is not None:
            return found
        if inside:
            return Form.of(0, {("varying", d): 1})
        return Form.of(0, {("def", d, self.uniform(d, depth)): 1})

    def uniform(self, d: int, depth: int) -> bool:
        """Whether the value statement d computes is the same in every thread of the CTA: a
        pure instruction of immediates, parameters, %ctaid / %nctaid / %ntid and such values."""
        ins, effect = self.body[d].ins, self.analysis.effects[d]
        if ins is None or effect is None or depth <= 0 or ins.guard:
            return False
        if effect.kind == "param":
            return True
        if effect.kind != "pure":
            return False
        for text in ins.operands[1:]:
            if _IMMEDIATE.fullmatch(text) or text.startswith(("%ctaid.", "%nctaid.", "%ntid.")):
                continue
            reg = self.resolve(d, text)
            defs = self.analysis.defuse.reaching(d, reg) if reg is not None else frozenset()
            if len(defs) != 1 or not self.uniform(next(iter(defs)), depth - 1):
                return False
        return True

    def _arithmetic(self, d: int, depth: int) -> Form | None:
        """The form of a pure instruction's result when it is affine in its operands."""
        ins = self.body[d].ins
        mods = set(ins.modifiers)
        if not mods & _INT or mods & {"cc", "sat", "hi", "f32", "f64", "f16", "bf16", "rn", "rz", "rm", "rp"}:
            return None
        ops = ins.operands[1:]

        def f(k: int) -> Form | None:
            return self.operand(d, ops[k], depth)

        base = ins.base
        if base in ("mov", "cvt") and len(ops) == 1:
            if base == "cvt" and not set(ins.modifiers) <= _INT:
                return None  # a 16- or 8-bit side: not the value modulo 2**32
            return f(0)
        if base in ("add", "sub") and len(ops) == 2:
            a, b = f(0), f(1)
            return None if a is None or b is None else a.plus(b, 1 if base == "add" else -1)
        if base == "neg" and len(ops) == 1:
            a = f(0)
            return None if a is None else a.times(-1)
        if base in ("mul", "mad") and len(ops) == (2 if base == "mul" else 3):
            a, b = f(0), f(1)
            if a is None or b is None:
                return None
            if a.constant is None and b.constant is None:
                return None
            product = b.times(a.const) if a.constant is not None else a.times(b.const)
            if base == "mul":
                return product
            c = f(2)
            return None if c is None else product.plus(c)
        if base == "shl" and len(ops) == 2 and _IMMEDIATE.fullmatch(ops[1]):
            a = f(0)
            return None if a is None else a.times(1 << int(ops[1], 0))
        if base in ("or", "xor", "and") and len(ops) == 2:
            return self._bitwise(d, base, ops, depth)
        return None

    def _bitwise(self, d: int, base: str, ops: tuple[str, ...], depth: int) -> Form | None:
        """`or`/`xor` of values with no bit in common is their sum; `and` with a mask that
        keeps every bit the value may have is the value."""
        ones = [self.ones(d, o, depth) for o in ops]
        if base == "and":
            for k in (0, 1):
                other = ops[1 - k]
                if _IMMEDIATE.fullmatch(other) and ones[k] is not None and ones[k] & ~int(other, 0) == 0:
                    return self.operand(d, ops[k], depth)
            return None
        if ones[0] is None or ones[1] is None or ones[0] & ones[1]:
            return None
        a, b = self.operand(d, ops[0], depth), self.operand(d, ops[1], depth)
        return None if a is None or b is None else a.plus(b)

    # -- bits -----------------------------------------------------------------------------

    def ones(self, i: int, text: str, depth: int) -> int | None:
        """The bits an operand of statement i may have set (None: any)."""
        if _IMMEDIATE.fullmatch(text):
            value = int(text, 0)
            return value if value >= 0 else None
        if text.startswith("%tid."):
            return (1 << (self._threads - 1).bit_length()) - 1
        if text.startswith("%ntid."):
            return (1 << self._threads.bit_length()) - 1
        if text == "%laneid":
            return 31
        reg = self.resolve(i, text)
        if reg is None or depth <= 0:
            return None
        key = (i, reg)
        if key not in self._ones:
            defs = self.analysis.defuse.reaching(i, reg)
            self._ones[key] = self._ones_defined(next(iter(defs)), depth - 1) if len(defs) == 1 else None
        return self._ones[key]

    def _ones_defined(self, d: int, depth: int) -> int | None:
        ins, effect = self.body[d].ins, self.analysis.effects[d]
        if ins is None or effect is None or ins.guard or effect.kind != "pure" or len(effect.defs) != 1:
            return None
        ops, mods = ins.operands[1:], set(ins.modifiers)
        if not mods <= _INT | {"lo", "wide"}:
            return None
        width = (1 << 64) - 1 if mods & {"s64", "u64", "b64"} else MODULUS - 1
        bits = [self.ones(d, o, depth) for o in ops]
        found: int | None = None
        if ins.base == "mov" and len(ops) == 1:
            found = bits[0]
        elif ins.base == "cvt" and len(ops) == 1 and bits[0] is not None:
            found = bits[0] if bits[0] < (1 << 31) or ins.modifiers[-1].startswith("u") else None
        elif ins.base == "and" and len(ops) == 2:
            known = [b for b in bits if b is not None]
            found = (known[0] & known[1] if len(known) == 2 else known[0]) if known else None
        elif ins.base in ("or", "xor", "add") and len(ops) == 2 and None not in bits:
            a, b = bits[0], bits[1]
            found = a | b if ins.base != "add" or not a & b else (1 << (a + b).bit_length()) - 1
        elif ins.base == "shl" and len(ops) == 2 and bits[0] is not None and _IMMEDIATE.fullmatch(ops[1]):
            found = bits[0] << int(ops[1], 0)
        elif ins.base == "shr" and len(ops) == 2 and bits[0] is not None and _IMMEDIATE.fullmatch(ops[1]):
            found = bits[0] >> int(ops[1], 0) if bits[0] < (1 << 31) or "u32" in mods or "b32" in mods else None
        return None if found is None else found & width


def disjoint_ahead(forms: LoopForms, load: int, store: int, ahead: int) -> bool:
    """Whether `load` of iteration n + j, in any thread of the CTA, never touches a byte
    `store` of iteration n writes in any thread, for j = 1 .. ahead, and for j = 0 too unless
    the load runs before the store in every iteration (a prefetched or batched load crosses
    those stores, and no others)."""
    a, b = forms.address(load), forms.address(store)
    ins_a, ins_b = forms.body[load].ins, forms.body[store].ins
    wa = access_bytes(ins_a.modifiers) if ins_a else None
    wb = access_bytes(ins_b.modifiers) if ins_b else None
    if a is None or b is None or wa is None or wb is None or not _shared_by_all(a) or not _shared_by_all(b):
        return False
    first = 1 if precedes(forms.analysis, load, store) else 0
    for j in range(first, ahead + 1):
        span = _gap_span(forms.ahead(a, j), b, forms.thread_limit)
        if span is None:
            return False
        low, high = span
        low, high = low % MODULUS, low % MODULUS + (high - low)
        if not (wb <= low and high <= MODULUS - wa):
            return False
    return True


def _shared_by_all(form: Form) -> bool:
    """Every value in the form is the CTA's (uniform) or a thread's own special register."""
    return not any(atom[0] == "varying" or (atom[0] == "def" and not atom[2]) for atom, _ in form.terms)


def _gap_span(a: Form, b: Form, limit: dict[str, int]) -> tuple[int, int] | None:
    """[lowest, highest] of a - b over every pair of threads, the CTA's values cancelling;
    None when they do not cancel."""
    own_a = {atom: k for atom, k in a.terms if atom[0] == "special" and atom[1].startswith(_THREAD)}
    own_b = {atom: k for atom, k in b.terms if atom[0] == "special" and atom[1].startswith(_THREAD)}
    rest = Form.of(a.const, {x: k for x, k in a.terms if x not in own_a}).plus(
        Form.of(b.const, {x: k for x, k in b.terms if x not in own_b}), -1
    )
    if rest.constant is None:
        return None
    low = high = rest.const
    for own, sign in ((own_a, 1), (own_b, -1)):
        for atom, k in own.items():
            signed = (k if k < MODULUS // 2 else k - MODULUS) * sign
            top = signed * limit[atom[1]]
            low, high = low + min(0, top), high + max(0, top)
    return (low, high) if high - low < MODULUS else None
