"""Prefetch copies judged against the kernel they were added to (reorder.moves.prefetch).

A prefetch copy is a global load the kernel makes anyway, issued earlier (above a barrier, a
reduction, a branch) into registers nothing reads, so that the lines are in L1 when the
kernel's own load runs. Its value is never used: what the kernel computes cannot change, so no
store or barrier between the two matters for the values. What can go wrong is only this: the
copy faults where the kernel would not (it reads an address the kernel never reads), it clobbers
a register something still reads, or its late write lands on a register after that register
was given a new value. The candidate is legal when:

- it is the original with instructions inserted and nothing else changed: every original word
  kept (control codes aside; a PC-relative one re-encoded to reach the same instruction), in
  order, every .nv.info record naming the same instructions;
- each inserted instruction is a plain integer op, a predicate compare, a constant load or a
  plain global load (no store, branch, barrier, uniform register, stack pointer);
- every block leaves the original's values in what is live after it and makes its stores
  (legality.equivalence, run on the block with its inserted ops);
- each inserted load reads a buffer the kernel never writes (pointer provenance,
  reorder.analysis.buffers; distinct parameters only under `noalias`);
- each inserted op's register groups are aligned (`misaligned`), and no code address the kernel
  holds moves (a call's return address is re-encoded and checked);
- on every path from it (loops followed round up to MAX_VISITS times, a relative call stepped
  over with what the callee may write made unknown), either a load of the kernel runs with the
  same address whenever the copy runs (the symbolic values of legality.equivalence, run along
  the path with each branch's outcome known), or the path takes an edge or leaves the kernel
  where the copy's guard is false: known from the branches taken, or decided by the value ranges
  of `decide_compare` (a thread index is never negative, so `col < n` with `n < 1` cannot hold)
  or by linear forms (`col + 3 * blockDim.x < n` cannot hold once `col + blockDim.x >= n`);
- the whole schedule passes the verifier (legality.verify, as an insertion build): a late write
  is a pending write the next writer of its register must wait for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from legality import equivalence as eq
from legality.crossings import is_global_load, may_alias, writes_global
from reorder.analysis.buffers import address_parameters
from reorder.analysis.cfg import Block, basic_blocks, control_flow_graph
from reorder.analysis.codeaddress import code_address_refusal
from reorder.analysis.ranges import (
    INT_MAX,
    INT_MIN,
    SPECIAL_RANGES,
    Range,
    call_clobbers,
    combine,
    entry_constants,
    entry_ranges,
)
from reorder.analysis.webs import guarded_live_out
from reorder.binary import branches
from reorder.binary.nvinfo import ATTR_REGCOUNT, remap_record
from reorder.sass.control import CONTROL_MASK, CONTROL_SHIFT
from reorder.sass.grow import pc_target, return_moves, with_return_address
from reorder.sass.model import Instruction, KernelCode

INSERTABLE = frozenset(
    {"IADD3", "IMAD", "VIADD", "LEA", "SHF", "LOP3", "MOV", "ISETP", "LDC", "S2R", "SEL", "PRMT", "LDG"}
)
MAX_PATHS = 64
MAX_BLOCKS_PER_PATH = 64
MAX_VISITS = 8  # times a path may enter one block (a loop's iterations followed)
_CODE = ~(CONTROL_MASK << CONTROL_SHIFT)
# Constant-bank words whose range CUDA fixes: the block's size (ntid.x, .y, .z) at c[0x0][0x0..0x8].
CONSTANT_RANGES = {("c[0x0][0x0]", 0): (1, 1024), ("c[0x0][0x4]", 0): (1, 1024), ("c[0x0][0x8]", 0): (1, 64)}


@dataclass(frozen=True)
class PrefetchMatch:
    """Where the original's instructions sit in the candidate, and which are inserted."""

    original_at: tuple[int, ...]  # candidate index of each original instruction
    inserted: tuple[int, ...]  # candidate indices of the inserted ones


