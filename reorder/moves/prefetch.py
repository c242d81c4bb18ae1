"""Prefetch copies: a global load issued again, early, above the barrier before it, into registers
nothing reads, so that its lines are in L1 when the kernel's own load runs.

A row kernel's second pass (normalise, scale) loads a buffer it has not read yet (the weights)
right after the reduction's barrier, and waits a full L2 round trip there. Moving the load itself
above the barrier needs its block, its loop and its registers to move too; a copy needs none of
that: the kernel's instructions keep their words and order, the copy (the load with its address
and guard work, copied word for word from the kernel with fresh registers) runs in the
dominating block before the barrier, and the kernel's load later hits L1. Its value is never
read, so no store or barrier between matters for the values; what matters is that it reads no
address the kernel does not (legality.prefetch proves it on every path) and that the buffer is
one the kernel never writes.

Which loads: global loads of a buffer the kernel never writes and has not read before the copy's
block (a buffer already read is likely in L1 or L2 already). Two placements:

- above a barrier: the highest block dominating the load's (its own, when the barrier stands in
  it) with no loop on the way and a barrier between; the copies go as early there as the values
  they read allow (`_insertion`), and copy every op of the dominator chain from there on that
  computes the load's address or guard;
- ahead in a loop (`plan_loop_prefetches`): a single-block loop's loads for its next iterations,
  at the end of the block that falls into it, the index stepped by copies of the loop's own
  increment and each copy under a copy of its own exit compare.

Registers: fresh ones above the kernel's (the copies of one iteration keep the original's layout,
so pairs stay aligned), never past what the kernel's largest launchable block allows
(`register_limit`); predicates that are dead there. The copies' loads and constant loads share
one scoreboard, which every EXIT waits for. A call's return address is re-encoded when copies
precede it (reorder.sass.grow); any other code address refuses the insertion.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import networkx as nx

from legality.crossings import is_global_load
from legality.prefetch import insertable, kernel_writer
from reorder.analysis.buffers import address_parameters
from reorder.analysis.cfg import ENDS_BLOCK, Block, basic_blocks, control_flow_graph
from reorder.analysis.codeaddress import code_address_refusal
from reorder.analysis.webs import guarded_live_out
from reorder.base.errors import NotApplicable
from reorder.binary.cubin import RESERVED_REGISTERS
from reorder.binary.nvinfo import ATTR_MAX_THREADS, ATTR_REQNTID
from reorder.sass.control import ControlCode
from reorder.sass.grow import Insertion, regcount_for
from reorder.sass.model import Instruction, KernelCode, highest_register
from reorder.sass.rename import OperandRename, rename_words

SCOREBOARD = 5


@dataclass(frozen=True)
class PrefetchPlan:
    """The words to insert before instruction `before`, and what they copy."""

    before: int
    words: tuple[int, ...]
    loads: tuple[int, ...]  # offsets of the kernel's loads copied
    regcount: int


def plan_prefetches(code: KernelCode, noalias: bool | tuple[int, ...]) -> list[PrefetchPlan]:
    """One plan per dominating block that receives copies (module docstring)."""
    ins = code.instructions
    blocks = basic_blocks(ins)
    cfg = control_flow_graph(ins)
    if 0 not in cfg:
        return []
    idom = nx.immediate_dominators(cfg, 0)
    looped = _in_cycles(cfg)
    block_of = {i: b for b in blocks for i in b.indices()}
    by_start = {b.start: b for b in blocks}
    params = address_parameters(code)
    chosen: dict[int, list[int]] = {}  # dominator start -> load indices
    for i, x in enumerate(ins):
        if not _unwritten(code, i, noalias):
            continue
        dom = _dominator(cfg, idom, looped, i, block_of, by_start, ins)
        if dom is None or _read_before(ins, cfg, dom, params[x.offset], params):
            continue
        chosen.setdefault(dom, []).append(i)
    next_reg = max(highest_register(ins) + 1, code.kernel.regcount)
    plans: list[PrefetchPlan] = []
    for dom, loads in sorted(chosen.items()):
        plan = _plan(code, by_start[dom], loads, idom, block_of, next_reg)
        if plan is not None and code_address_refusal(ins, plan.before, movable_returns=True) is None:
            plans.append(plan)
            next_reg = plan.regcount - RESERVED_REGISTERS
    return plans


def _unwritten(code: KernelCode, i: int, noalias: bool | tuple[int, ...]) -> bool:
    """Whether instruction `i` is a plain global load of a known buffer the kernel never writes."""
    x = code.instructions[i]
    return (
        is_global_load(x)
        and bool(address_parameters(code).get(x.offset))
        and kernel_writer(code, x.offset, noalias) is None
    )


def _in_cycles(cfg: nx.DiGraph) -> frozenset[int]:
    out: set[int] = set()
    for comp in nx.strongly_connected_components(cfg):
        if len(comp) > 1 or any(cfg.has_edge(n, n) for n in comp):
            out |= comp
    return frozenset(out)


def _dominator(cfg, idom, looped, load: int, block_of, by_start, ins) -> int | None:
    """The highest block dominating the load's (its own included, when a barrier stands in it
    before the load) outside every loop, with no loop on the paths to it and a barrier between it
    and the load; None if there is none."""
    start = block_of[load].start
    best = start if start not in looped and any(ins[i].base == "BAR" for i in range(start, load)) else None
    d = idom.get(start)
    while d is not None and d != start:
        if d in looped:
            break
        between = _between(cfg, d, start)
        if between & looped:
            break
        if best is not None or any(ins[i].base == "BAR" for b in between | {d} for i in by_start[b].indices()):
            best = d
        nxt = idom.get(d)
        if nxt == d:
            break
        d = nxt
    return best


def _between(cfg: nx.DiGraph, top: int, bottom: int) -> set[int]:
    """Blocks on some path from `top` to `bottom`, both excluded."""
    down = nx.descendants(cfg, top)
    up = nx.ancestors(cfg, bottom)
    return (down & up) - {top, bottom}


def _read_before(ins, cfg, dom: int, mine: frozenset[int], params) -> bool:
    """Whether a global load of one of these buffers can run before the block at `dom`."""
    above = nx.ancestors(cfg, dom)
    blocks = {b.start: b for b in basic_blocks(ins)}
    return any(
        is_global_load(ins[i]) and params.get(ins[i].offset, frozenset()) & mine
        for s in above
        for i in blocks[s].indices()
    )


def _chain(idom, dom: int, start: int) -> list[int]:
    """Block starts from `dom` down the dominator tree to `start`, both included."""
    out = [start]
    while out[-1] != dom:
        out.append(idom[out[-1]])
    return out[::-1]


class _Registers:
    """Fresh registers above the kernel's: the loads' (4-aligned, first) below the rest, so the
    count grows by what the copies need and little more."""

    def __init__(self, start: int, load_words: int) -> None:
        self.wide = (start + 3) // 4 * 4
        self.narrow = self.wide + load_words
        self.top = self.narrow

    def take(self, width: int, load: bool) -> int:
        if load:
            base = (self.wide + _span(width) - 1) // _span(width) * _span(width)
            self.wide = base + width
            return base
        base = (self.narrow + width - 1) // width * width if width > 1 else self.narrow
        self.narrow = base + width
        self.top = max(self.top, self.narrow)
        return base


def _span(width: int) -> int:
    """A value's register alignment: 1, 2, or 4 (a 128-bit load)."""
    return 1 if width <= 1 else 2 if width == 2 else 4


