"""Probe variants of a kernel: clock reads put into the compiled code, for a measured timeline.

Sliding probe: variant k reads the cycle counter right after instruction k and stores,
per warp, [clock at entry, clock after k] (two u32, one STG.E.64). The entry stamp is
the last instruction of a short prologue placed before the kernel's first instruction,
which computes this warp's record address once (global warp index from tid/ctaid and
the launch's block and grid shape, times the record size, plus the probe buffer
pointer, a new trailing kernel parameter) so that a probe point costs one clock read
and one store. Every lane stores the same value to the same slot (benign).

Region stamps: a separate build with probe points at chosen phase boundaries; each reads
the global timer, then the cycle counter, then the global timer again (a checkpoint: the
clock read lies between two timer reads, which is what ties SM cycles to GPU nanoseconds,
reorder.probe.hostaxis) and stores [u64 timer before, u32 clock, u32 SM id, u64 timer
after] to the slot (warp, stamp); the warp and block ids are the slot's coordinates.

A probe inside a loop keeps the last iteration's clock. Positions are skipped when the
probed instruction has an operand-reuse flag set (the reuse cache belongs to the next
instruction), ends its block unconditionally (the read would be unreachable), or is not
reachable from the entry (trailing padding).

Control codes of inserted code come from the same latency tables the verifier uses, and
every build is checked: originals bit-identical (branches re-targeted excepted), the
verifier accepts the grown kernel, every generated word disassembles as intended.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import networkx as nx

from legality.barriers import load_rules
from legality.latency import FRESH_SCOREBOARD_CYCLES, latency_class, load_table, lookup_read
from legality.verify import verify_kernel
from reorder.analysis.cfg import basic_blocks, control_flow_graph
from reorder.base.errors import EncodingError, InputError
from reorder.binary.cubin import parse_cubin
from reorder.probe import templates as T
from reorder.sass.control import NO_SCOREBOARD, ControlCode
from reorder.sass.grow import Grown, Insertion, changed_originals, grow_kernel, regcount_for
from reorder.sass.model import Instruction, KernelCode, highest_register, make_instruction
from reorder.sass.readback import read_back

SLIDE_RECORD_BYTES = 8
STAMP_RECORD_BYTES = 24
GLOBAL_DESC_OFFSET = {80: 0x118, 90: 0x208}  # c-bank word ptxas loads the global descriptor from (ref §1.3)
PROLOGUE_SB, ADDRESS_SB = 0, 1  # nothing is in flight at entry, and the prologue waits for both
UNCONDITIONAL_ENDS = frozenset({"BRA", "EXIT", "RET", "JMP", "BRX", "JMX", "KILL"})
REGS_PER_SM, MAX_WARPS_PER_SM, MAX_BLOCKS_PER_SM, REG_GRANULE = 65536, 64, 32, 8


@dataclass(frozen=True, slots=True)
class ProbeLayout:
    """The launch shape the record addresses are computed for (baked into the prologue)."""

    block: tuple[int, int, int]
    grid: tuple[int, int, int]

    @property
    def warps_per_block(self) -> int:
        return math.ceil(self.block[0] * self.block[1] * self.block[2] / 32)

    @property
    def warps(self) -> int:
        return self.warps_per_block * self.grid[0] * self.grid[1] * self.grid[2]


@dataclass(frozen=True, slots=True)
class Scratch:
    """Registers the probe code owns: all above the kernel's own, so nothing of it is touched.

    base, base+1: entry clock and probe clock (slide) or the global timer before (stamps);
    base+2, base+3: the record address; stamps add base+4, base+5 (clock, SM id) and
    base+6, base+7 (the global timer after).
    """

    base: int  # even
    count: int  # 4 (slide) or 8 (stamps), not counting temps
    temps: tuple[int, ...]  # extra registers for tid.z and ctaid.z
    ur: int  # even uniform pair holding the global memory descriptor
    sb: int  # scoreboard of the probe store's operand read
    sb_shared: bool  # True when the kernel uses all six and the probe shares one

    @property
    def addr(self) -> int:
        return self.base + 2

    @property
    def last(self) -> int:
        return max((self.base + self.count - 1, *self.temps))


@dataclass(frozen=True, slots=True)
class Occupancy:
    """Registers per thread and the warps per SM they allow at one block size.

    Model (kept simple on purpose): 65536 registers per SM, allocated per thread in
    multiples of 8, at most 64 warps and 32 blocks per SM; shared memory ignored.
    """

    regs_before: int
    regs_after: int
    warps_before: int
    warps_after: int

    def line(self) -> str:
        return (
            f"registers/thread {self.regs_before} -> {self.regs_after}; max warps/SM at this block size "
            f"{self.warps_before} -> {self.warps_after}"
        )


@dataclass(frozen=True)
class ProbeBuild:
    """One probe variant: the cubin bytes and what was checked about them."""

    data: bytes
    kernel: str
    mode: str  # "slide" or "stamps"
    positions: tuple[int, ...]  # instruction indices probed (after each)
    record_bytes: int  # per warp (slide) or per warp and stamp (stamps)
    layout: ProbeLayout
    param_offset: int
    grown: Grown
    occupancy: Occupancy
    scratch: Scratch


def stamp_positions(code: KernelCode, offsets: Sequence[int]) -> list[int]:
    """Instruction indices of the byte offsets a user names for region stamps."""
    by_offset = {ins.offset: k for k, ins in enumerate(code.instructions)}
    missing = [f"{o:#x}" for o in offsets if o not in by_offset]
    if missing:
        raise InputError(f"{code.kernel.name}: no instruction at offset(s) {', '.join(missing)}")
    return [by_offset[o] for o in offsets]


# ---------------------------------------------------------------- which positions


def probe_positions(code: KernelCode, first: int = 0, last: int | None = None) -> tuple[int, ...]:
    """Instruction indices in [first, last] after which a clock read is meaningful, and legal:
    not beside a barrier whose neighbours stay as compiled (barrier_neighbours)."""
    instructions = code.instructions
    end = len(instructions) - 2 if last is None else min(last, len(instructions) - 2)  # k + 1 must exist
    reachable = _reachable_indices(instructions)
    beside = set(barrier_neighbours(code, first, last))
    out = []
    for k in range(max(0, first), end + 1):
        ins = instructions[k]
        if k not in reachable or ins.ctrl.reuse or k in beside:
            continue
        if ins.base in UNCONDITIONAL_ENDS and not ins.guard:
            continue
        out.append(k)
    return tuple(out)


def barrier_neighbours(code: KernelCode, first: int = 0, last: int | None = None) -> tuple[int, ...]:
    """Indices in [first, last] a probe may not follow: a barrier-like instruction whose
    neighbours the verifier keeps as compiled (MEMBAR, ERRBAR, an unknown opcode...), or the
    instruction just before one. Probing after lastBlockSum's `STG.E` put the probe's store
    between it and its MEMBAR.SC.GPU: the variant was built, then refused by the verifier."""
    keeps = load_rules(code.arch).keeps_neighbours
    instructions = code.instructions
    end = len(instructions) - 2 if last is None else min(last, len(instructions) - 2)
    return tuple(k for k in range(max(0, first), end + 1) if keeps(instructions[k]) or keeps(instructions[k + 1]))


def _reachable_indices(instructions: tuple[Instruction, ...]) -> set[int]:
    cfg = control_flow_graph(instructions)
    blocks = {b.start: b for b in basic_blocks(instructions)}
    live = {0} | nx.descendants(cfg, 0)
    return {i for start in live for i in blocks[start].indices()}


def parse_range(text: str, code: KernelCode) -> tuple[int, int]:
    """`c0-d40` (hex byte offsets, as in a stalls config) -> first and last instruction index."""
    try:
        lo, hi = (int(part, 16) for part in text.split("-"))
    except ValueError:
        raise InputError(f"--range {text!r}: expected two hex offsets like c0-d40") from None
    if lo > hi or lo % 16 or hi % 16:
        raise InputError(f"--range {text!r}: offsets must be multiples of 0x10 with start <= end")
    return lo // 16, min(hi // 16, len(code.instructions) - 1)


# ---------------------------------------------------------------- resources


def allocate_scratch(code: KernelCode, layout: ProbeLayout, mode: str = "slide") -> Scratch:
    """Registers above the kernel's highest, a free uniform pair, a free scoreboard if any."""
    base = highest_register(code.instructions) + 1
    base += base % 2
    count = 4 if mode == "slide" else 8
    extra = int(layout.block[2] > 1) + int(layout.grid[2] > 1)
    temps = tuple(base + count + i for i in range(extra))
    ur = _highest_uniform(code.instructions) + 1
    ur += ur % 2
    if ur + 1 >= 63:
        raise EncodingError(f"{code.kernel.name}: no free uniform register pair for the probe's descriptor")
    used = {c for i in code.instructions for c in (i.ctrl.wbar, i.ctrl.rbar) if c != NO_SCOREBOARD}
    free = [sb for sb in range(6) if sb not in used]
    scratch = Scratch(base, count, temps, ur, free[-1] if free else 5, not free)
    if regcount_for(scratch.last) > 255:
        raise EncodingError(f"{code.kernel.name}: no room for probe registers above R{base - 1} (limit 255)")
    return scratch