def prefetch_match(original: KernelCode, candidate: KernelCode, noalias: bool | tuple[int, ...] = False):
    """The inserted prefetch copies of `candidate`, or why it is not a legal prefetch build of
    `original` (module docstring; the schedule's timing is the verifier's, asked separately)."""
    o, c = _core(original.instructions), _core(candidate.instructions)
    if candidate.arch != original.arch or candidate.kernel.name != original.kernel.name:
        return "another kernel or arch"
    if len(c) <= len(o):
        return "the candidate does not hold more instructions than the original"
    aligned = _align(o, c, original.arch)
    if isinstance(aligned, str):
        return aligned
    if any(x.opcode != "NOP" for x in candidate.instructions[len(c) :]):
        return "the candidate's text holds more than the inserted code and padding"
    for j in aligned.inserted:
        why = code_address_refusal(o, sum(1 for k in aligned.original_at if k < j), movable_returns=True)
        if why:
            return why
    new_offset_of = {x.offset: c[j].offset for x, j in zip(o, aligned.original_at)}
    for x in original.instructions[len(o) :]:
        new_offset_of.setdefault(x.offset, x.offset + 16 * len(aligned.inserted))
    o_attrs = [(a.attr, a.fmt, a.payload) for a in (remap_record(r, new_offset_of) for r in original.kernel.attrs)]
    c_attrs = [(a.attr, a.fmt, a.payload) for a in candidate.kernel.attrs]
    if _without_regcount(o_attrs) != _without_regcount(c_attrs):
        return ".nv.info records differ from the original's with offsets mapped"
    for j in aligned.inserted:
        why = insertable(c[j])
        if why:
            return f"inserted {c[j].offset:#06x} {c[j].opcode}: {why}"
    why = _values(o, c, aligned, original.arch) or _buffers(candidate, aligned, noalias)
    if why:
        return why
    for j in aligned.inserted:
        if c[j].base == "LDG":
            why = load_paths(c, j, set(aligned.inserted))
            if why:
                return f"prefetch {c[j].offset:#06x} {c[j].opcode}: {why}"
    return aligned


def inserted_only(original: KernelCode, candidate: KernelCode) -> bool:
    """Whether `candidate` holds the original's instructions in order with others between."""
    o, c = _core(original.instructions), _core(candidate.instructions)
    return len(c) > len(o) and isinstance(_align(o, c, original.arch), PrefetchMatch)


def insertable(ins: Instruction) -> str:
    """Why `ins` may not be inserted, or ''."""
    if not ins.known or ins.base not in INSERTABLE:
        return "not an op a prefetch copy may add"
    if ins.base == "LDG" and not is_global_load(ins):
        return "not a plain global load"
    if ins.base != "LDG" and (ins.access.mem_reads not in (None, "", "constant") or ins.access.mem_writes):
        return "touches memory"
    if any(w.startswith("U") or w == "R1" for w in ins.access.writes):
        return "writes a uniform register or the stack pointer"
    if ins.guard and not ins.guard.lstrip("@!").startswith("P"):
        return "guarded by a uniform predicate"
    return misaligned(ins)


def misaligned(ins: Instruction) -> str:
    """Why a register group `ins` names is not aligned to its size, or '': a 64-bit operand
    (`[R20.64]`, a wide result, an addend read with the register after it) needs an even first
    register, a 128-bit one a multiple of 4 (the symbolic values cannot see it: a pair renamed
    to R31:R32 computes the same expressions and is no pair on the hardware)."""
    touched = ins.access.reads | ins.access.writes
    tokens = [t.replace(".reuse", "") for t in ins.operands]
    named = {m for t in tokens for m in re.findall(r"(?<![A-Za-z0-9_])R(\d+)", t)}
    for t in tokens:
        for m in re.finditer(r"(?<![A-Za-z0-9_])R(\d+)(\.64)?", t):
            n = int(m.group(1))
            size = 2 if m.group(2) else 1
            while size < 4 and f"R{n + size}" in touched and str(n + size) not in named:
                size += 1
            if size > 1 and n % (2 if size == 2 else 4):
                return f"R{n} starts a {32 * size}-bit group at a register not aligned to it"
    return ""


def _core(ins: tuple[Instruction, ...]) -> tuple[Instruction, ...]:
    end = len(ins)
    while end and ins[end - 1].opcode == "NOP" and not ins[end - 1].guard:
        end -= 1
    return ins[:end]


def _without_regcount(attrs: list) -> list:
    return [a for a in attrs if a[0] != ATTR_REGCOUNT]


