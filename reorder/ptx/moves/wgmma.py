"""WgmmaAsync: keep a loop's wgmma asynchronous, with waits that make it well defined.

Why it pays. ptxas serializes every wgmma of a function (it puts a wait of 0 after each,
and says so: "C7515 ... serialized due to non wgmma instructions defining accumulator
registers of a wgmma between start and end of the pipeline stage") as soon as one path
from a wgmma to its `wgmma.wait_group 0` holds another instruction that writes an
accumulator. Triton writes such a path itself: a K loop that may run zero times is
followed by a block that starts with `wgmma.wait_group 0`, and the path that skips the
loop zeroes the accumulators on its way there. Nothing is pending on that path, so the
wait means nothing there, but ptxas cannot tell, and the whole K loop then runs one
tensor-core op at a time (the fused feed-forward of reorder/suite/triton_kernels: eight
HGMMAs an iteration, each followed by `WARPGROUP.DEPBAR.LE gsb0, 0x0`).

The move, on one such wait:

1. **The exit wait moves onto the edges that need it.** The `wgmma.wait_group 0` at the top
   of a join block (or of the blocks it falls into, when only labels cut them) goes to the
   end of each predecessor on whose way out a wgmma may be pending (each must lead only to
   the join, so the end of the block is the edge), and leaves the join. On the other edges
   nothing was pending: there it waited for nothing.
2. **Register waits are made exact.** PTX makes it undefined to write a register that a
   pending wgmma reads (an A fragment or the accumulator) or to read a pending
   accumulator (a chain of wgmma of one shape on one accumulator aside). Once ptxas stops
   serializing, those rules are all that holds. Each loop holding a wgmma is simulated:
   the committed groups, the waits retiring them, iteration after iteration until its
   state repeats (so every later iteration is one already seen). An instruction that
   breaks a rule lowers the count of the last wait before it, to the number of groups
   committed after the offending one: that wait then retires it. Triton's own rule, wait
   N-1 after each of N register-fed dots, holds only when every dot has A registers of
   its own; two dots that share one A fragment (a SwiGLU's gate and up) break it, and
   only ptxas's serialization kept that harmless.

Nothing is reordered and no wait gets weaker: a wait count only goes down, and the moved
wait runs on exactly the paths where it can retire something. Shared-memory operands keep
the waits their producer gave them (Triton's multi-buffering contract, the one every
Triton GEMM that ptxas does not serialize runs on). The move refuses (NotApplicable) a
wgmma outside a straight loop (one body run block after block on every iteration: labels
such as Triton's debug marks cut it into blocks without branching), a loop entered with a
wgmma pending, a rule broken where no wait can be lowered to fix it, and a loop exit that
does not reach a wait of 0 within a few blocks of one successor each. The tensor-core ops
and their order are unchanged, so the outputs are the same bytes; the GPU checks that, and
ptxas's info line says whether it still serializes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reorder.base.errors import NotApplicable
from reorder.ptx.analyses.cfg import EXIT, Cfg
from reorder.ptx.model.effects import BRANCHES, function_effects
from reorder.ptx.model.model import Function, Module, Statement, new_instruction
from reorder.ptx.model.registers import resolver

MMA = "wgmma.mma_async"
WAIT = "wgmma.wait_group"
COMMIT = "wgmma.commit_group"
MAX_ITERATIONS = 32  # a loop's pending state repeats within a few iterations (each wait bounds it)
_COUNT = re.compile(r"(wgmma\.wait_group[\w.]*\s+)(\d+)")


@dataclass(frozen=True, slots=True)
class Mma:
    """What a wgmma reads and writes in registers: its accumulator, its A fragment (empty
    when A comes from shared memory through a descriptor) and its shape modifiers."""

    acc: frozenset[str]
    a: frozenset[str]
    shape: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Break:
    """An instruction at `at` that touches registers of the pending wgmma at `mma`, and the
    last wait before it (its statement, and how many groups were committed after the
    wgmma's group when it ran); `wait` is None when no wait lies between them."""

    at: int
    mma: int
    wait: int | None
    newer: int


def _opcode(s: Statement) -> str:
    return s.ins.opcode if s.ins is not None else ""


def wait_count(s: Statement) -> int | None:
    """N of `wgmma.wait_group N`, None for any other statement; NotApplicable for a wait whose
    count is not a number (not PTX ptxas takes: nothing is judged around it)."""
    if not _opcode(s).startswith(WAIT):
        return None
    try:
        return int(s.ins.operands[0], 0)
    except (IndexError, ValueError):
        raise NotApplicable(f"line {s.ident}: a wgmma wait without a count: {s.code[:60]!r}") from None


def _with_count(s: Statement, count: int) -> Statement:
    return s.retext(_COUNT.sub(lambda m: f"{m.group(1)}{count}", s.text, count=1))


def mma_operands(function: Function) -> dict[int, Mma]:
    """Every wgmma.mma_async of the function by statement index."""
    resolve = resolver(function)
    out = {}
    for i, s in enumerate(function.body):
        if not _opcode(s).startswith(MMA):
            continue
        ops = s.ins.operands

        def regs(operand: str, i: int = i) -> frozenset[str]:
            return frozenset(r for t in re.findall(r"%[\w$]+", operand) if (r := resolve(i, t)))

        a = regs(ops[1]) if len(ops) > 1 and ops[1].startswith("{") else frozenset()
        shape = tuple(m for m in s.ins.modifiers if m not in ("sync", "aligned"))
        out[i] = Mma(regs(ops[0]), a, shape)
    return out


def pending_out(function: Function, cfg: Cfg) -> dict[int, bool]:
    """Per block: may a wgmma be pending (issued, not retired by a wait of 0) at its end."""
    body = function.body
    out = {b.index: False for b in cfg.blocks}
    changed = True
    while changed:
        changed = False
        for b in cfg.reverse_postorder:
            state = any(out[p] for p in cfg.graph.predecessors(b) if p != EXIT)
            for i in cfg.blocks[b].instructions:
                if _opcode(body[i]).startswith(MMA):
                    state = True
                elif wait_count(body[i]) == 0:
                    state = False
            if state != out[b]:
                out[b], changed = state, True
    return out


def exit_waits(function: Function) -> list[int]:
    """Waits of 0 that start a join some of whose ways in carry no pending wgmma and write an
    accumulator (what makes ptxas serialize), and whose other ways in lead only to it. The
    wait may sit a few blocks into the join when labels only (Triton's `$L__tmp` debug marks)
    cut it: the join's fall-through chain (reorder.ptx.moves.wgmma.join_chain) counts as one block."""
    cfg = Cfg(function)
    mmas = mma_operands(function)
    if not mmas:
        return []
    accumulators = frozenset().union(*(m.acc for m in mmas.values()))
    effects = function_effects(function)
    pending = pending_out(function, cfg)
    found = []
    for block in cfg.blocks:
        preds = [p for p in cfg.graph.predecessors(block.index) if p != EXIT]
        dirty = [p for p in preds if pending[p]]
        clean = [p for p in preds if not pending[p]]
        if not dirty or not clean:
            continue
        wait = _leading_wait(function, cfg, block.index)
        if wait is None or not all(_edge_is_block_end(function, cfg, p) for p in dirty):
            continue
        if any(effects[i].defs & accumulators for p in clean for i in cfg.blocks[p].instructions if effects[i]):
            found.append(wait)
    return found


def join_chain(function: Function, cfg: Cfg, start: int) -> list[int]:
    """`start` and the blocks it falls into one after another: each next block has this one as
    its only way in and is this one's only way out, with no branch between them (a label
    that nothing jumps to cut them apart)."""
    chain = [start]
    while len(chain) <= len(cfg.blocks):
        here = chain[-1]
        succs = list(cfg.graph.successors(here))
        if len(succs) != 1 or succs[0] == EXIT or succs[0] in chain:
            break
        last = cfg.blocks[here].terminator
        if last is not None and function.body[last].ins.base in BRANCHES:
            break
        if list(cfg.graph.predecessors(succs[0])) != [here]:
            break
        chain.append(succs[0])
    return chain


def _leading_wait(function: Function, cfg: Cfg, start: int) -> int | None:
    """The wait of 0 of the join's chain when no wgmma statement or branch comes before it."""
    for block in join_chain(function, cfg, start):
        for i in cfg.blocks[block].instructions:
            s = function.body[i]
            if wait_count(s) == 0:
                return i
            if _opcode(s).startswith("wgmma") or s.ins.base in BRANCHES:
                return None
    return None


def _join_of(function: Function, cfg: Cfg, wait: int) -> int:
    """The join block whose chain the exit wait at statement `wait` leads."""
    for block in cfg.blocks:
        if cfg.graph.in_degree(block.index) > 1 and _leading_wait(function, cfg, block.index) == wait:
            return block.index
    return cfg.block_of[wait]


def _edge_is_block_end(function: Function, cfg: Cfg, p: int) -> bool:
    """Block p has one successor and ends in no branch or an unguarded one."""
    if cfg.graph.out_degree(p) != 1:
        return False
    last = cfg.blocks[p].terminator
    ins = function.body[last].ins if last is not None else None
    return ins is None or ins.base not in BRANCHES or (ins.base == "bra" and not ins.guard)


def sink_exit_wait(function: Function, wait: int) -> Function:
    """Part 1: the wait at statement `wait` moved to the end of each predecessor that may
    carry a pending wgmma (before its branch, if it ends in one)."""
    cfg = Cfg(function)
    block = cfg.blocks[_join_of(function, cfg, wait)]
    pending = pending_out(function, cfg)
    dirty = [p for p in cfg.graph.predecessors(block.index) if p != EXIT and pending[p]]
    original = function.body[wait]
    inserts: dict[int, Statement] = {}
    for p in dirty:
        last = cfg.blocks[p].terminator
        ends_in_branch = last is not None and function.body[last].ins.base == "bra"
        at = last if ends_in_branch else cfg.blocks[p].end
        inserts[at] = new_instruction(original.code, f"{original.ident}e{p}")
    body = []
    for i, s in enumerate(function.body):
        if i in inserts:
            body.append(inserts[i])
        if i != wait:
            body.append(s)
    return function.with_body(body)


def loop_breaks(function: Function) -> list[Break]:
    """Every broken register rule of every loop that holds a wgmma (see the module
    docstring); NotApplicable where the simulation cannot judge."""
    cfg = Cfg(function)
    mmas = mma_operands(function)
    effects = function_effects(function)
    pending = pending_out(function, cfg)
    in_loops = set()
    breaks: list[Break] = []
    for loop in cfg.loops:
        holds = [i for b in loop.blocks for i in cfg.blocks[b].instructions if i in mmas]
        if not holds:
            continue
        chain = straight_chain(cfg, loop)
        header = loop.header
        if any(pending[p] for p in cfg.graph.predecessors(header) if p not in loop.blocks and p != EXIT):
            raise NotApplicable(f"{function.name}: the wgmma loop at block {header} is entered with a wgmma pending")
        in_loops |= set(holds)
        order = [i for b in chain for i in cfg.blocks[b].instructions]
        exits = [e for e in cfg.graph.successors(chain[-1]) if e not in loop.blocks]
        breaks += _simulate(function, order, [_exit_path(cfg, e) for e in exits], mmas, effects)
    if set(mmas) - in_loops:
        raise NotApplicable(f"{function.name}: a wgmma outside a straight loop")
    return breaks


def straight_chain(cfg: Cfg, loop) -> list[int]:
    """The loop's blocks in execution order when they run one after another on every
    iteration (labels such as Triton's `$L__tmp` debug marks cut blocks without branching):
    every block but the last has one successor, the next one."""
    chain = [loop.header]
    while len(chain) <= len(loop.blocks):
        succs = [t for t in cfg.graph.successors(chain[-1]) if t in loop.blocks]
        if succs == [loop.header] and chain[-1] in loop.latches:
            if len(chain) == len(loop.blocks):
                return chain
            break
        if len(succs) != 1 or cfg.graph.out_degree(chain[-1]) != 1 or succs[0] in chain:
            break
        chain.append(succs[0])
    raise NotApplicable(f"{cfg.function.name}: a wgmma in a loop whose blocks do not run one after another")


def _exit_path(cfg: Cfg, first: int, most: int = 8) -> list[int]:
    """Instructions from a loop exit on, through blocks of one successor, at most `most` blocks."""
    out: list[int] = []
    block = first
    for _ in range(most):
        out += cfg.blocks[block].instructions
        succs = list(cfg.graph.successors(block))
        if len(succs) != 1 or succs[0] == EXIT:
            break
        block = succs[0]
    return out


def _simulate(function: Function, order: list[int], exit_orders: list[list[int]], mmas, effects) -> list[Break]:
    """Run the loop body until its pending state repeats, then each exit until a wait of 0."""
    body = function.body
    committed = 0  # groups committed so far
    groups: list[tuple[int, tuple[int, ...]]] = []  # pending (sequence number, wgmma statements)
    open_: list[int] = []
    last_wait: tuple[int, int] | None = None  # (statement, groups committed when it ran)
    seen: set = set()
    breaks: list[Break] = []

    def step(i: int) -> None:
        nonlocal committed, groups, open_, last_wait
        s = body[i]
        op = _opcode(s)
        if op.startswith(COMMIT):
            groups.append((committed, tuple(open_)))
            committed, open_ = committed + 1, []
            return
        count = wait_count(s)
        if count is not None:
            groups = groups[len(groups) - count :] if count < len(groups) else groups
            if count == 0:
                groups = []
            last_wait = (i, committed)
            return
        if op.startswith("wgmma"):
            if i in mmas:
                _check_mma(i, mmas, groups, open_, last_wait, breaks)
                open_.append(i)
            return
        e = effects[i]
        if e is None:
            return
        for seq, members in groups:
            for m in members:
                if e.defs & (mmas[m].acc | mmas[m].a) or e.uses & mmas[m].acc:
                    breaks.append(_break(i, m, seq, last_wait))
        for m in open_:
            if e.defs & (mmas[m].acc | mmas[m].a) or e.uses & mmas[m].acc:
                breaks.append(Break(i, m, None, 0))

    ends = []  # the state after each iteration: the loop may leave after any of them
    for _ in range(MAX_ITERATIONS):
        state = (tuple((committed - seq, members) for seq, members in groups), tuple(open_))
        if state in seen:
            break
        seen.add(state)
        for i in order:
            step(i)
        ends.append((list(groups), list(open_), last_wait, committed))
    else:
        raise NotApplicable(f"{function.name}: the wgmma loop's pending state does not settle")
    for end in ends:
        for exit_order in exit_orders:
            groups, open_, last_wait, committed = list(end[0]), list(end[1]), end[2], end[3]
            for i in exit_order:
                step(i)
                if wait_count(body[i]) == 0:
                    break
            else:
                if groups or open_:
                    raise NotApplicable(f"{function.name}: a wgmma loop exit does not reach a wait of 0 soon")
    return breaks


def _break(at: int, mma: int, seq: int, last_wait: tuple[int, int] | None) -> Break:
    """The rule broken at `at` by pending `mma` of group `seq`, and the wait that can retire it."""
    if last_wait is None or last_wait[1] <= seq:
        return Break(at, mma, None, 0)
    return Break(at, mma, last_wait[0], last_wait[1] - seq - 1)


def _check_mma(i: int, mmas, groups, open_, last_wait, breaks: list[Break]) -> None:
    """A wgmma may chain on a pending one's accumulator only with the same shape, and may
    neither write a pending one's A fragment nor read a pending accumulator as its A."""
    me = mmas[i]
    for seq, members in [*groups, *((None, (m,)) for m in open_)]:
        for m in members:
            other = mmas[m]
            chained = me.acc == other.acc and me.shape == other.shape
            touches = (me.acc & other.acc and not chained) or me.acc & other.a or me.a & other.acc
            if touches:
                breaks.append(_break(i, m, seq, last_wait) if seq is not None else Break(i, m, None, 0))


def repair_waits(function: Function) -> tuple[Function, tuple[str, ...]]:
    """Part 2: lower wait counts until no loop breaks a register rule; what was lowered."""
    lowered: dict[str, tuple[int, int]] = {}
    for _ in range(64):
        breaks = loop_breaks(function)
        if not breaks:
            notes = tuple(f"wait@{ident} {old}->{new}" for ident, (old, new) in sorted(lowered.items()))
            return function, notes
        fix = breaks[0]
        if fix.wait is None:
            s = function.body[fix.at]
            raise NotApplicable(
                f"{function.name}: line {s.ident} touches registers of a pending wgmma (line "
                f"{function.body[fix.mma].ident}) with no wait between them to retire it"
            )
        s = function.body[fix.wait]
        old = wait_count(s)
        new = min(old, fix.newer)
        if new == old:
            raise NotApplicable(f"{function.name}: the wait at line {s.ident} cannot retire the wgmma it must")
        lowered[s.ident] = (lowered.get(s.ident, (old, new))[0], new)
        function = function.with_body(
            [_with_count(t, new) if k == fix.wait else t for k, t in enumerate(function.body)]
        )
    raise NotApplicable(f"{function.name}: the wgmma waits did not settle")


@dataclass(frozen=True, slots=True)
class WgmmaAsync:
    """Move the exit wait at statement `wait` (its ident) of `kernel`, then make the loop's
    register waits exact (see the module docstring)."""

    kernel: str
    wait: str
    name = "wgmma"

    @staticmethod
    def instances(module: Module, kernel: str) -> list[WgmmaAsync]:
        """One per exit wait that can be moved with every loop's register rules kept."""
        function = module.function(kernel)
        try:
            waits = exit_waits(function)
        except NotApplicable:
            return []
        out = []
        for i in waits:
            move = WgmmaAsync(kernel, function.body[i].ident)
            try:
                move.apply(module)
            except NotApplicable:
                continue
            out.append(move)
        return out

    def apply(self, module: Module) -> Module:
        return self.made(module)[0]

    def made(self, module: Module) -> tuple[Module, tuple[str, ...]]:
        """The moved module and the waits lowered (for the report)."""
        function = module.function(self.kernel)
        index = next((i for i, s in enumerate(function.body) if s.ident == self.wait and s.ins is not None), None)
        if index is None or index not in exit_waits(function):
            raise NotApplicable(f"{self.kernel}: line {self.wait} is not a wgmma exit wait that can move")
        moved, notes = repair_waits(sink_exit_wait(function, index))
        return module.with_function(moved), notes

    def describe(self) -> str:
        return f"wgmma:{self.wait}"