def _highest_uniform(instructions) -> int:
    return max(
        (
            int(r[2:])
            for i in instructions
            for r in i.access.reads | i.access.writes
            if r.startswith("UR") and r[2:].isdigit()
        ),
        default=-1,
    )


def occupancy(regs_before: int, regs_after: int, threads_per_block: int) -> Occupancy:
    return Occupancy(
        regs_before,
        regs_after,
        max_warps_per_sm(regs_before, threads_per_block),
        max_warps_per_sm(regs_after, threads_per_block),
    )


def max_warps_per_sm(regs: int, threads_per_block: int) -> int:
    """Warps per SM the register file allows for whole blocks (see Occupancy)."""
    per_warp = math.ceil(max(regs, 1) / REG_GRANULE) * REG_GRANULE * 32
    warps_per_block = math.ceil(threads_per_block / 32)
    blocks = min(REGS_PER_SM // per_warp // warps_per_block, MAX_BLOCKS_PER_SM, MAX_WARPS_PER_SM // warps_per_block)
    return blocks * warps_per_block


# ---------------------------------------------------------------- the inserted code


@dataclass(frozen=True, slots=True)
class Op:
    """One inserted instruction before its control code: what it writes, which SBs it sets/waits."""

    gen: T.Generated
    wbar: int = NO_SCOREBOARD
    rbar: int = NO_SCOREBOARD
    extra_wait: int = 0  # scoreboards to wait on beyond those its own sequence implies
    min_stall: int = 1  # a pad holds the pipes for at least this many cycles


def pad_op(arch: int) -> Op:
    """A NOP before a probe point's first op: the kernel's own op before it may have left its
    pipe busy for up to ISSUE_PAD + 1 cycles (legality.issue: IMAD.WIDE, 4), and the probe
    keeps the kernel's control codes as they are."""
    return Op(T.nop(arch), min_stall=ISSUE_PAD)


ISSUE_PAD = 3


def prologue_ops(
    arch: int, s: Scratch, layout: ProbeLayout, param_offset: int, record_bytes: int, smid: bool = False
) -> list[Op]:
    """Record address into (addr, addr+1), descriptor into the uniform pair, then the entry clock."""
    e, k, a = s.base, s.base + 1, s.addr
    bx, by, _ = layout.block
    gx, gy, _ = layout.grid
    spare = iter(s.temps)
    tz = next(spare) if layout.block[2] > 1 else None
    cz = next(spare) if layout.grid[2] > 1 else None
    loads = [
        (k, "SR_TID.X"),
        (e, "SR_TID.Y") if by > 1 else None,
        (tz, "SR_TID.Z") if tz is not None else None,
        (a, "SR_CTAID.X"),
        (a + 1, "SR_CTAID.Y") if gy > 1 else None,
        (cz, "SR_CTAID.Z") if cz is not None else None,
    ]
    ops = [Op(T.s2r(arch, r, sr), wbar=PROLOGUE_SB) for r, sr in filter(None, loads)]
    if smid:
        ops.append(Op(T.s2r(arch, s.base + 5, "SR_VIRTUALSMID"), wbar=PROLOGUE_SB))
    if by > 1:
        ops.append(Op(T.imad(arch, k, e, bx, k)))
    if tz is not None:  # a block with z threads
        ops.append(Op(T.imad(arch, k, tz, bx * by, k)))
    ops.append(Op(T.shr5(arch, k, k)))
    if gy > 1:
        ops.append(Op(T.imad(arch, a, a + 1, gx, a)))
    if cz is not None:  # a grid with z blocks
        ops.append(Op(T.imad(arch, a, cz, gx * gy, a)))
    ops.append(Op(T.imad(arch, k, a, layout.warps_per_block, k)))
    if arch >= 90:
        ops.append(Op(T.ldc64(arch, a, param_offset), wbar=ADDRESS_SB))
    else:
        ops += [Op(T.mov_const(arch, a, param_offset)), Op(T.mov_const(arch, a + 1, param_offset + 4))]
    ops.append(Op(T.uldc64(arch, s.ur, GLOBAL_DESC_OFFSET[90 if arch >= 90 else 80])))
    ops.append(Op(T.imad_wide(arch, a, k, record_bytes, a)))
    if record_bytes == SLIDE_RECORD_BYTES:
        ops.append(Op(T.clock32(arch, e)))
    return ops + [pad_op(arch)]  # the kernel's first op follows: its pipe may be the last op's


def slide_ops(arch: int, s: Scratch) -> list[Op]:
    """Clock after k, then [entry, clock] to this warp's slot."""
    k = s.base + 1
    return [
        pad_op(arch),
        Op(T.clock32(arch, k), extra_wait=1 << s.sb),
        Op(T.stg64(arch, s.ur, s.addr, 0, s.base), rbar=s.sb),
    ]


def stamp_ops(arch: int, s: Scratch, stamp: int) -> list[Op]:
    """[global timer, clock, SM id, global timer] to slot `stamp` of this warp: the clock
    read issues between the two timer reads (one warp issues in order)."""
    g, c, after = s.base, s.base + 4, s.base + 6
    slot = STAMP_RECORD_BYTES * stamp
    return [
        pad_op(arch),
        Op(T.globaltimer64(arch, g), extra_wait=1 << s.sb),
        Op(T.clock32(arch, c), extra_wait=1 << s.sb),
        Op(T.globaltimer64(arch, after), extra_wait=1 << s.sb),
        Op(T.stg64(arch, s.ur, s.addr, slot, g), rbar=s.sb),
        Op(T.stg64(arch, s.ur, s.addr, slot + 8, c), rbar=s.sb),
        Op(T.stg64(arch, s.ur, s.addr, slot + 16, after), rbar=s.sb),
    ]


def _as_instruction(op: Op, index: int, arch: int) -> Instruction:
    record = {"opcode": op.gen.opcode, "operands": ", ".join(op.gen.operands)}
    return make_instruction(16 * index, op.gen.word, record, arch=arch)


def schedule_ops(ops: Sequence[Op], arch: int, drained: int = 0) -> list[T.Generated]:
    """Control codes for a straight-line sequence of inserted ops, from the verifier's tables.

    Waits: a consumer (or overwriter) of a scoreboarded result waits on its SB, an
    overwriter of a scoreboarded source waits on the read SB; stalls: the cumulative
    stall from a fixed-latency producer to its consumer covers the table's distance, and
    a freshly set SB gets its extra cycle before it is waited on. The first `drained`
    ops (the prologue, when scheduling a probe point as if it followed it directly)
    have had their scoreboards waited for already: they add stalls, never waits, so a
    probe point never waits on a scoreboard the kernel's own loads may be using.
    """
    table = load_table(arch)
    ins = [_as_instruction(op, i, arch) for i, op in enumerate(ops)]
    stalls = [op.min_stall for op in ops]
    waits = [op.extra_wait for op in ops]
    for j, consumer in enumerate(ins):
        for i in range(j):
            need = _need(ops[i], ins[i], ops[j], consumer, table)
            if need is None:
                continue
            cycles, sb = need
            if sb is not None and i < drained <= j:
                continue
            if sb is not None:
                waits[j] |= 1 << sb
            gap = sum(stalls[i:j])
            if gap < cycles:
                stalls[j - 1] += cycles - gap
        _keep_issue_rate(ins, stalls, j, arch)
    out = []
    for op, stall, wait in zip(ops, stalls, waits):
        stall = min(stall, 15)
        ctrl = ControlCode(stall=stall, yield_bit=int(stall <= 11), wbar=op.wbar, rbar=op.rbar, wait=wait, reuse=0)
        out.append(op.gen.with_ctrl(ctrl))
    return out


def _keep_issue_rate(ins: Sequence[Instruction], stalls: list[int], j: int, arch: int) -> None:
    """Op j issues no sooner after the previous op of its pipe than that op keeps the pipe
    busy (legality.issue: the verifier's rule)."""
    from legality import issue

    pipe = None if ins[j].is_variable_latency else issue.pipe_of(ins[j].opcode)
    if pipe is None:
        return
    for i in range(j - 1, -1, -1):
        if not ins[i].is_variable_latency and issue.pipe_of(ins[i].opcode) == pipe:
            gap, need = sum(stalls[i:j]), issue.load_rates(arch).busy_for(ins[i].opcode)
            if gap < need:
                stalls[j - 1] += need - gap
            return


def _need(p_op: Op, p: Instruction, c_op: Op, c: Instruction, table) -> tuple[int, int | None] | None:
    """(cycles the gap must cover, scoreboard to wait on) of one producer/consumer pair, or None."""
    raw = p.access.writes & c.access.reads
    waw = p.access.writes & c.access.writes
    war = (p.access.reads & c.access.writes) - {r for r in p.access.reads if r.startswith("SR_")}
    if p.is_variable_latency:
        if (raw or waw) and p_op.wbar != NO_SCOREBOARD:
            return FRESH_SCOREBOARD_CYCLES, p_op.wbar
        if war and p_op.rbar != NO_SCOREBOARD:
            return FRESH_SCOREBOARD_CYCLES, p_op.rbar
        return None
    cycles = 0
    pc, cc = latency_class(p), latency_class(c)
    for res in raw:
        cycles = max(cycles, lookup_read(table, p.opcode, pc, c, res).cycles)
    if waw:
        cycles = max(cycles, table.lookup_pair(p.opcode, c.opcode, pc, cc, "waw").cycles)
    if war:
        cycles = max(cycles, table.lookup_pair(p.opcode, c.opcode, pc, cc, "war").cycles)
    return (cycles, None) if cycles else None


# ---------------------------------------------------------------- builds


def build_slide(code: KernelCode, position: int, layout: ProbeLayout) -> ProbeBuild:
    """Variant with the entry stamp and one clock read after instruction `position`."""
    if position not in probe_positions(code, position, position):
        beside = (
            " (beside a barrier whose neighbours stay as compiled)"
            if barrier_neighbours(code, position, position)
            else ""
        )
        raise InputError(
            f"{code.kernel.name}: cannot probe after instruction {position} "
            f"({code.instructions[position].text if position < len(code.instructions) else 'none'}){beside}"
        )
    return _build(code, (position,), layout, "slide")


def build_stamps(code: KernelCode, positions: Sequence[int], layout: ProbeLayout) -> ProbeBuild:
    """Variant with region stamps after each of `positions` (phase boundaries)."""
    allowed = set(probe_positions(code))
    bad = [p for p in positions if p not in allowed]
    if bad:
        raise InputError(f"{code.kernel.name}: cannot stamp after instruction(s) {bad}")
    return _build(code, tuple(sorted(set(positions))), layout, "stamps")


def _build(code: KernelCode, positions: tuple[int, ...], layout: ProbeLayout, mode: str) -> ProbeBuild:
    from reorder.binary.arches import family

    if family(code.arch) > 90:  # Blackwell: the templates' words and constant-bank offsets are sm_80/sm_90's
        raise InputError(
            f"{code.kernel.name}: sm_{code.arch}: probe clock reads are encoded for sm_80 and sm_90 only "
            "(docs/blackwell.md)"
        )
    arch = 90 if code.arch >= 90 else 80
    scratch = allocate_scratch(code, layout, mode)
    record = SLIDE_RECORD_BYTES if mode == "slide" else STAMP_RECORD_BYTES * len(positions)
    param_offset = _param_offset(code)
    prologue = prologue_ops(arch, scratch, layout, param_offset, record, smid=mode == "stamps")
    points = [
        slide_ops(arch, scratch) if mode == "slide" else stamp_ops(arch, scratch, n) for n in range(len(positions))
    ]
    # schedule as if each probe point directly followed the prologue: the worst case for
    # the distance from the prologue's writes to the probe's reads
    prologue[-1] = replace(prologue[-1], extra_wait=prologue[-1].extra_wait | 1 << PROLOGUE_SB | 1 << ADDRESS_SB)
    words = [schedule_ops(prologue + p, arch, drained=len(prologue)) for p in points]
    head = [max(column, key=lambda g: ControlCode.from_word(g.word).stall) for column in zip(*words)][: len(prologue)]
    tails = [w[len(prologue) :] for w in words]
    T.check_generated(head + [g for t in tails for g in t], arch)
    insertions = [Insertion(0, tuple(g.word for g in head))]
    insertions += [Insertion(p + 1, tuple(g.word for g in t)) for p, t in zip(positions, tails)]
    grown = grow_kernel(code, insertions, regcount_for(scratch.last), add_pointer_param=True)
    if grown.param_offset != param_offset:
        raise EncodingError(
            f"{code.kernel.name}: probe pointer at {grown.param_offset:#x}, code reads {param_offset:#x}"
        )
    threads = layout.block[0] * layout.block[1] * layout.block[2]
    occ = occupancy(grown.regcount_before, grown.regcount_after, threads)
    return ProbeBuild(grown.data, code.kernel.name, mode, positions, record, layout, param_offset, grown, occ, scratch)


def _param_offset(code: KernelCode) -> int:
    """Where the added pointer will sit: the c-bank parameter base + old bytes rounded to 8."""
    from reorder.sass.grow import with_pointer_param

    return with_pointer_param(code.kernel.attrs, len(code.kernel.params))[1]


@dataclass(frozen=True, slots=True)
class BuildCheck:
    """What `check_build` found: empty tuples mean the build is sound."""

    changed: tuple[int, ...]  # original offsets whose bits changed (re-targeted branches excepted)
    violations: tuple[str, ...]  # verifier lines
    code: KernelCode


def check_build(original: KernelCode, build: ProbeBuild) -> BuildCheck:
    """Re-read and decode the grown cubin (read back from the original's listing where every word
    is vouched for, reorder.sass.readback; nvdisasm otherwise), compare originals bit for bit,
    run the verifier."""
    cubin = parse_cubin(build.data, f"probe of {build.kernel}")
    grown_code = read_back(cubin, original)
    changed = changed_originals(original, grown_code.kernel.text, build.grown)
    # the originals' bits and order are compared above: the probe only inserts code
    report = verify_kernel(grown_code, original=original.instructions, reordered=False)
    return BuildCheck(changed, tuple(v.line() for v in report.violations), grown_code)