def _align(o: tuple[Instruction, ...], c: tuple[Instruction, ...], arch: int) -> PrefetchMatch | str:
    """Originals matched in order (word without control bits; a PC-relative one by opcode and
    guard, its target checked after); the rest inserted."""
    at: list[int] = []
    inserted: list[int] = []
    returns = return_moves(o)
    i = 0
    for j, ins in enumerate(c):
        if i < len(o) and (_same(o[i], ins, arch) or (i in returns and _same_but_immediate(o[i], ins))):
            at.append(j)
            i += 1
        else:
            inserted.append(j)
    if i < len(o):
        return f"{o[i].offset:#06x} {o[i].opcode}: not found in the candidate in order"
    offset_of = {x.offset: c[j].offset for x, j in zip(o, at)}
    for k, back in returns.items():
        if back not in offset_of or with_return_address(o[k], offset_of[back]) & _CODE != c[at[k]].word & _CODE:
            return f"{o[k].offset:#06x} {o[k].opcode}: the return address it holds does not follow its call"
    for x, j in zip(o, at):
        target = pc_target(x, arch)
        if target is None:
            continue
        if target not in offset_of:
            return f"{x.offset:#06x} {x.opcode}: its target is no instruction of the kernel"
        want = branches.encode_target(x.word, arch, c[j].offset, offset_of[target], x.base)
        if (want & _CODE) != (c[j].word & _CODE):
            return f"{x.offset:#06x} {x.opcode}: does not reach the same instruction"
    return PrefetchMatch(tuple(at), tuple(inserted))


def _same_but_immediate(x: Instruction, y: Instruction) -> bool:
    return x.opcode == y.opcode and x.guard == y.guard and x.operands[0] == y.operands[0]


def _same(x: Instruction, y: Instruction, arch: int) -> bool:
    if pc_target(x, arch) is not None:
        return x.opcode == y.opcode and x.guard == y.guard and pc_target(y, arch) is not None
    return (x.word & _CODE) == (y.word & _CODE)


def _values(o: tuple[Instruction, ...], c: tuple[Instruction, ...], m: PrefetchMatch, arch: int) -> str:
    """Each original block, run with the ops inserted into it, leaves the original's values."""
    index_of = {j: k for k, j in enumerate(m.original_at)}
    live = guarded_live_out(o)
    o_blocks = {b.start: b for b in basic_blocks(o)}
    seen: set[int] = set()
    for cb in basic_blocks(c):
        mine = [index_of[j] for j in cb.indices() if j in index_of]
        if not mine:
            return f"inserted code at {c[cb.start].offset:#06x} forms a block of its own"
        ob = o_blocks.get(mine[0])
        if ob is None or mine != list(ob.indices()):
            return f"the block at {c[cb.start].offset:#06x} is not one block of the original with code inserted"
        seen.add(ob.start)
        o_code = tuple(o[k] for k in ob.indices())
        c_code = tuple(c[j] for j in cb.indices())
        names = live.get(ob.start, frozenset())
        if pc_target(o_code[-1], arch) is not None:  # its target is _align's; its guard is a value
            names |= {o_code[-1].guard.lstrip("@!")} - {""}
            o_code, c_code = o_code[:-1], c_code[:-1]
        found = eq.block_difference(o_code, c_code, names)
        if found:
            return found[0].line()
    return "" if seen == set(o_blocks) else "some block of the original is missing"


def _buffers(candidate: KernelCode, m: PrefetchMatch, noalias: bool | tuple[int, ...]) -> str:
    """Each inserted load reads a buffer no instruction of the kernel may write."""
    c = candidate.instructions
    for j in m.inserted:
        w = kernel_writer(candidate, c[j].offset, noalias) if c[j].base == "LDG" else None
        if w is not None:
            assumed = "" if noalias else " (distinct parameters may alias: --assume-noalias)"
            return (
                f"prefetch {c[j].offset:#06x}: the kernel may write its buffer ({w.opcode} at {w.offset:#06x}){assumed}"
            )
    return ""


