"""The schedule verifier: does every consumer see its producer's result?

A forward dataflow over the kernel's control-flow graph. At each instruction it knows,
for every register, predicate and uniform register, which fixed-latency producers are
still within their latency (and how many cycles ago they issued) and which
variable-latency producers (loads, MUFU, S2R, ...) have not been waited for on their
scoreboard. A consumer is legal only if (a) the stalls since each fixed-latency producer
cover that pair's latency and (b) every scoreboard holding one of its operands was waited
on, at least 2 cycles after the producer issued (a fresh scoreboard needs one extra
cycle). States merge at block entries by taking the worst case, so a schedule is proven
for every path. The scheduler (reorder.moves.schedule) places stalls and waits with its own
model (reorder.moves.distances) and asks here only for verdicts (`block_violations`), so a
verdict checks the scheduler's arithmetic and the whole kernel around the block it changed,
not the latency tables both read: those are checked against the compiler's own schedules
(legality.inherited) and on silicon (legality/silicon).
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field, replace
from functools import lru_cache

from legality import barriers, issue, scoreboards
from legality.inherited import split
from legality.latency import FRESH_SCOREBOARD_CYCLES, LatencyTable, latency_class, load_table, lookup_read
from legality.violation import Violation
from reorder.analysis.cfg import basic_blocks, control_flow_graph
from reorder.binary.cubin import RESERVED_REGISTERS, STACK_POINTER
from reorder.sass.model import Instruction, KernelCode, highest_register
from reorder.sass.opcodes import BARRIERS as BARRIER_OPCODES
from reorder.sass.operands import exclusive_guards

ELAPSED_CAP = 64  # cycles since a variable-latency op issued are counted up to this (states then compare equal)


UNTRACKED = -1  # a variable-latency op issued without a scoreboard
# A variable-latency op issued without a read scoreboard still reads its source registers
# after issue, when its queue gets to it: under load that is any number of cycles on. Its
# reads stay pending until a wait proves them done: a wait on its own write scoreboard, or on
# a scoreboard of a later op of the same in-order queue (for reads, the shared-memory pipe is
# one queue with SHFL: read_queue). ptxas never overwrites such a source otherwise (5,718
# cases over every compiler-made cubin of the repository, 2026-11-30; an STS's data is freed
# by a wait on a later LDS or SHFL, never by a BAR.SYNC alone). Silicon (H200, 2026-11-30)
# gave wrong bytes where the verifier had allowed 6 cycles: LDG.E.64 R14,[R34] then
# IMAD.WIDE R34 (Triton looped RMSNorm fp16, NaN at every row count; right once the
# IMAD.WIDE waits), and STS [R2],R0, BAR.SYNC, I2FP R0 (row RMSNorm fp32, wrong at 1,024 and
# 8,192 rows, right at 16; still wrong at 12 cycles, and with every stall 11 or more).
SHARED_PIPE = "shared-memory pipe"


@dataclass(frozen=True, slots=True)
class Pending:
    """A variable-latency access not yet waited for: scoreboard, producer, cycles since issue.

    `sb` is UNTRACKED for an op issued without a scoreboard. ptxas relies on in-order
    completion within one queue (LDS then LDS.128 W0: waiting on SB0 covers both), so
    such an op becomes covered by the scoreboard of the next op of its queue.
    """

    def with_(self, **changes) -> Pending:
        return replace(self, **changes)

    sb: int
    offset: int
    opcode: str
    elapsed: int
    queue: str = ""
    guard: str = ""  # the producer's guard: a consumer under the complementary one never sees it
    unbarred: bool = False  # a read by an op without a read scoreboard (see SHARED_PIPE)
    # (scoreboard, `elapsed` when set) of later ops of its queue: a wait on one, issued once the
    # scoreboard is seen (FRESH_SCOREBOARD_CYCLES after), proves this read done
    cover: tuple[tuple[int, int], ...] = ()

    def waited(self, mask: int) -> bool:
        """Whether a wait on `mask` proves this access done."""
        if self.sb >= 0 and mask >> self.sb & 1 and self.elapsed >= FRESH_SCOREBOARD_CYCLES:
            return True
        return any(mask >> b & 1 and self.elapsed - at >= FRESH_SCOREBOARD_CYCLES for b, at in self.cover)

    def settled(self) -> bool:
        """Whether aging changes nothing any more: its age and every cover age at the cap."""
        return self.elapsed == ELAPSED_CAP and all(at == 0 for _, at in self.cover)

    def aged(self, stall: int) -> Pending:
        """This access `stall` cycles later (ages count up to ELAPSED_CAP, cover ages kept)."""
        if self.elapsed == ELAPSED_CAP and not any(at for _, at in self.cover):
            return self  # settled: aging gives an equal value
        elapsed = min(self.elapsed + stall, ELAPSED_CAP)
        lost = self.elapsed + stall - elapsed
        cover = tuple((b, max(at - lost, 0)) for b, at in self.cover) if lost and self.cover else self.cover
        return Pending(self.sb, self.offset, self.opcode, elapsed, self.queue, self.guard, self.unbarred, cover)


@dataclass(frozen=True, slots=True)
class Recent:
    """A fixed-latency access still possibly in flight, with the guard it was issued under.

    `at` is the state's clock when it issued (its age is `State.age(recent)`): aging every
    entry at every instruction was half of the verifier's time. At a block's end the state
    is normalized (clock 0, `at` = minus the age, expired entries dropped), so states that
    reach a join from different paths compare and merge as ages."""

    cls: str
    offset: int
    opcode: str
    at: int
    guard: str = ""


@dataclass
class State:
    """What is in flight at one program point (mutable only inside the transfer function)."""

    recent: dict[str, dict[str, Recent]] = field(default_factory=dict)  # resource -> writer class -> newest write
    writes: dict[str, frozenset[Pending]] = field(default_factory=dict)
    reads: dict[str, frozenset[Pending]] = field(default_factory=dict)
    read_by: dict[str, dict[str, Recent]] = field(default_factory=dict)  # resource -> reader class -> newest read
    clock: int = 0  # cycles issued since the block began (see Recent.at)

    def copy(self) -> State:
        return State(
            {k: dict(v) for k, v in self.recent.items()},
            dict(self.writes),
            dict(self.reads),
            {k: dict(v) for k, v in self.read_by.items()},
            self.clock,
        )

    def age(self, r: Recent) -> int:
        """Cycles since the access issued."""
        return self.clock - r.at

    def normalized(self, horizon: int) -> State:
        """The same state with clock 0: fixed-latency entries as of now, those `horizon` or
        more cycles old dropped (no latency reaches them)."""

        def rebase(table: dict[str, dict[str, Recent]]) -> dict[str, dict[str, Recent]]:
            out = {}
            for res, by_cls in table.items():
                kept = {
                    c: Recent(r.cls, r.offset, r.opcode, r.at - self.clock, r.guard)
                    for c, r in by_cls.items()
                    if self.clock - r.at < horizon
                }
                if kept:
                    out[res] = kept
            return out

        return State(rebase(self.recent), dict(self.writes), dict(self.reads), rebase(self.read_by), 0)


@dataclass(frozen=True)
class Report:
    """Result of verifying one kernel."""

    kernel: str
    arch: int
    violations: tuple[Violation, ...]
    unknown: tuple[tuple[int, str], ...]  # (offset, opcode) treated as barriers, not verified through
    inherited: tuple[Violation, ...] = ()  # the original's own, kept at no fewer cycles (legality.inherited)
    compiler: tuple = ()  # legality.evidence.CompilerChoice: distances below the tables taken as compiled
    sources: tuple[tuple[str, int], ...] = ()  # table facts the verdict consulted, by source (legality.evidence)

    @property
    def ok(self) -> bool:
        return not self.violations

    def verdict(self) -> str:
        """One line for a report: legal (saying what was inherited) or the first rejection."""
        if not self.ok:
            return f"REJECTED: {self.violations[0].line()}"
        if self.compiler:
            return (
                f"legal ({len(self.compiler)} exact pairs at distances this cubin's compiler chose, below the "
                f"tables: evidence only for this cubin as compiled)"
            )
        if self.inherited:
            return (
                f"legal ({len(self.inherited)} violations inherited from the original: the compiler's own "
                f"schedule, kept at no fewer cycles)"
            )
        return "legal"


def merge(a: State, b: State) -> State:
    """Worst case of two states: the most recent fixed write, every pending access."""
    out = a.copy()
    for mine_all, theirs in ((out.recent, b.recent), (out.read_by, b.read_by)):
        for res, by_cls in theirs.items():
            mine = mine_all.setdefault(res, {})
            for cls, r in by_cls.items():
                if cls not in mine or b.age(r) < out.age(mine[cls]):
                    mine[cls] = r
    for table_a, table_b in ((out.writes, b.writes), (out.reads, b.reads)):
        for res, pend in table_b.items():
            table_a[res] = table_a.get(res, frozenset()) | pend
    return out


def _sb_of(sb: int) -> int | None:
    return sb if sb != UNTRACKED else None


def _sb_name(sb: int) -> str:
    return f"wait on SB{sb}" if sb != UNTRACKED else "a scoreboard (producer set none)"


def step(state: State, ins: Instruction, table: LatencyTable, found: list[Violation]) -> State:
    """Transfer function of one instruction: check it against the state, then update."""
    s = state.copy()
    _step_into(s, ins, table, found)
    return s


def _step_into(s: State, ins: Instruction, table: LatencyTable, found: list[Violation]) -> None:
    """`step`, updating `s` itself (a block's walk copies its entry state once)."""
    ctrl = ins.ctrl
    problem = ctrl.encoding_problem()
    if problem:
        found.append(Violation("encoding", "ctrl", ins.offset, ins.opcode, ins.offset, ins.opcode, "-", "-", problem))
    _apply_waits(s, ctrl.wait)
    if ins.known:
        _check(s, ins, table, found)
        _check_barrier_distance(s, ins, table.arch, found)
        _check_issue(s, ins, table.arch, found)
        _record(s, ins, found)
    _record_barrier(s, ins, table.arch)
    _advance(s, ctrl.stall)


def _check_issue(s: State, ins: Instruction, arch: int, found: list[Violation]) -> None:
    """A fixed-latency op must not issue while its pipe is busy with the previous one
    (legality.issue); then it holds the pipe."""
    # the pipes drain at a barrier (sm_80: ERRBAR at S00, then an IMAD one cycle after an IMAD)
    if ins.base in BARRIER_OPCODES:
        for resource in [r for r in s.recent if r.startswith(issue.RESOURCE_PREFIX)]:
            del s.recent[resource]
        return
    pipe = None if ins.is_variable_latency else issue.pipe_of(ins.opcode)
    if pipe is None:
        return
    resource = issue.RESOURCE_PREFIX + pipe
    for r in s.recent.get(resource, {}).values():
        need = issue.load_rates(arch).busy_for(r.opcode)
        if s.age(r) < need:
            found.append(
                Violation(
                    "issue",
                    resource,
                    r.offset,
                    r.opcode,
                    ins.offset,
                    ins.opcode,
                    need,
                    s.age(r),
                    "issues while the pipe is still busy with the previous op (ptxas never issues sooner)",
                )
            )
    s.recent[resource] = {"ISSUE": Recent("ISSUE", ins.offset, ins.opcode, s.clock)}


def _record_barrier(s: State, ins: Instruction, arch: int) -> None:
    """A barrier with a distance rule starts its clock (legality.barriers)."""
    if ins.is_barrier and barriers.load_rules(arch).distance_for(ins.opcode) is not None:
        s.recent[barriers.RESOURCE] = {"BAR": Recent("BAR", ins.offset, ins.opcode, s.clock)}


def _check_barrier_distance(s: State, ins: Instruction, arch: int, found: list[Violation]) -> None:
    """A memory access must not issue sooner after a barrier than its rule allows."""
    if not barriers.touches_memory(ins):
        return
    for r in s.recent.get(barriers.RESOURCE, {}).values():
        rule = barriers.load_rules(arch).distance_for(r.opcode)
        if rule is not None and s.age(r) < rule.cycles:
            found.append(
                Violation(
                    "barrier",
                    "memory",
                    r.offset,
                    r.opcode,
                    ins.offset,
                    ins.opcode,
                    rule.cycles,
                    s.age(r),
                    "a memory access too soon after a barrier (legality/tables/barriers.toml)",
                )
            )


def _apply_waits(s: State, mask: int) -> None:
    if not mask:
        return
    for table in (s.writes, s.reads):
        for res in list(table):
            kept = frozenset(p for p in table[res] if not p.waited(mask))
            if kept:
                table[res] = kept
            else:
                del table[res]


@lru_cache(maxsize=1 << 16)
def _in_order(resources: frozenset[str]) -> tuple[str, ...]:
    """An access set sorted (violations are found in this order), once per distinct set."""
    return tuple(sorted(resources))


def _check(s: State, ins: Instruction, table: LatencyTable, found: list[Violation]) -> None:
    cls = latency_class(ins)
    for res in _in_order(ins.access.reads):
        _pending_writes(s, ins, res, cls, table, found, "RAW")
        for r in s.recent.get(res, {}).values():
            if not exclusive_guards(r.guard, ins.guard):
                need = lookup_read(table, r.opcode, r.cls, ins, res)
                _too_close(s, need.kind.split("#")[0], res, r, ins, need.cycles, found)
    for res in _in_order(ins.access.writes):
        _pending_writes(s, ins, res, cls, table, found, "WAW")
        for p in s.reads.get(res, ()):
            if p.unbarred:
                _overwrite_unbarred(p, res, ins, table, found)
            elif not (ins.is_variable_latency and table.unwaited_war_ok(p.opcode, ins.opcode, p.elapsed)):
                found.append(_unwaited(res, p, ins, "WAR: overwrites a source not yet read"))
        for r in s.read_by.get(res, {}).values():
            if r.offset != ins.offset and not exclusive_guards(r.guard, ins.guard):
                need = _need(table, r, ins, cls, "war")
                _too_close(
                    s,
                    "war",
                    res,
                    r,
                    ins,
                    need.cycles,
                    found,
                    "overwrites an operand of a fixed-latency reader too soon",
                )
        for r in s.recent.get(res, {}).values():
            if not exclusive_guards(r.guard, ins.guard):
                _too_close(s, "waw", res, r, ins, _need(table, r, ins, cls, "waw").cycles, found)


def _overwrite_unbarred(p: Pending, res: str, ins: Instruction, table: LatencyTable, found: list[Violation]) -> None:
    """`ins` writes a source an op without a read scoreboard may not have read yet (no wait
    proved it): legal only for a later op of the same in-order queue, at the table's MIO -> MIO
    `war` distance (its write lands after the earlier op's read)."""
    if ins.is_variable_latency and read_queue(ins) == p.queue:
        need = table.lookup("MIO", "MIO", "war").cycles
        if p.elapsed < need:
            found.append(_short(res, p, ins, need, "a later op of the queue overwrites a source too soon"))
    else:
        found.append(
            _unwaited(
                res, p, ins, "WAR: overwrites a source of an op without a read scoreboard before a wait proves it read"
            )
        )


def _short(res: str, p: Pending, ins: Instruction, need: int, why: str) -> Violation:
    return Violation("war", res, p.offset, p.opcode, ins.offset, ins.opcode, need, p.elapsed, why)


def _pending_writes(
    s: State, ins: Instruction, res: str, cls: str, table: LatencyTable, found: list[Violation], hazard: str
) -> None:
    """`ins` reads (RAW) or writes (WAW) `res` while a variable-latency write of it is in
    flight: legal only after a wait on its scoreboard, or (no scoreboard) after the queue's
    untracked distance."""
    for p in s.writes.get(res, ()):
        if exclusive_guards(p.guard, ins.guard):
            continue
        if p.sb != UNTRACKED:
            found.append(_unwaited(res, p, ins, f"{hazard} on a variable-latency result"))
            continue
        need = table.lookup("MIO", cls, "untracked").cycles
        if p.elapsed < need:
            why = "variable-latency result with no scoreboard"
            found.append(
                Violation(
                    "untracked",
                    res,
                    p.offset,
                    p.opcode,
                    ins.offset,
                    ins.opcode,
                    need,
                    p.elapsed,
                    why if hazard == "RAW" else f"{hazard} on a {why}",
                )
            )


def _unwaited(res: str, p: Pending, ins: Instruction, why: str) -> Violation:
    """A scoreboarded operation `ins` did not wait for."""
    return Violation(
        "scoreboard",
        res,
        p.offset,
        p.opcode,
        ins.offset,
        ins.opcode,
        _sb_name(p.sb),
        "no wait",
        why,
        p.elapsed,
        _sb_of(p.sb),
    )


def _too_close(
    s: State, kind: str, res: str, r: Recent, ins: Instruction, cycles: int, found: list[Violation], why: str = ""
) -> None:
    """A fixed-latency pair closer than the table's `cycles`."""
    if s.age(r) < cycles:
        found.append(Violation(kind, res, r.offset, r.opcode, ins.offset, ins.opcode, cycles, s.age(r), why))


# Variable-latency ops that complete in issue order with each other: ptxas issues one of them
# without a scoreboard and lets a later one's scoreboard cover it (a wait on that scoreboard
# before the read): POPC then FLO.U32 W0 (sm_80 bit_ops), MUFU.RCP then I2F W0 (sm_80
# softplus_sigmoid), F2F.F64.F32 then I2F.F64.S64 W0 (held-out convert_chain, sm_80 and sm_90),
# MUFU.RCP then BREV W2 and FCHK then F2I.TRUNC W0 (calibration kernels, sm_90 -O3 and sm_80
# -O1); FRND then F2I.NTZ over FRND's source 8 cycles on, no wait (held-out box_muller at -O1,
# every arch: ptxas relies on F2I reading and writing after FRND read). Only opcodes seen in
# such a pattern are in it; any other op is its own queue.
IN_ORDER_WITH_EACH_OTHER = frozenset({"MUFU", "BREV", "POPC", "FLO", "FCHK", "F2F", "F2I", "I2F", "FRND"})
# Where the FP64 pipe is variable latency (reorder.sass.opcodes.VARIABLE_LATENCY_ON), its ops
# complete in order likewise: DMUL R16 with no scoreboard, then DFMA W0, and a DFMA reading R16
# after a wait on SB0 (stencil5_f64, sm_103 and sm_120 at -O3).
FP64_IN_ORDER = frozenset({"DMUL", "DFMA"})


def queue_of(ins: Instruction) -> str:
    """The in-order completion queue of a variable-latency op."""
    if ins.base in IN_ORDER_WITH_EACH_OTHER:
        return "conversion/transcendental"
    if ins.base in FP64_IN_ORDER:
        return "fp64"
    space = ins.access.mem_reads or ins.access.mem_writes
    return f"{ins.base}:{space}" if space else ins.base


def read_queue(ins: Instruction) -> str:
    """The in-order queue whose later ops prove this op's register reads done: its completion
    queue, except that shared-memory ops and SHFL read in one order (ptxas frees an STS's data
    register after a wait on a later LDS, or on a later SHFL: Triton's LayerNorm)."""
    queue = queue_of(ins)
    return SHARED_PIPE if queue.endswith(":shared") or ins.base == "SHFL" else queue


def _need(table, recent: Recent, ins: Instruction, cls: str, kind: str):
    return table.lookup_pair(recent.opcode, ins.opcode, recent.cls, cls, kind)


def _record(s: State, ins: Instruction, found: list[Violation]) -> None:
    ctrl = ins.ctrl
    writes = _in_order(ins.access.writes)
    for res in writes:
        s.recent.pop(res, None)
        pending = s.writes.pop(res, None)
        if pending and ins.guard:
            s.writes[res] = pending  # a predicated write may not happen: what was in flight still is
        s.reads.pop(res, None)
        if res.startswith(("P", "UP")):
            _forget_guards(s, res)
    if ins.is_variable_latency:
        queue = queue_of(ins)
        sb = ctrl.wbar if ctrl.wbar != 7 else UNTRACKED
        if sb != UNTRACKED:
            _cover_untracked(s, queue, sb)
        cover = tuple(sorted(b for b in {ctrl.wbar, ctrl.rbar} if b != 7))
        if cover:
            _cover_unbarred_reads(s, read_queue(ins), cover)
        for res in writes:
            s.writes[res] = s.writes.get(res, frozenset()) | {Pending(sb, ins.offset, ins.opcode, 0, queue, ins.guard)}
        if ctrl.rbar != 7:
            # its result is written after its sources are read: a wait on its own write scoreboard
            # proves them read too (ptxas: DADD R4, -R8, R4 R0:W1, then DMUL R4 after a wait on SB1
            # alone, sm_80 kahan_sum_f64)
            own = ((sb, 0),) if sb != UNTRACKED else ()
            for res in ins.access.reads:
                if res.startswith("R"):  # uniform operands are read at issue
                    read = Pending(ctrl.rbar, ins.offset, ins.opcode, 0, cover=own)
                    s.reads[res] = s.reads.get(res, frozenset()) | {read}
        else:  # no read scoreboard: the queue reads the registers after issue (SHARED_PIPE)
            for res in ins.access.reads:
                if res.startswith("R"):
                    read = Pending(sb, ins.offset, ins.opcode, 0, read_queue(ins), ins.guard, unbarred=True)
                    s.reads[res] = s.reads.get(res, frozenset()) | {read}
    else:
        cls = latency_class(ins)
        for res in writes:
            s.recent[res] = {cls: Recent(cls, ins.offset, ins.opcode, s.clock, ins.guard)}
        for res in ins.access.reads:
            if not res.startswith("SR_"):
                s.read_by.setdefault(res, {})[cls] = Recent(cls, ins.offset, ins.opcode, s.clock, ins.guard)


def _rewrite_pending(table: dict[str, frozenset[Pending]], hit, change) -> None:
    """Replace each pending access `hit` picks by `change` of it (the others stay)."""
    for res, pend in table.items():
        if any(hit(p) for p in pend):
            table[res] = frozenset(change(p) if hit(p) else p for p in pend)


def _cover_unbarred_reads(s: State, queue: str, scoreboards: tuple[int, ...]) -> None:
    """A later op of the same in-order queue sets `scoreboards`: a wait on one proves the
    earlier op's reads done."""
    _rewrite_pending(s.reads, lambda p: p.unbarred and p.queue == queue, lambda p: _covered(p, scoreboards))


def _covered(p: Pending, scoreboards: tuple[int, ...]) -> Pending:
    kept = tuple((b, at) for b, at in p.cover if b not in scoreboards)
    return p.with_(cover=kept + tuple((b, p.elapsed) for b in scoreboards))


def _cover_untracked(s: State, queue: str, sb: int) -> None:
    _rewrite_pending(s.writes, lambda p: p.sb == UNTRACKED and p.queue == queue, lambda p: p.with_(sb=sb))


def _forget_guards(s: State, predicate: str) -> None:
    """`predicate` is written: accesses issued under it are no longer known exclusive of
    anything (most accesses have no guard, so the guard is tested before it is stripped)."""
    _rewrite_pending(
        s.writes, lambda p: bool(p.guard) and p.guard.lstrip("@!") == predicate, lambda p: p.with_(guard="")
    )
    for table in (s.recent, s.read_by):
        for by_cls in table.values():
            for c, r in by_cls.items():
                if r.guard and r.guard.lstrip("@!") == predicate:
                    by_cls[c] = Recent(r.cls, r.offset, r.opcode, r.at, "")


def _advance(s: State, stall: int) -> None:
    """`stall` cycles pass: fixed-latency entries age by the clock (Recent.at), pending ones
    one by one, except where nothing would change (no cycles, or every access of a resource
    aged to the cap: most of what a long unrolled block keeps in flight)."""
    s.clock += stall
    if not stall:
        return
    for table in (s.writes, s.reads):
        for res, pending in table.items():
            for p in pending:  # Pending.settled, inline: this runs at every instruction of every walk
                if p.elapsed != ELAPSED_CAP or any(at for _, at in p.cover):
                    table[res] = frozenset([q.aged(stall) for q in pending])
                    break


def _exact_key(state: State) -> tuple:
    """The state with its iteration orders (dicts and sets): two states with one exact key
    step through any block alike, violations found in the same order included."""

    def nested(table: dict[str, dict[str, Recent]]) -> tuple:
        return tuple((res, tuple(by_cls.items())) for res, by_cls in table.items())

    return (
        state.clock,
        nested(state.recent),
        tuple((r, tuple(p)) for r, p in state.writes.items()),
        tuple((r, tuple(p)) for r, p in state.reads.items()),
        nested(state.read_by),
    )


BLOCK_MEMO_SIZE = 50_000


def _through_block(
    instructions: tuple[Instruction, ...], entry: State, table, horizon: int, memo: dict | None
) -> tuple[State, tuple[Violation, ...]]:
    """A block's normalized exit state and the violations found inside it. With `memo`, a block
    already walked from an exactly equal entry state is not walked again: scheduling changes
    one block at a time, and the verifier's walks after it meet the same blocks in the same
    states everywhere the change did not reach (the incremental part of a whole-kernel check)."""
    key = (instructions, _exact_key(entry)) if memo is not None else None
    if memo is not None and key in memo:
        return memo[key]
    state = entry.copy()
    local: list[Violation] = []
    for ins in instructions:
        _step_into(state, ins, table, local)
    done = (state.normalized(horizon), tuple(local))
    if memo is not None:
        if len(memo) >= BLOCK_MEMO_SIZE:
            memo.clear()
        memo[key] = done
    return done


def _walk(
    instructions: tuple[Instruction, ...], table, memo: dict | None = None
) -> tuple[dict[int, State], dict[tuple, Violation]]:
    """Fixed point over the CFG: the worst-case state at each block entry, and every violation.
    `memo` (block instructions, exact entry state) -> what `_through_block` found, shared by
    the walks of one table."""
    blocks = {b.start: b for b in basic_blocks(instructions)}
    cfg = control_flow_graph(instructions)
    entry: dict[int, State] = {start: State() for start in blocks}
    seen: dict[int, State] = {}  # the merged entry state last queued: compared as values (order-free)
    work = deque(sorted(blocks))  # first in, first out; `queued` is its membership
    queued = set(work)
    found: dict[tuple, Violation] = {}
    horizon = table.max_cycles()
    while work:
        start = work.popleft()
        queued.discard(start)
        block = tuple(instructions[i] for i in blocks[start].indices())
        state, local = _through_block(block, entry[start], table, horizon, memo)
        for v in local:  # a pair reached along several paths: keep its worst (fewest cycles)
            if v.key not in found or _fewer_cycles(v, found[v.key]):
                found[v.key] = v
        for succ in cfg.successors(start):
            merged = merge(entry[succ], state)
            if seen.get(succ) != merged:
                seen[succ] = merged
                entry[succ] = merged
                if succ not in queued:
                    work.append(succ)
                    queued.add(succ)
    return entry, found


def _fewer_cycles(a: Violation, b: Violation) -> bool:
    return a.cycles is not None and (b.cycles is None or a.cycles < b.cycles)


@lru_cache(maxsize=4)
def _walk_with_arch_table(instructions: tuple[Instruction, ...], arch: int) -> tuple[dict[int, State], dict]:
    """`_walk` with the arch's own table, kept for the last few schedules: scheduling one
    block asks for the entry states of the kernel as the previous block left it, and its
    tail check for that kernel's violations; both are the walk the previous block's tail
    check just did (one whole-kernel walk per block instead of three). Callers only read
    the result."""
    table = load_table(arch)
    return _walk(instructions, table, _memo_for(table, barriers.load_rules(arch)))


_BLOCK_MEMOS: dict[int, tuple] = {}  # arch -> (table, barrier rules, the memo of walks with them)


def clear_caches() -> None:
    """Forget every walk and block memo (for a caller that patched the tables' behaviour)."""
    original_violations.cache_clear()
    _compiler_made.cache_clear()
    _walk_with_arch_table.cache_clear()
    _BLOCK_MEMOS.clear()


def _memo_for(table: LatencyTable, rules) -> dict:
    """The block memo of this exact table and these barrier rules (a new one when either was
    loaded again: a memo never outlives the facts it was computed from)."""
    held = _BLOCK_MEMOS.get(table.arch)
    if held is None or held[0] is not table or held[1] is not rules:
        held = _BLOCK_MEMOS[table.arch] = (table, rules, {})
    return held[2]


def block_entry_states(instructions: tuple[Instruction, ...], arch: int) -> dict[int, State]:
    """block start index -> what may be in flight when the block is entered (all paths)."""
    return _walk_with_arch_table(instructions, arch)[0]


def block_violations(
    block: tuple[Instruction, ...], start: int, kernel: tuple[Instruction, ...], arch: int
) -> tuple[Violation, ...]:
    """The verdict on `block` put in place of the block at index `start` of `kernel`: every
    violation inside it, entered in the state `kernel` is in at `start` (all paths), in the
    order the walk meets them. This is all the scheduler asks of the verifier while it places
    a block (reorder.moves.schedule); the kernel around the block is judged after."""
    table = load_table(arch)
    entry = block_entry_states(kernel, arch)[start]
    return _through_block(block, entry, table, table.max_cycles(), _memo_for(table, barriers.load_rules(arch)))[1]


def verify_instructions(instructions: tuple[Instruction, ...], arch: int, table=None) -> tuple[Violation, ...]:
    """All violations of a schedule (deduplicated), by a fixed point over the CFG.

    `table` defaults to the arch's latency table; `legality.calibration.calibrate` passes its own.
    """
    found = (_walk_with_arch_table(instructions, arch) if table is None else _walk(instructions, table))[1]
    return tuple(sorted(found.values(), key=lambda v: (v.consumer_offset, v.producer_offset, v.resource)))


def register_budget(instructions: tuple[Instruction, ...], regcount: int) -> tuple[Violation, ...]:
    """A register at or above REGCOUNT - RESERVED_REGISTERS is an illegal instruction on silicon."""
    highest = highest_register(instructions)
    if highest + 1 + RESERVED_REGISTERS <= regcount:
        return ()
    at = next(i for i in instructions if f"R{highest}" in i.access.reads | i.access.writes)
    return (
        Violation(
            "registers",
            f"R{highest}",
            at.offset,
            at.opcode,
            at.offset,
            at.opcode,
            f"REGCOUNT >= {highest + 1 + RESERVED_REGISTERS}",
            f"REGCOUNT {regcount}",
            f"{RESERVED_REGISTERS} registers above the highest used are reserved",
        ),
    )


def verify_kernel(
    code: KernelCode,
    instructions: tuple[Instruction, ...] | None = None,
    original: tuple[Instruction, ...] | None = None,
    table=None,
    noalias: bool | tuple[int, ...] = False,
    reordered: bool = True,
) -> Report:
    """Verify a decoded kernel (or a new instruction order for it): schedule and register budget.

    With `original` (the compiler's schedule this one was made from), a violation the
    original itself has, at no fewer cycles, is reported as inherited, not as a rejection.
    `table` defaults to the arch's (`legality.evidence.Tally` wraps it to count what was used).
    `noalias` (True: every pointer parameter; or these indices) lets a load cross a barrier past
    stores to other parameters (legality.crossings). `reordered` False: the caller has proven
    that every original instruction keeps its bits and its order and code was only inserted (a
    probe build), so no original access can have crossed a barrier and the crossing rule, which
    matches blocks by position, is not asked; every other rule still judges the inserted code."""
    ins = instructions if instructions is not None else code.instructions
    unknown = tuple((i.offset, i.opcode) for i in ins if not i.known)
    found = register_budget(ins, code.kernel.regcount) + verify_instructions(ins, code.arch, table)
    inherited: tuple[Violation, ...] = ()
    if found and original is not None:
        found, inherited = split(ins, found, _compiler_made(original, code.arch))
    if original is not None:
        found += _neighbour_violations(ins, original, code.arch) + _stack_pointer_writes(ins, original)
        found += _reuse_violations(ins, original, code.arch)
        if reordered:
            found += _crossing_violations(code, ins, original, noalias)
            found += _block_move_violations(code, ins, original, noalias)
    return Report(code.kernel.name, code.arch, found, unknown, inherited)


def _crossing_violations(
    code: KernelCode, ins: tuple[Instruction, ...], original: tuple[Instruction, ...], noalias: bool | tuple[int, ...]
) -> tuple[Violation, ...]:
    """Memory accesses moved across a barrier that the original's stores forbid (legality.crossings)."""
    from legality.crossings import crossing_violations, has_fences

    if ins == original or not has_fences(original):
        return ()
    return crossing_violations(*_memory_args(code, ins, original, noalias))


def _memory_args(
    code: KernelCode, ins: tuple[Instruction, ...], original: tuple[Instruction, ...], noalias: bool | tuple[int, ...]
) -> tuple[
    tuple[Instruction, ...],
    dict[int, frozenset[int]],
    tuple[Instruction, ...],
    dict[int, frozenset[int]],
    bool,
    frozenset[int] | None,
]:
    """(candidate, its buffers per access, original, its buffers, noalias, the declared
    no-alias parameters): what the crossing and the block-move rules both judge memory by."""
    from reorder.analysis.buffers import address_parameters

    declared = None if noalias is True or not noalias else frozenset(noalias)
    return (
        ins,
        address_parameters(replace(code, instructions=ins)),
        original,
        address_parameters(replace(code, instructions=original)),
        bool(noalias),
        declared,
    )


def _block_move_violations(
    code: KernelCode, ins: tuple[Instruction, ...], original: tuple[Instruction, ...], noalias: bool | tuple[int, ...]
) -> tuple[Violation, ...]:
    """Loads moved from a block into its sole predecessor, judged (legality.blockmoves: guard
    and memory; legality.equivalence: the values the two blocks leave); any other change of
    the blocks' sizes is refused there."""
    from legality.blockmoves import block_move_violations, moved_loads
    from legality.equivalence import moved_block_differences

    if ins == original or Counter(i.opcode for i in ins) != Counter(i.opcode for i in original):
        return ()  # nothing moved, or another build (not a reordering): its schedule alone is judged
    moved = moved_loads(original, ins)
    if moved == []:
        return ()
    found = block_move_violations(*_memory_args(code, ins, original, noalias), moved=moved)
    if isinstance(moved, str) or found:
        return found
    o_blocks, c_blocks = basic_blocks(original), basic_blocks(ins)
    values = []
    for k, why in moved_block_differences(original, ins, moved):
        was, now = original[o_blocks[k].start], ins[c_blocks[k].start]
        values.append(
            Violation("block_move", "values", was.offset, was.opcode, now.offset, now.opcode, "same", "differ", why)
        )
    return found + tuple(values)


def _stack_pointer_writes(ins: tuple[Instruction, ...], original: tuple[Instruction, ...]) -> tuple[Violation, ...]:
    """R1 is the stack pointer: ptxas writes it only for stack arithmetic, so a candidate that
    writes it where the original did not is refused. (Suspected on an H200, 2026-11-30, in a
    slice batch that gave NaN; its rebuild without R1 still gave NaN, so R1 was not that bug:
    the rule stays as the compiler's own convention.)"""
    sp = f"R{STACK_POINTER}"
    theirs = {barriers.code_bits(i) for i in original if sp in i.access.writes}
    return tuple(
        Violation(
            "registers",
            sp,
            i.offset,
            i.opcode,
            i.offset,
            i.opcode,
            "as compiled",
            "written",
            "writes R1, the stack pointer, where the original does not",
        )
        for i in ins
        if sp in i.access.writes and barriers.code_bits(i) not in theirs
    )


def _neighbour_violations(
    ins: tuple[Instruction, ...], original: tuple[Instruction, ...], arch: int
) -> tuple[Violation, ...]:
    """Barrier-like instructions without a distance rule keep their compiler-placed neighbours."""
    return tuple(
        Violation(
            "barrier_neighbour", bar.opcode, bar.offset, bar.opcode, at.offset, at.opcode, "as compiled", "changed", why
        )
        for bar, at, why in barriers.neighbour_violations(ins, original, arch)
    )


@lru_cache(maxsize=8)
def original_violations(instructions: tuple[Instruction, ...], arch: int) -> tuple[Violation, ...]:
    """`verify_instructions` of a schedule candidates are made from, kept: every move and
    every block scheduled in it asks again about the same original."""
    return verify_instructions(instructions, arch)


@lru_cache(maxsize=8)
def _compiler_made(original: tuple[Instruction, ...], arch: int) -> dict:
    from legality.inherited import compiler_made

    return compiler_made(original, original_violations(original, arch))


# ---------------------------------------------------------------- scoreboard reuse (legality.scoreboards)


def _stepper(arch: int):
    table = load_table(arch)
    return lambda s, ins: step(s, ins, table, [])


def _waited(s: State, mask: int) -> State:
    out = s.copy()
    _apply_waits(out, mask)
    return out


def _queues(ins: Instruction) -> tuple[str, ...]:
    return queue_of(ins), read_queue(ins)


def _reuse_violations(
    ins: tuple[Instruction, ...], original: tuple[Instruction, ...], arch: int
) -> tuple[Violation, ...]:
    """A reassigned op on a scoreboard another queue's op still holds (legality.scoreboards)."""
    if not scoreboards.reassigned(ins, original):
        return ()
    return scoreboards.reuse_violations(ins, original, block_entry_states(ins, arch), _stepper(arch), _waited, _queues)


def free_scoreboards(
    kernel: tuple[Instruction, ...], start: int, end: int, batch: frozenset[int], first: int, arch: int
) -> list[int] | None:
    """The verdict a move asks before it reassigns scoreboards: which are free, on every path,
    from position `first` of block [start, end) to its end, of every op outside `batch`
    (legality.scoreboards.free_scoreboards)."""
    entry = block_entry_states(kernel, arch)[start]
    return scoreboards.free_scoreboards(kernel, start, end, batch, first, entry, _stepper(arch), _waited)


def reuse_verdict(
    candidate: tuple[Instruction, ...], original: tuple[Instruction, ...], arch: int
) -> tuple[Violation, ...]:
    """The scoreboard-reuse violations of `candidate` against `original` (a verdict)."""
    return _reuse_violations(candidate, original, arch)