def register_limit(code: KernelCode) -> int:
    """The most registers a build may use without lowering the largest block the kernel can be
    launched with: the block size it declares (REQNTID, MAX_THREADS) when it declares one, else
    the limit its register count already keeps (64 registers: 1024 threads; 128: 512)."""
    regcount = code.kernel.regcount
    declared = [a.words() for a in code.kernel.attrs if a.attr in (ATTR_REQNTID, ATTR_MAX_THREADS)]
    if declared and len(declared[0]) == 3:
        x, y, z = declared[0]
        threads = max(1, x * y * z)
        per_thread = 65536 // ((threads + 31) // 32 * 32)
        return max(regcount, 255 if per_thread >= 256 else per_thread // 8 * 8)
    return 64 if regcount <= 64 else 128 if regcount <= 128 else 255


def _plan(code: KernelCode, dom: Block, loads: list[int], idom, block_of, next_reg: int) -> PrefetchPlan | None:
    """The copies of as many of `loads` (in order) as fit under the register limit."""
    for n in range(len(loads), 0, -1):
        plan = _plan_some(code, dom, loads[:n], idom, block_of, next_reg)
        if plan is not None and plan.regcount <= register_limit(code):
            return plan
    return None


def _plan_some(code: KernelCode, dom: Block, loads: list[int], idom, block_of, next_reg: int) -> PrefetchPlan | None:
    ins = code.instructions
    live = guarded_live_out(ins)
    copies: list[tuple[int, dict[str, str], dict[str, str]]] = []  # (index, its writes renamed, its reads renamed)
    slices = {i: _slice(ins, _chain(idom, dom.start, block_of[i].start), i, block_of) for i in loads}
    placed = _insertion(ins, dom, {k for sl in slices.values() for k in sl}, loads, block_of)
    if placed is None:
        return None
    before, copied = placed
    free_predicates = _dead_predicates(ins, dom, before, live)
    order = sorted(copied, key=_position(ins, idom, block_of))
    regs = _Registers(next_reg, sum(_span(_dest_width(ins[k])) for k in order if ins[k].base == "LDG"))
    current: dict[str, str] = {}
    for k in order:
        x = ins[k]
        source = _copy_of(x)
        if source is not None:  # a plain copy is not repeated: its readers read its source
            current[_dest_name(x)] = current.get(source, source)
            continue
        reads = {r: current[r] for r in x.access.reads if r in current}
        mapping = _dests(x, regs, free_predicates)
        if mapping is None:
            return None
        copies.append((k, mapping, reads))
        current.update(mapping)
    words = _words(code, copies)
    if words is None:
        return None
    regcount = max(code.kernel.regcount, regcount_for(regs.top - 1))
    return PrefetchPlan(before, words, tuple(ins[i].offset for i in slices), regcount)


def _predicates(x: Instruction, free_predicates: list[int]) -> dict[str, str] | None:
    """New names for the predicates the copy of `x` writes: dead ones, taken from the list."""
    mapping = {}
    for w in sorted(x.access.writes):
        if w.startswith("P") and w != "PT":
            if not free_predicates:
                return None
            mapping[w] = f"P{free_predicates.pop(0)}"
    return mapping


def _dests(x: Instruction, regs: _Registers, free_predicates: list[int]) -> dict[str, str] | None:
    """New names for what the copy of `x` writes: fresh registers, dead predicates."""
    mapping = _predicates(x, free_predicates)
    if mapping is None:
        return None
    width = _dest_width(x)
    if width:
        base = regs.take(width, x.base == "LDG")
        dest = _dest_register(x)
        for r in range(width):
            mapping[f"R{dest + r}"] = f"R{base + r}"
    return mapping


def _words(code: KernelCode, copies: list, loads_last: bool = True) -> tuple[int, ...] | None:
    """The copies' words, loads last (nothing among the copies reads them, so their guards and
    addresses are ready when they issue), with starting control codes the stall cut then trims."""
    ins = code.instructions
    words = []
    ordered = copies
    if loads_last:
        ordered = [c for c in copies if ins[c[0]].base != "LDG"] + [c for c in copies if ins[c[0]].base == "LDG"]
    for k, mapping, reads, *guard in ordered:
        x = ins[k]
        word = _renamed(code, x, mapping, reads)
        if word is not None and guard:
            word = _guarded(code, x, word, guard[0].replace(guard[0].lstrip("@!"), reads[guard[0].lstrip("@!")]))
        if word is None:
            return None
        variable = x.base in ("LDG", "LDC", "S2R")
        ctrl = ControlCode(
            stall=2 if x.base == "LDG" else 1 if variable else 15,
            yield_bit=0,
            wbar=SCOREBOARD if variable else 7,
            rbar=7,
            wait=0,
            reuse=0,
        )
        words.append(ctrl.apply(word))
    return tuple(words)


def _slice(ins, chain: list[int], load: int, block_of) -> list[int]:
    """Indices of the ops on the dominator chain before `load` that compute its address and guard,
    and the load itself (which of them are copied and which are read where they are is the
    insertion point's choice)."""
    blocks = {b.start: b for b in basic_blocks(ins)}
    seq = []
    for s in chain:
        for k in blocks[s].indices():
            if s == block_of[load].start and k >= load:
                break
            seq.append(k)
    needed = set(ins[load].access.reads) - {"PT", "RZ"}
    out = [load]
    for k in reversed(seq):
        x = ins[k]
        if x.access.writes & needed:
            out.append(k)
            needed = (needed - x.access.writes) | (set(x.access.reads) - {"PT", "RZ"})
    return sorted(out)


def _insertion(ins, dom: Block, ops: set[int], loads: list[int], block_of) -> tuple[int, set[int]] | None:
    """Where in `dom` the copies go and which slice ops they copy: as early as possible, after every
    slice op of `dom` a copy may not be (it stays and its result is read) and after every write
    in `dom` of a register a copied op reads from before the copies, so that register holds there
    what the op reads where it is; every slice op from there on is copied. None if that leaves no
    room, or an op in a later block may not be copied."""
    end = min([k for k in loads if block_of[k].start == dom.start] + [dom.end - 1])
    before = dom.start + 1
    while before < end:
        copied = sorted(k for k in ops if block_of[k].start != dom.start or k >= before)
        stay = [k for k in copied if ins[k].base != "LDG" and (ins[k].guard or insertable(ins[k]))]
        if any(block_of[k].start != dom.start for k in stay):
            return None
        if stay:
            before = max(stay) + 1
            continue
        conflicts = []
        made: set[str] = set()
        for k in copied:
            leaf = set(ins[k].access.reads) - made - {"PT", "RZ"}
            stop = k if block_of[k].start == dom.start else dom.end
            conflicts += [i for i in range(before, stop) if ins[i].access.writes & leaf]
            made |= ins[k].access.writes
        if not conflicts:
            return before, set(copied)
        before = max(conflicts) + 1
    return None


def _dead_predicates(ins, block: Block, at: int, live) -> list[int]:
    """Predicates no instruction from index `at` of `block` on can read before writing them."""
    alive = _alive_at(ins, block, at, live)
    return [p for p in range(7) if f"P{p}" not in alive]


def _alive_at(ins, block: Block, at: int, live) -> frozenset[str]:
    """Names some instruction from index `at` of `block` on may read before writing them: a
    backward scan from the block's live-out (a guarded write kills nothing; its guard is read)."""
    alive = set(live.get(block.start, frozenset()))
    for k in range(block.end - 1, at - 1, -1):
        x = ins[k]
        if not x.guard:
            alive -= x.access.writes
        alive |= x.access.reads
        if x.guard:
            alive.add(x.guard.lstrip("@!"))
    return frozenset(alive)


def _position(ins, idom, block_of):
    """Sort key: program order along the chain (a block's instructions in order; blocks by depth
    in the dominator tree)."""

    def depth(start: int) -> int:
        n = 0
        while idom.get(start, start) != start:
            start = idom[start]
            n += 1
        return n

    return lambda k: (depth(block_of[k].start), k)


def _copy_of(x: Instruction) -> str | None:
    """The register a plain unguarded 32-bit copy reads, else None."""
    ops = [t.replace(".reuse", "") for t in x.operands]
    if x.guard or x.opcode != "MOV" or len(ops) != 2:
        return None
    return ops[1] if re.fullmatch(r"R\d+", ops[0]) and re.fullmatch(r"R\d+", ops[1]) else None


def _dest_name(x: Instruction) -> str:
    return x.operands[0].replace(".reuse", "")


def _dest_width(x: Instruction) -> int:
    regs = sorted(int(w[1:]) for w in x.access.writes if w.startswith("R") and w[1:].isdigit())
    return len(regs)


def _dest_register(x: Instruction) -> int:
    return min(int(w[1:]) for w in x.access.writes if w.startswith("R") and w[1:].isdigit())


def _aligned(n: int, width: int) -> int:
    step = 4 if width > 2 else width
    return (n + step - 1) // step * step


def _renamed(code: KernelCode, x: Instruction, dests: dict[str, str], reads: dict[str, str]) -> int | None:
    """`x`'s word with its written registers and its reads of earlier copies renamed."""
    from legality.equivalence import dest_count

    renames = []
    tokens = [t.replace(".reuse", "") for t in x.operands]
    written = dest_count(x)
    for k, token in enumerate(tokens):
        table = dests if k < written else reads
        for m in re.finditer(r"(?<![A-Za-z0-9_])(R|P)(\d+)(?![0-9])", token):
            name = m.group(0)
            if name in table and table[name] != name:
                renames.append(OperandRename(x.offset, k, int(m.group(2)), int(table[name][1:]), m.group(1)))
    wide = reads
    guard = x.guard.lstrip("@!")
    if guard in wide and wide[guard] != guard:
        renames.append(OperandRename(x.offset, -1, int(guard[1:]), int(wide[guard][1:]), "P"))
    if not renames:
        return x.word
    try:
        return rename_words({x.offset: x}, renames, code.arch)[x.offset]
    except Exception:  # noqa: BLE001 - a word the renamer cannot rewrite: no copy
        return None


def plan_loop_prefetches(
    code: KernelCode,
    noalias: bool | tuple[int, ...],
    iterations: int,
    after: list[PrefetchPlan] = (),  # type: ignore[assignment]
) -> list[PrefetchPlan]:
    """Copies of a single-block loop's loads for its next `iterations` - 1 iterations, at the end
    of the block that falls into it: the iteration-k copy steps the loop's induction register k
    times with copies of its own increment, computes the address with copies of the loop's own
    ops, and runs under the loop's own exit compare on that value (iteration k runs)."""
    from reorder.moves.peel import single_block_loops

    ins = code.instructions
    if iterations < 2:
        return []
    cfg = control_flow_graph(ins)
    blocks = basic_blocks(ins)
    block_of = {i: b for b in blocks for i in b.indices()}
    params = address_parameters(code)
    live = guarded_live_out(ins)
    next_reg = max([highest_register(ins) + 1, code.kernel.regcount] + [p.regcount - RESERVED_REGISTERS for p in after])
    plans = []
    for loop in single_block_loops(ins):
        if loop.start == 0 or set(cfg.predecessors(loop.start)) != {block_of[loop.start - 1].start, loop.start}:
            continue
        before = block_of[loop.start - 1]
        if (
            ins[before.end - 1].base in ENDS_BLOCK
            or code_address_refusal(ins, loop.start, movable_returns=True) is not None
        ):
            continue
        loads = [
            i
            for i in loop.indices()
            if _unwritten(code, i, noalias) and not _read_before(ins, cfg, before.start, params[ins[i].offset], params)
        ]
        for n in range(iterations, 1, -1):
            plan = _loop_plan(code, loop, before, loads, n, live, next_reg)
            if plan is not None and plan.regcount <= register_limit(code):
                plans.append(plan)
                next_reg = plan.regcount - RESERVED_REGISTERS
                break
    return plans


_STEP = {"IMAD.IADD": (2, 0), "IADD3": None, "VIADD": (1, None)}


def _induction(ins, loop: Block) -> tuple[int, str] | None:
    """(index, register) of the loop's one increment of a register by a loop-invariant step."""
    written = [w for i in loop.indices() for w in ins[i].access.writes]
    found = None
    for i in loop.indices():
        x = ins[i]
        ops = [t.replace(".reuse", "") for t in x.operands]
        if x.guard or len(ops) < 3 or not re.fullmatch(r"R\d+", ops[0]):
            continue
        r = ops[0]
        if x.opcode == "IMAD.IADD" and len(ops) == 4 and ops[3] == r and ops[2] == "0x1":
            step = ops[1]
        elif x.opcode == "IADD3" and len(ops) == 4 and ops[3] == "RZ" and r in ops[1:3]:
            step = ops[2] if ops[1] == r else ops[1]
        elif x.opcode == "VIADD" and len(ops) == 3 and ops[1] == r:
            step = ops[2]
        else:
            continue
        if written.count(r) != 1 or step in written or step == r:
            continue
        if found is not None:
            return None
        found = (i, r)
    return found


def _loop_plan(code, loop: Block, before: Block, loads: list[int], n: int, live, next_reg: int):
    ins = code.instructions
    found = _induction(ins, loop)
    back = ins[loop.end - 1]
    guard = back.guard.lstrip("@!")
    if found is None or not guard.startswith("P") or not loads:
        return None
    inc, r = found
    compares = [i for i in range(inc + 1, loop.end - 1) if guard in ins[i].access.writes]
    if len(compares) != 1 or ins[compares[0]].guard or ins[compares[0]].base != "ISETP":
        return None
    cmp = compares[0]
    invariant = {w for i in loop.indices() for w in ins[i].access.writes}
    if (set(ins[cmp].access.reads) - {r, "PT", "RZ"}) & invariant:
        return None
    slices = {}
    for load in loads:
        needed = set(ins[load].access.reads) - {"PT", "RZ"}
        out = []
        for k in range(load - 1, loop.start - 1, -1):
            x = ins[k]
            if not (x.access.writes & needed):
                continue
            if k == inc or x.guard or insertable(x) or x.base == "LDG":
                break
            out.append(k)
            needed = (needed - x.access.writes) | (set(x.access.reads) - {"PT", "RZ"})
        else:
            if load < inc and not ((needed - {r}) & invariant):
                slices[load] = sorted(out)
    if not slices:
        return None
    dead = _dead_predicates(ins, loop, loop.start, live)  # what the loop may read first is live
    top = [next_reg]
    copies = []
    previous = r
    for _ in range(1, n):
        step = {r: f"R{top[0]}"}
        top[0] += 1
        copies.append((inc, step, {r: previous}))
        current = {r: step[r]}
        previous = step[r]
        when = _shifted(ins[cmp], 0, dead)
        if when is None:
            return None
        copies.append((cmp, when, dict(current)))
        for load, ops in slices.items():
            shift = _shift(ins, ops + [load], top)
            local = dict(current)
            carries: dict[str, str] = {}  # predicates this slice's ops write: free again once overwritten or done
            for k in ops:
                reads = {x: local[x] for x in ins[k].access.reads if x in local}
                for name in ins[k].access.writes & set(carries):
                    dead.insert(0, int(carries.pop(name)[1:]))
                mapping = _shifted(ins[k], shift, dead)
                if mapping is None:
                    return None
                copies.append((k, mapping, reads))
                local.update(mapping)
                carries.update({w: new for w, new in mapping.items() if w.startswith("P")})
            mapping = _shifted(ins[load], shift, dead)
            if mapping is None:
                return None
            reads = {x: local[x] for x in ins[load].access.reads if x in local}
            reads[guard] = when[guard]
            copies.append((load, mapping, reads, back.guard))  # type: ignore[arg-type]
            dead[:0] = [int(p[1:]) for p in carries.values()]
        dead.insert(0, int(when[guard][1:]))  # the loads under it are placed before the next iteration's copies
    words = _words(code, copies, loads_last=False)
    if words is None:
        return None
    regcount = max(code.kernel.regcount, regcount_for(top[0] - 1))
    return PrefetchPlan(loop.start, words, tuple(ins[i].offset for i in slices), regcount)


def _shift(ins, ops: list[int], top: list[int]) -> int:
    """A multiple of 4 that moves every register these ops write above `top[0]` (raised past
    them): the copies keep the original's register layout, so a 64-bit pair made by two ops or a
    128-bit load stays aligned."""
    written = [int(w[1:]) for k in ops for w in ins[k].access.writes if w.startswith("R") and w[1:].isdigit()]
    if not written:
        return 0
    shift = ((top[0] - min(written) // 4 * 4) + 3) // 4 * 4
    top[0] = max(written) + shift + 1
    return shift


def _shifted(x: Instruction, shift: int, free_predicates: list[int]) -> dict[str, str] | None:
    """New names for what the copy of `x` writes: registers moved by `shift`, dead predicates."""
    mapping = _predicates(x, free_predicates)
    if mapping is None:
        return None
    if shift:
        mapping |= {w: f"R{int(w[1:]) + shift}" for w in x.access.writes if w.startswith("R") and w[1:].isdigit()}
    return mapping


def _guarded(code: KernelCode, x: Instruction, word: int, guard: str) -> int | None:
    """`word` (an unguarded op) under `guard` (`@P3`, `@!P3`): the guard field [14:12] and its
    negation bit 15, checked by disassembling the result."""
    from reorder.sass.rename import disassemble_guarded

    if x.guard:
        return None
    p = int(guard.lstrip("@!")[1:])
    new = (word & ~(0xF << 12)) | (p << 12) | (int(guard.startswith("@!")) << 15)
    listed = disassemble_guarded([new], code.arch)
    if not listed or listed[0][0] != guard or listed[0][1].replace(".reuse", "") != x.opcode:
        return None
    return new


def with_prefetches(code: KernelCode, plans: list[PrefetchPlan]):
    """The grown cubin's bytes: the copies inserted, REGCOUNT raised, and every EXIT waiting for
    the copies' scoreboard."""
    from reorder.binary.cubin import parse_cubin
    from reorder.sass.grow import grow_kernel
    from reorder.sass.model import decode_kernel
    from reorder.sass.writer import patch_kernel

    if not plans:
        raise NotApplicable(f"{code.kernel.name}: no load to prefetch above a barrier or ahead in a loop")
    regcount = max(p.regcount for p in plans)
    grown = grow_kernel(code, [Insertion(p.before, p.words) for p in plans], regcount=regcount)
    after = decode_kernel(parse_cubin(grown.data, f"prefetched {code.kernel.name}"), code.kernel.name)
    waited = tuple(
        x.with_ctrl(x.ctrl.with_(wait=x.ctrl.wait | (1 << SCOREBOARD))) if x.base == "EXIT" else x
        for x in after.instructions
    )
    data = patch_kernel(after.cubin, after.kernel, waited)
    return decode_kernel(parse_cubin(data, f"prefetched {code.kernel.name}"), code.kernel.name)


def note(code: KernelCode, plans: list[PrefetchPlan]) -> str:
    loads = ", ".join(f"{o:#06x}" for p in plans for o in p.loads)
    at = ", ".join(f"{code.instructions[p.before].offset:#06x}" for p in plans)
    regs = max(p.regcount for p in plans)
    return f"prefetch copies of the loads at {loads}, inserted before {at} (registers up to {regs})"