def kernel_writer(code: KernelCode, offset: int, noalias: bool | tuple[int, ...]) -> Instruction | None:
    """The first instruction of the kernel that may write the buffer the access at `offset` reads
    (pointer provenance, reorder.analysis.buffers; distinct parameters only under `noalias`), or None."""
    params = address_parameters(code)
    declared = None if noalias is True or not noalias else frozenset(noalias)
    mine = params.get(offset, frozenset())
    return next(
        (
            w
            for w in code.instructions
            if writes_global(w)
            and (not w.known or may_alias(mine, params.get(w.offset, frozenset()), bool(noalias), declared))
        ),
        None,
    )


# ---------------------------------------------------------------- the copy never faults


def load_paths(c: tuple[Instruction, ...], p: int, inserted: set[int]) -> str:
    """Why the load at index `p` might read an address the kernel does not, or '': on every
    path from it, a load of the kernel (not an inserted one) runs at the same address whenever
    it ran, or the path ends where its guard is false."""
    blocks = basic_blocks(c)
    block_at = {i: b for b in blocks for i in b.indices()}
    start = block_at[p]
    cfg = control_flow_graph(c)
    by_start = {b.start: b for b in blocks}
    values = eq.new_values()
    inputs = entry_ranges(c).get(start.start, {})
    clobbers = call_clobbers(c)
    paths = 0
    known = {
        r: eq.constant_value(values, bank, slot) for r, (bank, slot) in entry_constants(c).get(start.start, {}).items()
    }
    stack: list[tuple[Block, dict, dict, tuple | None, tuple[int, ...]]] = [(start, known, {}, None, ())]
    while stack:
        block, regs, facts, mine, visited = stack.pop()
        if block.start == start.start and visited:
            return "a path from it comes back to its own block before the kernel's load"
        if visited.count(block.start) >= MAX_VISITS:
            return "a path from it goes round a loop more often than this check follows"
        if len(visited) >= MAX_BLOCKS_PER_PATH:
            return "a path from it is too long to follow"
        regs = dict(regs)
        for i in block.indices():
            ins = c[i]
            if ins.opcode.startswith("CALL.REL") and i == block.end - 1:  # what the callee may write is unknown after
                for name in clobbers:
                    regs[name] = values.of(("call", ins.offset, name, len(visited)))
                continue
            if not ins.known or ins.base in ("CALL", "RET", "BRX", "JMX", "JMP"):
                return f"a path meets {ins.opcode} at {ins.offset:#06x}"
            if block is start and i < p:
                eq.step(ins, regs, values, facts)
                continue
            if ins.base == "EXIT" and i == block.end - 1:
                break
            done = eq.step(ins, regs, values, facts)
            if i == p:
                mine = done
            elif mine and i not in inserted and ins.base == "LDG" and done is not None and _covers(done, mine):
                mine = ()  # this path is proven
                break
        if mine == ():
            paths += 1
            continue
        assert mine is not None
        last = c[block.end - 1]
        outcomes = _outcomes(last, block, regs, facts, values, by_start, cfg)
        if outcomes is None:
            return f"a path leaves its block at {last.offset:#06x} in a way this check does not follow"
        for nxt, more in outcomes:
            merged = {**facts, **more}
            if more and _never(mine[1], merged, values, inputs):  # this edge is taken only where it did not run
                paths += 1
                continue
            if nxt is None:  # the path leaves the kernel
                if not _never(mine[1], merged, values, inputs):
                    return f"a path leaves the kernel at {last.offset:#06x} where it may have run"
                paths += 1
                continue
            stack.append((nxt, regs, merged, mine, visited + (block.start,)))
        if paths + len(stack) > MAX_PATHS:
            return "too many paths from it to follow"
    return ""


def _covers(theirs: tuple, mine: tuple) -> bool:
    """The kernel's load (run: its guard held or was not known) reads the copy's address whenever
    the copy ran."""
    opcode, guard, sources = theirs
    return opcode == mine[0] and sources == mine[2] and guard in (None, mine[1])


