"""Do a candidate's blocks compute what the original's compute? Symbolic values, block by block.

The verifier checks timing: when a result is ready, when a pipe is free. It cannot see a rename
that reads the wrong register. (Three slice batches of Triton kernels verified legal and were
wrong on an H200, 2026-11-30; this check found their renames right, and the cause was a timing
rule the verifier lacked: legality.verify's reads without a read scoreboard.) This is the
other check: every move stays inside its basic block, so each block of the candidate must leave
the same values, in the same registers, for whatever reads them after the block, and make the
same stores.

Each block is run symbolically from the same unknown inputs: a register holds an expression
(the op that wrote it, its guard, the expressions of what it read), so names do not matter, only
where each value came from. A guarded write keeps the old value under the complementary guard.
Loads are values of their address (the moves' alias rules decide which loads may pass which
stores: that is the dependency graph's job, not this one's); stores are compared as a multiset of
(op, address, value). Control codes are ignored. An instruction the tool does not read (not
`known`) makes the block unjudgeable: its difference is reported, never assumed equal.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from legality.blockmoves import MovedLoad, moved_loads, path_guard
from reorder.analysis.cfg import basic_blocks
from reorder.analysis.ranges import constant_operand
from reorder.analysis.webs import guarded_live_out
from reorder.sass.model import Instruction

_REGISTER = re.compile(r"\b(UR\d+|UP\d+|R\d+|P\d+)\b")
_CONSTANT = frozenset({"RZ", "PT", "URZ", "UPT"})


@dataclass(frozen=True)
class Difference:
    """One block whose candidate does not provably compute what the original computes."""

    block: int  # the original block's first instruction offset
    what: str

    def line(self) -> str:
        return f"dataflow   block {self.block:#06x}: {self.what}"


def _operands(ins: Instruction) -> tuple[str, ...]:
    """The operands without reuse flags (a move may drop one: it changes no value)."""
    return tuple(t.replace(".reuse", "") for t in ins.operands)


def _dest_tokens(ins: Instruction) -> int:
    """How many leading operands are written. An operand read too (IADD3 R6, P3, R6) is a
    source: a name counts once. A constant (PT, RZ) in front of a written register is a
    discarded output (SHFL.BFLY PT, R3, R3, ...; IADD3 RZ, P0, R11, ...)."""
    operands = _operands(ins)
    seen: set[str] = set()
    count = 0
    for k, token in enumerate(operands):
        if token in _CONSTANT:
            following = operands[k + 1] if k + 1 < len(operands) else ""
            if following in ins.access.writes and following not in seen:
                count += 1
                continue
            break
        names = _REGISTER.findall(token)
        if len(names) != 1 or token.strip("-!|") != names[0] or names[0] not in ins.access.writes or names[0] in seen:
            break
        seen.add(names[0])
        if names[0].startswith("R"):  # a wide result's upper registers are written, not named: not operands
            n = int(names[0][1:])
            seen.update(f"R{n + k}" for k in (1, 2, 3) if f"R{n + k}" in ins.access.writes)
        count += 1
    return count


def dest_count(ins: Instruction) -> int:
    """How many leading operands of `ins` are written (`_dest_tokens`)."""
    return _dest_tokens(ins)


def _width_regs(name: str, ins: Instruction, named: set[str], token: str = "") -> list[str]:
    """`name` and the registers after it the op reads as one wide operand (R10 as a 64-bit addend;
    an address `[R8.64]` is R8 and R9 even where R9 is also named, as the load's destination)."""
    out = [name]
    if not name.startswith("R"):
        return out
    n = int(name[1:])
    if f"{name}.64" in token and name != "RZ":
        return [name, f"R{n + 1}"]
    for k in (1, 2, 3):
        nxt = f"R{n + k}"
        if nxt in ins.access.reads and nxt not in named:
            out.append(nxt)
        else:
            break
    return out


class _Values:
    """Hash-consed symbolic values: each distinct expression is one int, made of ints, so two
    values compare in one step however deep they are. (As nested tuples, a compensated sum's
    expressions double at every step: kahan_sum_f64's blocks took minutes inside one tuple
    comparison, a C call that no SIGTERM interrupts.)"""

    def __init__(self) -> None:
        self.ids: dict[tuple, int] = {}
        self.nodes: list[tuple] = []

    def of(self, node: tuple) -> int:
        found = self.ids.get(node)
        if found is None:
            found = self.ids[node] = len(self.nodes)
            self.nodes.append(node)
        return found


def _step(
    ins: Instruction, regs: dict[str, int], stores: Counter, values: _Values, facts: dict | None = None
) -> tuple | None:
    """Run `ins` on the symbolic registers; its op (opcode, guard value, sources), or None when
    the path's facts say it does not run."""

    def value(name: str) -> int:
        if name in _CONSTANT:
            return values.of(("const", name))
        found = regs.get(name)
        return values.of(("in", name)) if found is None else found

    bank = constant_operand(ins)
    if bank is not None and not ins.guard:  # the constant bank does not change while the kernel runs
        for name in sorted(ins.access.writes):
            base = _operands(ins)[0]
            regs[name] = values.of(("cbank", bank, int(name.lstrip("UR")) - int(base.lstrip("UR"))))
        return (ins.opcode, None, (("cbank", (values.of(("cbank", bank, 0)),)),))
    copied = _copy_source(ins)
    if copied is not None and not ins.guard:  # a copy is its source's value: names do not matter
        regs[_operands(ins)[0]] = value(copied)
        return ("MOV", None, (("@", (regs[_operands(ins)[0]],)),))
    dests = _dest_tokens(ins)
    operands = _operands(ins)
    named = {n for token in operands for n in _REGISTER.findall(token)}
    sources = []
    for token in operands[dests:]:
        names = _REGISTER.findall(token)
        shape = _REGISTER.sub("@", token)
        sources.append((shape, tuple(value(r) for n in names for r in _width_regs(n, ins, named, token))))
    guard = ins.guard.lstrip("@")
    guard_value = (guard.startswith("!"), value(guard.lstrip("!"))) if guard else None
    if facts and guard_value in facts:  # a guard whose truth the path decides (moved_block_differences)
        if not facts[guard_value]:
            return None
        guard_value = None
    if guard_value is not None:  # the op runs only under its guard: what a write under it left is what it reads
        sources = [(shape, tuple(_under(guard_value, v, values) for v in vals)) for shape, vals in sources]
    op = (ins.opcode, guard_value, tuple(sources))
    if not ins.access.writes:
        stores[op] += 1
        return op
    dest_bases = [t for t in operands[:dests] if t not in _CONSTANT]
    for name in sorted(ins.access.writes):
        if name in _CONSTANT:
            continue
        slot = _slot(name, dest_bases)
        new = values.of(("op", op, slot))
        regs[name] = values.of(("sel", guard_value, new, value(name))) if guard_value else new
    return op


def new_values() -> _Values:
    """A fresh table of symbolic values (one per comparison: equal expressions get one id)."""
    return _Values()


def step(ins: Instruction, regs: dict[str, int], values: _Values, facts: dict | None = None) -> tuple | None:
    """`_step` for a caller that follows paths itself (legality.prefetch); stores are not kept."""
    return _step(ins, regs, Counter(), values, facts)


def constant_value(values: _Values, bank: str, slot: int) -> int:
    """The symbolic value of the constant-bank word `bank` (+ `slot` words)."""
    return values.of(("cbank", bank, slot))


def _copy_source(ins: Instruction) -> str | None:
    """The register a plain 32-bit copy reads (`MOV Rd, Ra`, `IMAD.MOV.U32 Rd, RZ, RZ, Ra`), else None."""
    operands = _operands(ins)
    if ins.opcode == "MOV" and len(operands) == 2:
        dest, source = operands
    elif ins.opcode == "IMAD.MOV.U32" and len(operands) == 4 and operands[1:3] == ("RZ", "RZ"):
        dest, source = operands[0], operands[3]
    else:
        return None
    if re.fullmatch(r"R\d+", dest) and re.fullmatch(r"U?R\d+", source) and dest != "RZ":
        return source
    return None


def _under(guard: tuple, v: int, values: _Values) -> int:
    """The value a reader under `guard` sees: a write under the same guard is what it sees, a
    write under the opposite guard is not."""
    while True:
        node = values.nodes[v]
        if node[0] != "sel":
            return v
        _, g, new, old = node
        if g == guard:
            v = new
        elif g == (not guard[0], guard[1]):
            v = old
        else:
            return v


def _slot(name: str, dest_bases: list[str]) -> tuple[int, int]:
    """Which written register this is, by position: (dest operand, register within it)."""
    kind = name.rstrip("0123456789")
    for i, base in enumerate(dest_bases):
        if base.rstrip("0123456789") == kind and base[len(kind) :].isdigit():
            offset = int(name[len(kind) :]) - int(base[len(kind) :])
            if 0 <= offset < 4:
                return (i, offset)
    return (-1, 0)  # written implicitly (no operand names it): judged by the op alone


def _run(
    block: tuple[Instruction, ...], values: _Values, facts: dict | None = None
) -> tuple[dict[str, int], Counter, list[str]]:
    regs: dict[str, int] = {}
    stores: Counter = Counter()
    unknown = [f"{i.offset:#06x} {i.opcode}" for i in block if not i.known]
    for ins in block:
        _step(ins, regs, stores, values, facts)
    return regs, stores, unknown


def block_differences(original: tuple[Instruction, ...], candidate: tuple[Instruction, ...]) -> list[Difference]:
    """Blocks of `candidate` (the original's blocks, in order) that do not leave the original's
    values in its live-out registers or make its stores. Loads moved from a block into its sole
    predecessor (reorder.moves.dominatorhoist) are judged by legality.blockmoves, the two blocks
    together; any other change of block bounds is a difference."""
    o_blocks, c_blocks = basic_blocks(original), basic_blocks(candidate)
    joined: set[int] = set()
    if [(b.start, b.end) for b in o_blocks] != [(b.start, b.end) for b in c_blocks]:
        moved = moved_loads(original, candidate)
        if isinstance(moved, str) or not moved:
            why = f": {moved}" if isinstance(moved, str) else ""
            return [Difference(0, f"the blocks differ (a move crossed a block boundary){why}")]
        joined = {m.dom for m in moved} | {m.block for m in moved}
        found = [
            Difference(original[o_blocks[k].start].offset, why)
            for k, why in moved_block_differences(original, candidate, moved)
        ]
    else:
        found = []
    live = guarded_live_out(original)
    for k, (ob, cb) in enumerate(zip(o_blocks, c_blocks)):
        if k in joined:
            continue
        o_code = tuple(original[i] for i in ob.indices())
        c_code = tuple(candidate[i] for i in cb.indices())
        found += _block_difference(o_code, c_code, live.get(ob.start, frozenset()))
    return found


def block_difference(
    o_code: tuple[Instruction, ...], c_code: tuple[Instruction, ...], live: frozenset[str]
) -> list[Difference]:
    """Whether `c_code` leaves `o_code`'s values in the registers `live` after it and makes
    its stores (one block each, the candidate's with ops inserted or reordered)."""
    return _block_difference(o_code, c_code, live)


def _block_difference(
    o_code: tuple[Instruction, ...], c_code: tuple[Instruction, ...], live: frozenset[str]
) -> list[Difference]:
    if [(i.word, i.text) for i in o_code] == [(i.word, i.text) for i in c_code]:
        return []
    values = _Values()  # one table for both: equal expressions get one id
    o_regs, o_stores, o_unknown = _run(o_code, values)
    c_regs, c_stores, _ = _run(c_code, values)
    start = o_code[0].offset
    if o_unknown and [i.text for i in o_code] != [i.text for i in c_code]:
        return [Difference(start, f"not judged: unknown op(s) {', '.join(o_unknown[:3])}")]
    found = []
    if o_stores != c_stores:
        found.append(Difference(start, "the stores differ"))
    for name in sorted(live):
        if o_regs.get(name, values.of(("in", name))) != c_regs.get(name, values.of(("in", name))):
            found.append(Difference(start, f"{name} leaves the block with another value"))
            break
    return found


def moved_block_differences(
    original: tuple[Instruction, ...], candidate: tuple[Instruction, ...], moved: list[MovedLoad]
) -> list[tuple[int, str]]:
    """(block ordinal, what differs) for each pair of blocks joined by a load that moved from a
    block L into its sole predecessor D (`moved`: legality.blockmoves.MovedLoad values). The
    threads that go on into L run D then L: both schedules, run as one sequence with L's path
    guard known true, must leave the same values in what is live after L and make the same
    stores. The threads that do not run D alone with the guard known false: the same stores and
    the same value in every register D writes in either schedule."""
    o_blocks, c_blocks = basic_blocks(original), basic_blocks(candidate)
    live = guarded_live_out(original)
    out = []
    for dom, block in sorted({(m.dom, m.block) for m in moved}):
        od, ol, cd, cl = o_blocks[dom], o_blocks[block], c_blocks[dom], c_blocks[block]
        guard = path_guard(original, od, ol)
        o_dom = tuple(original[i] for i in od.indices())
        c_dom = tuple(candidate[i] for i in cd.indices())
        if guard is None or any(not i.known for i in o_dom + c_dom):
            out.append((dom, "not judged: the blocks' branch has no predicate guard, or an op the tool cannot read"))
            continue
        values = _Values()
        o_at = _run(o_dom[:-1], values)[0].get(guard.lstrip("@!"), values.of(("in", guard.lstrip("@!"))))
        c_at = _run(c_dom[:-1], values)[0].get(guard.lstrip("@!"), values.of(("in", guard.lstrip("@!"))))
        if o_at != c_at:
            out.append((dom, f"the branch's predicate {guard.lstrip('@!')} has another value"))
            continue
        facts = {(guard.startswith("@!"), o_at): True, (not guard.startswith("@!"), o_at): False}
        o_path = o_dom + tuple(original[i] for i in ol.indices())
        c_path = c_dom + tuple(candidate[i] for i in cl.indices())
        why = _path_difference(o_path, c_path, values, facts, live.get(ol.start, frozenset()))
        if why:
            out.append((block, f"for the threads that enter it: {why}"))
        other = {g: not truth for g, truth in facts.items()}
        written = frozenset().union(*(i.access.writes for i in o_dom + c_dom))
        why = _path_difference(o_dom, c_dom, values, other, written)
        if why:
            out.append((dom, f"for the threads that do not enter the next block: {why}"))
    return out


def _path_difference(o_code, c_code, values: _Values, facts: dict, names: frozenset[str]) -> str:
    o_regs, o_stores, _ = _run(o_code, values, facts)
    c_regs, c_stores, _ = _run(c_code, values, facts)
    if o_stores != c_stores:
        return "the stores differ"
    for name in sorted(names - {"PT", "RZ", "URZ", "UPT"}):
        if o_regs.get(name, values.of(("in", name))) != c_regs.get(name, values.of(("in", name))):
            return f"{name} leaves with another value"
    return ""
