"""The scheduler's own distances: stalls and waits for a block's new order, from the latency
tables and the instructions' read and write sets, without the verifier's state machine.

For every pair inside the block it knows the table's distance for:
- a fixed-latency write, then a read (RAW, by the reader's operand slot), another write (WAW);
- a fixed-latency read, then a write (WAR);
- a write with a scoreboard (a load, MUFU, S2R, ...), then a read or a write: a wait on that
  scoreboard, issued at least FRESH_SCOREBOARD_CYCLES after it;
- a read with a read scoreboard, then a fixed-latency write: a wait on it, the same way;
- two ops of one narrow pipe (the issue rates, legality.issue);
- a barrier, then a memory access (legality.barriers).
Two instructions under complementary guards (@P0, @!P0, P0 not written between) never both
run, so they need no distance. What it does not model is left to the verdict
(legality.verify.block_violations), which the scheduler asks next, and learnt from it as a
`Need` of the position it faults: what was in flight when the block was entered, ops issued
without a scoreboard (covered by a later op of their queue), reads of ops without a read
scoreboard, a variable-latency op overwriting another's source. Where both know a pair they were
written apart: the verdict then checks this arithmetic instead of sharing it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from legality.barriers import load_rules, touches_memory
from legality.issue import load_rates, pipe_of
from legality.latency import FRESH_SCOREBOARD_CYCLES, LatencyTable, latency_class, lookup_read
from reorder.sass.model import Instruction
from reorder.sass.opcodes import BARRIERS
from reorder.sass.operands import exclusive_guards

NO_SCOREBOARD = 7


@dataclass(frozen=True, slots=True)
class _Access:
    """One earlier access of a register: at which position, by which op, under which guard."""

    position: int
    ins: Instruction
    guard: str
    scoreboard: int = NO_SCOREBOARD


class _Block:
    """What is in flight inside the block so far, as positions of the new order."""

    def __init__(self) -> None:
        self.written: dict[str, _Access] = {}  # newest fixed-latency write of each register
        self.read_by: dict[str, dict[str, _Access]] = {}  # register -> reader class -> newest fixed-latency read
        self.loading: dict[str, list[_Access]] = {}  # writes on a scoreboard, not yet waited for
        self.reading: dict[str, list[_Access]] = {}  # reads on a read scoreboard, not yet waited for

    def waited(self, mask: int, issue: list[int], j: int) -> None:
        """A wait on `mask` at position j ends every access whose scoreboard it sees."""
        if not mask:
            return
        for table in (self.loading, self.reading):
            for res in list(table):
                kept = [
                    a
                    for a in table[res]
                    if not (mask >> a.scoreboard & 1 and issue[j] - issue[a.position] >= FRESH_SCOREBOARD_CYCLES)
                ]
                if kept:
                    table[res] = kept
                else:
                    del table[res]

    def record(self, j: int, ins: Instruction) -> None:
        for res in ins.access.writes:
            self.written.pop(res, None)
            if not ins.guard:
                self.loading.pop(res, None)  # a guarded write may not happen: what was in flight still is
            self.reading.pop(res, None)
            if res.startswith(("P", "UP")):
                self._forget_guard(res)
        ctrl = ins.ctrl
        if ins.is_variable_latency:
            if ctrl.wbar != NO_SCOREBOARD:
                for res in ins.access.writes:
                    self.loading.setdefault(res, []).append(_Access(j, ins, ins.guard, ctrl.wbar))
            if ctrl.rbar != NO_SCOREBOARD:
                for res in ins.access.reads:
                    if res.startswith("R"):  # uniform operands are read at issue; a read is not excused by guards
                        self.reading.setdefault(res, []).append(_Access(j, ins, "", ctrl.rbar))
            return
        cls = latency_class(ins)
        for res in ins.access.writes:
            self.written[res] = _Access(j, ins, ins.guard)
        for res in ins.access.reads:
            if not res.startswith("SR_"):
                self.read_by.setdefault(res, {})[cls] = _Access(j, ins, ins.guard)

    def _forget_guard(self, predicate: str) -> None:
        """Writing a predicate ends what the guards on it said about exclusive pairs."""

        def unguarded(a: _Access) -> _Access:
            return _Access(a.position, a.ins, "", a.scoreboard) if a.guard.lstrip("@!") == predicate else a

        self.written = {r: unguarded(a) for r, a in self.written.items()}
        self.read_by = {r: {c: unguarded(a) for c, a in by.items()} for r, by in self.read_by.items()}
        self.loading = {r: [unguarded(a) for a in lst] for r, lst in self.loading.items()}


def _needs(block: _Block, ins: Instruction, table: LatencyTable) -> tuple[list[tuple[int, int]], int]:
    """(producer position, cycles from its issue) pairs `ins` must keep, and the scoreboards it
    must wait on."""
    cls = latency_class(ins)
    after: list[tuple[int, int]] = []
    waits = 0

    def on_scoreboard(accesses: list[_Access]) -> None:
        nonlocal waits
        for a in accesses:
            if not exclusive_guards(a.guard, ins.guard):
                waits |= 1 << a.scoreboard
                after.append((a.position, FRESH_SCOREBOARD_CYCLES))

    for res in ins.access.reads:
        on_scoreboard(block.loading.get(res, []))
        w = block.written.get(res)
        if w is not None and not exclusive_guards(w.guard, ins.guard):
            after.append((w.position, lookup_read(table, w.ins.opcode, latency_class(w.ins), ins, res).cycles))
    for res in ins.access.writes:
        on_scoreboard(block.loading.get(res, []))
        if not ins.is_variable_latency:  # a later op of a queue may overwrite an earlier one's source: the verdict
            on_scoreboard(block.reading.get(res, []))
        for r in block.read_by.get(res, {}).values():
            if r.ins.offset != ins.offset and not exclusive_guards(r.guard, ins.guard):
                need = table.lookup_pair(r.ins.opcode, ins.opcode, latency_class(r.ins), cls, "war").cycles
                after.append((r.position, need))
        w = block.written.get(res)
        if w is not None and not exclusive_guards(w.guard, ins.guard):
            after.append(
                (w.position, table.lookup_pair(w.ins.opcode, ins.opcode, latency_class(w.ins), cls, "waw").cycles)
            )
    return after, waits


@dataclass(frozen=True, slots=True)
class Need:
    """A need of one position the plan learnt from a verdict: `cycles` after the issue of
    `position` (None: after the block's first instruction), and scoreboards to wait on."""

    position: int | None
    cycles: int
    waits: int = 0


def plan(
    order: list[Instruction],
    table: LatencyTable,
    bump: Callable[[list[Instruction], int, int], bool],
    learnt: dict[int, tuple[Need, ...]] | None = None,
) -> None:
    """Give `order` (in place) the stalls and waits its in-block dependencies need, and the
    needs `learnt` from earlier verdicts, first position first. The stall before a position
    grows once, by its largest shortfall; `bump(order, index, cycles)` adds `cycles` of stall
    before index + 1 (spilling backwards past 15) and says whether all of them fitted."""
    learnt = learnt or {}
    block = _Block()
    rates, rules = load_rates(table.arch), load_rules(table.arch)
    pipes: dict[str, int] = {}  # pipe -> position of its newest op
    barrier: int | None = None  # position of the newest barrier with a distance rule
    issue = [0] * (len(order) + 1)
    stale = False  # a bump that did not fit changed stalls `issue` does not count yet
    for j, ins in enumerate(order):
        if j:
            issue[j] = issue[j - 1] + order[j - 1].ctrl.stall
        short = _fresh_wait_shortfall(block, ins, issue, j)
        if short > 0 and j:
            stale = _bumped(order, issue, j, short, bump, stale)
        block.waited(ins.ctrl.wait, issue, j)
        after: list[tuple[int, int]] = []
        waits = 0
        if ins.known:
            after, waits = _needs(block, ins, table)
            after += _issue_needs(ins, pipes, order, rates)
            rule = rules.distance_for(order[barrier].opcode) if barrier is not None else None
            if barrier is not None and rule is not None and touches_memory(ins):
                after.append((barrier, rule.cycles))
        for need in learnt.get(j, ()):
            waits |= need.waits
            after.append((0 if need.position is None else need.position, need.cycles))
        if waits & ~ins.ctrl.wait:
            order[j] = ins = ins.with_ctrl(ins.ctrl.with_(wait=ins.ctrl.wait | waits))
        short = max([issue[p] + cycles - issue[j] for p, cycles in after], default=0)
        if short > 0 and j:
            stale = _bumped(order, issue, j, short, bump, stale)
        block.waited(ins.ctrl.wait, issue, j)
        if ins.known:
            block.record(j, ins)
            _issue_record(ins, j, pipes)
        if ins.is_barrier and rules.distance_for(ins.opcode) is not None:
            barrier = j


def _issue_needs(ins: Instruction, pipes: dict[str, int], order: list[Instruction], rates) -> list[tuple[int, int]]:
    """An op may not issue while its pipe is still busy with the previous one (legality.issue)."""
    pipe = _pipe(ins)
    if pipe is None or ins.base in BARRIERS or pipe not in pipes:
        return []
    return [(pipes[pipe], rates.busy_for(order[pipes[pipe]].opcode))]


def _issue_record(ins: Instruction, j: int, pipes: dict[str, int]) -> None:
    if ins.base in BARRIERS:
        pipes.clear()  # the pipes drain at a barrier
        return
    pipe = _pipe(ins)
    if pipe is not None:
        pipes[pipe] = j


def _pipe(ins: Instruction) -> str | None:
    """The narrow pipe a fixed-latency op issues to (legality.issue), or None."""
    return None if ins.is_variable_latency else pipe_of(ins.opcode)


def _fresh_wait_shortfall(block: _Block, ins: Instruction, issue: list[int], j: int) -> int:
    """Cycles missing before position j for each wait it has to see the scoreboard it names:
    a wait issued less than FRESH_SCOREBOARD_CYCLES after the op that set it does not cover it."""
    mask = ins.ctrl.wait
    return max(
        [
            issue[a.position] + FRESH_SCOREBOARD_CYCLES - issue[j]
            for table in (block.loading, block.reading)
            for accesses in table.values()
            for a in accesses
            if mask >> a.scoreboard & 1
        ],
        default=0,
    )


def _bumped(
    order: list[Instruction],
    issue: list[int],
    j: int,
    cycles: int,
    bump: Callable[[list[Instruction], int, int], bool],
    stale: bool,
) -> bool:
    """Add `cycles` before position j; when all fitted, count issue cycles 0..j again (from 0
    if an earlier bump that did not fit left them stale). Returns whether they are stale now."""
    if not bump(order, j - 1, cycles):
        return True
    _reissue(order, issue, j, cycles, stale)
    return False


def _reissue(order: list[Instruction], issue: list[int], j: int, added: int, stale: bool = False) -> None:
    """Issue cycles of positions 0..j again (in place) after `added` stall cycles went in before
    position j: from the earliest position whose stall grew, found walking back from j - 1 (a
    bump spills back only past full stalls: recounting from position 0 every time made
    scheduling a block quadratic in its length)."""
    k, found = j, 0
    while not stale and found < added and k > 0:
        k -= 1
        found += order[k].ctrl.stall - (issue[k + 1] - issue[k])
    if stale or found != added:
        k = 0
    for m in range(k, j):
        issue[m + 1] = issue[m] + order[m].ctrl.stall