def _outcomes(last: Instruction, block: Block, regs: dict, facts: dict, values, by_start, cfg):
    """[(next block or None for leaving the kernel, facts that hold on that edge)], or None."""
    successors = sorted(cfg.successors(block.start)) if block.start in cfg else []
    if last.base == "EXIT" or (last.base == "BRA" and last.target is not None):
        dest = None if last.base == "EXIT" else by_start.get(last.target // 16)  # type: ignore[operator]
        if last.base == "BRA" and dest is None:
            return None
        if not last.guard:
            return [(dest, {})]
        taken, fallthrough = _split(_guard_value(last.guard, regs, values), facts)
        out = [(dest, taken)] if taken is not None else []
        if fallthrough is not None and block.end in by_start:
            out.append((by_start[block.end], fallthrough))
        return out
    if last.opcode.startswith("CALL.REL"):
        return [(by_start[block.end], {})] if block.end in by_start else None
    if last.base in ("BRA", "BRX", "JMX", "JMP", "CALL", "RET"):
        return None
    return [(by_start[s], {}) for s in successors]


def _guard_value(guard: str, regs: dict, values) -> tuple[bool, int]:
    name = guard.lstrip("@").lstrip("!")
    found = regs.get(name)
    return guard.startswith("@!"), values.of(("in", name)) if found is None else found


def _split(g: tuple[bool, int], facts: dict) -> tuple[dict | None, dict | None]:
    """The facts of the branch taken and not taken; None for an outcome the facts exclude."""
    neg, v = g
    holds = facts.get(g)
    taken = None if holds is False else {(neg, v): True, (not neg, v): False}
    other = None if holds is True else {(neg, v): False, (not neg, v): True}
    return taken, other


def _never(guard: tuple[bool, int] | None, facts: dict, values, inputs: dict[str, Range]) -> bool:
    """Whether an op under `guard` cannot have run, given the path's facts."""
    if guard is None:
        return False
    if facts.get(guard) is False:
        return True
    neg, v = guard
    decided = decide_compare(v, facts, values, inputs)
    if decided is not None:
        return decided == neg  # the op runs iff its predicate differs from `neg`
    return _excluded(v, not neg, facts, values, inputs)


# ---------------------------------------------------------------- linear forms


_TRUE_RANGE = {"GE": (0, None), "GT": (1, None), "LE": (None, 0), "LT": (None, -1), "EQ": (0, 0)}


def _difference_range(op: str, truth: bool) -> tuple[int | None, int | None] | None:
    """The range of left - right where `left op right` has truth `truth` (None: unbounded side)."""
    return _TRUE_RANGE.get(op if truth else _NOT[op])


def _excluded(v: int, truth: bool, facts: dict, values, inputs: dict) -> bool:
    """Whether the compare `v` cannot have truth `truth` on a path with these facts: for one fact
    `p ? q`, (a - b) - (p - q) is a sum of bounded terms (the same unknown bound `n` on both
    sides cancels), so a - b lies in the fact's range shifted by that sum's range."""
    cmp = _compare(values.nodes[v])
    want = None if cmp is None else _difference_range(cmp[0], truth)
    if cmp is None or want is None:
        return False
    if not all(_unwrapped(x, values, facts, inputs) for x in cmp[1:]):
        return False
    goal = _minus(_linear_operand(cmp[1], values), _linear_operand(cmp[2], values))
    if goal is None:
        return False
    for (neg, f), holds in facts.items():
        fact = _compare(values.nodes[f])
        if fact is None or f == v:
            continue
        if not all(_unwrapped(x, values, facts, inputs) for x in fact[1:]):
            continue
        known = _difference_range(fact[0], holds != neg)
        base = _minus(_linear_operand(fact[1], values), _linear_operand(fact[2], values))
        if known is None or base is None:
            continue
        rest = _minus(goal, base)
        shift = None if rest is None else _linear_range(rest, values, facts, inputs)
        if shift is None:
            continue
        lo = None if known[0] is None else known[0] + shift[0]
        hi = None if known[1] is None else known[1] + shift[1]
        if (want[1] is not None and lo is not None and lo > want[1]) or (
            want[0] is not None and hi is not None and hi < want[0]
        ):
            return True
    return False


Linear = tuple[tuple[tuple[int, int], ...], int]  # ((atom value id, coefficient), ...), constant


def _linear_operand(operand: tuple | None, values) -> Linear | None:
    if operand is None:
        return None
    if operand[0] == "k":
        return (), operand[1]
    return _linear(operand[1], values, 0)


def _linear(v: int, values, depth: int) -> Linear:
    """`v` as a sum of coefficients times atoms plus a constant, through the integer ops an
    index is built with (IADD3, IMAD.IADD, VIADD, shifts and scales by constants); anything else
    is an atom."""
    node = values.nodes[v]
    atom: Linear = (((v, 1),), 0)
    if depth > 16 or node[0] != "op" or node[2] != (0, 0) or node[1][1] is not None:
        return atom
    opcode, _, sources = node[1]
    ops = [_operand(x) for x in sources]
    if any(x is None for x in ops):
        return atom
    parts = [_linear_operand(x, values) if x[0] == "k" else _linear(x[1], values, depth + 1) for x in ops]
    if opcode == "IADD3" and len(parts) == 3 and all(x is not None for x in parts):
        return _sum(parts)  # type: ignore[arg-type]
    if opcode == "IMAD.IADD" and len(ops) == 3 and ops[1] == ("k", 1):
        return _sum([parts[0], parts[2]])  # type: ignore[list-item]
    if opcode == "VIADD" and len(ops) == 2:
        return _sum([parts[0], parts[1]])  # type: ignore[list-item]
    if opcode in ("IMAD.SHL.U32", "SHF.L.U32") and len(ops) == 3 and ops[1][0] == "k" and ops[2] == ("k", 0):
        factor = ops[1][1] if opcode == "IMAD.SHL.U32" else 1 << ops[1][1]
        return _scaled(parts[0], factor)  # type: ignore[arg-type]
    return atom


def _unwrapped(operand: tuple, values, facts: dict, inputs: dict) -> bool:
    """Whether the 32-bit value equals its linear form: a constant, a single atom, or a form
    whose range stays in 32-bit signed range."""
    form = _linear_operand(operand, values)
    if form is None:
        return False
    if not form[0] or (len(form[0]) == 1 and form[0][0][1] == 1 and form[1] == 0):
        return True
    return _linear_range(form, values, facts, inputs) is not None


def _sum(parts: list[Linear]) -> Linear:
    terms: dict[int, int] = {}
    const = 0
    for t, k in parts:
        const += k
        for a, c in t:
            terms[a] = terms.get(a, 0) + c
    return tuple(sorted((a, c) for a, c in terms.items() if c)), const


def _scaled(x: Linear, factor: int) -> Linear:
    return tuple((a, c * factor) for a, c in x[0]), x[1] * factor


def _minus(a: Linear | None, b: Linear | None) -> Linear | None:
    return None if a is None or b is None else _sum([a, _scaled(b, -1)])


def _linear_range(x: Linear, values, facts: dict, inputs: dict) -> tuple[int, int] | None:
    """The range of a linear form from its atoms' ranges (None if one is unbounded, or a term
    could leave 32-bit signed range: the sums above hold without wrapping only then)."""
    bounds = _fact_bounds(facts, values)
    lo = hi = x[1]
    for a, c in x[0]:
        r = _range(("v", a), values, bounds, inputs)
        if r is None or r[0] == INT_MIN or r[1] == INT_MAX:
            return None
        lo += min(c * r[0], c * r[1])
        hi += max(c * r[0], c * r[1])
    return lo, hi


# ---------------------------------------------------------------- value ranges


def decide_compare(v: int, facts: dict, values, inputs: dict[str, Range]) -> bool | None:
    """The truth of the predicate value `v` when it is an integer compare the value ranges
    decide (from what the expressions can hold, what the registers held where the run began,
    `inputs`, and what the path's facts bound), else None."""
    cmp = _compare(values.nodes[v])
    if cmp is None:
        return None
    op, a, b = cmp
    bounds = _fact_bounds(facts, values)
    ra, rb = _range(a, values, bounds, inputs), _range(b, values, bounds, inputs)
    if ra is None or rb is None:
        return None
    return _relation(op, ra, rb)


def _compare(node: tuple):
    """(relation, left, right) of a signed ISETP with no combine predicate; operands as
    ('v', value id) or ('k', constant)."""
    if node[0] != "op" or node[2] != (0, 0):
        return None
    opcode, guard, sources = node[1]
    if len(sources) == 4 and sources[0] == ("PT", ()):  # the discarded second result
        sources = sources[1:]
    parts = opcode.split(".")
    if parts[0] != "ISETP" or guard is not None or len(sources) != 3 or parts[-1] != "AND":
        return None
    if sources[2] != ("PT", ()) or "U32" in parts or len(parts) != 3:
        return None
    a, b = _operand(sources[0]), _operand(sources[1])
    if a is None or b is None:
        return None
    return parts[1], a, b


def _operand(source: tuple):
    shape, vals = source
    if shape == "@" and len(vals) == 1:
        return ("v", vals[0])
    if shape == "RZ":
        return ("k", 0)
    try:
        return ("k", int(shape, 0))
    except ValueError:
        return None


def _relation(op: str, a: tuple[int, int], b: tuple[int, int]) -> bool | None:
    if op == "GE":
        return True if a[0] >= b[1] else False if a[1] < b[0] else None
    if op == "GT":
        return True if a[0] > b[1] else False if a[1] <= b[0] else None
    if op == "LT":
        return True if a[1] < b[0] else False if a[0] >= b[1] else None
    if op == "LE":
        return True if a[1] <= b[0] else False if a[0] > b[1] else None
    return None


def _fact_bounds(facts: dict, values) -> dict[int, tuple[int, int]]:
    """value id -> (low, high) that the path's facts put on it (a compare against a constant)."""
    out: dict[int, tuple[int, int]] = {}
    for (neg, v), holds in facts.items():
        cmp = _compare(values.nodes[v])
        if cmp is None:
            continue
        truth = holds != neg
        op, a, b = cmp
        if a[0] == "v" and b[0] == "k":
            bound = _bound(op if truth else _NOT[op], b[1])
            target = a[1]
        elif a[0] == "k" and b[0] == "v":
            bound = _bound(_SWAP[op if truth else _NOT[op]], a[1])
            target = b[1]
        else:
            continue
        if bound is not None:
            lo, hi = out.get(target, (INT_MIN, INT_MAX))
            out[target] = (max(lo, bound[0]), min(hi, bound[1]))
    return out


_NOT = {"GE": "LT", "LT": "GE", "GT": "LE", "LE": "GT", "EQ": "NE", "NE": "EQ"}
_SWAP = {"GE": "LE", "LE": "GE", "GT": "LT", "LT": "GT", "EQ": "EQ", "NE": "NE"}


def _bound(op: str, k: int) -> tuple[int, int] | None:
    """The range of x where `x op k` holds."""
    return {
        "GE": (k, INT_MAX),
        "GT": (k + 1, INT_MAX),
        "LE": (INT_MIN, k),
        "LT": (INT_MIN, k - 1),
        "EQ": (k, k),
    }.get(op)


def _range(operand: tuple, values, bounds: dict, inputs: dict, depth: int = 0) -> Range | None:
    if operand[0] == "k":
        return operand[1], operand[1]
    v = operand[1]
    found = _structural(v, values, bounds, inputs, depth)
    fact = bounds.get(v)
    if fact is None:
        return found
    if found is None:
        return fact
    lo, hi = max(found[0], fact[0]), min(found[1], fact[1])
    return (lo, hi) if lo <= hi else None


def _structural(v: int, values, bounds: dict, inputs: dict, depth: int) -> Range | None:
    """What the expression `v` can hold, for the few forms a thread index is built with."""
    if depth > 12:
        return None
    node = values.nodes[v]
    if node[0] == "in":
        return inputs.get(node[1])
    if node[0] == "cbank":
        return CONSTANT_RANGES.get((node[1], node[2]))
    if node[0] == "const":
        return (0, 0) if node[1] == "RZ" else None
    if node[0] == "sel":
        a = _range(("v", node[2]), values, bounds, inputs, depth + 1)
        b = _range(("v", node[3]), values, bounds, inputs, depth + 1)
        return None if a is None or b is None else (min(a[0], b[0]), max(a[1], b[1]))
    if node[0] != "op" or node[2] != (0, 0):
        return None
    opcode, guard, sources = node[1]
    if guard is not None:
        return None
    if opcode == "S2R" and len(sources) == 1:
        return SPECIAL_RANGES.get(sources[0][0])
    ops = [_operand(s) for s in sources]
    if any(x is None for x in ops):
        return None
    ranges = [r for r in (_range(x, values, bounds, inputs, depth + 1) for x in ops) if r is not None]
    return combine(opcode, ranges) if len(ranges) == len(ops) else None
