"""Where each accepted distance came from, and the compiler's own distances in the cubin at hand.

`reorder verify kernel.cubin` on what nvcc or Triton gave a kernel engineer must say legal:
the tables cannot hold every pair ptxas schedules (a few hundred calibration kernels still
miss pairs a new kernel uses), yet the compiler's choice for a pair is the very authority
the tables copy (`legality.latency`, "never below the compiler's own choice").

So standalone verification of a cubin takes the cubin's own distances as evidence, and
only this narrowly:

- for exactly one key: producer opcode, consumer opcode and dependency kind (read, with
  the consumer's operand slot, `legality.verify.read_slot`; write-after-read; write-after-
  write; the unwaited write-after-read of a variable-latency reader, `war_sb`). Never a
  class minimum: one of those let a load's address be read a cycle early on silicon.
- at no fewer cycles than the fewest the cubin itself leaves for that key (in the kernel
  the violation is in);
- never for a missing scoreboard wait on a read or a write, nor a result issued with no
  scoreboard at all (`untracked`: no distance makes those safe, and ptxas' own unscoreboarded
  ops are covered by a later op's scoreboard, `legality.verify.IN_ORDER_WITH_EACH_OTHER`), an
  encoding, the register budget, a barrier rule (`legality.barriers`), and never below a
  floor measured on silicon: a silicon measurement outranks the compiler.

Why this is sound for compiler output, and what it does not prove. If the cubin is what
ptxas emitted, each accepted distance is one ptxas chose for that exact pair on that arch,
the same evidence a table entry carries; a distance larger than one ptxas chose for the same
key elsewhere in the kernel is covered by that smaller choice. For a cubin that was edited
the premise fails: an edit that lowers the only instance of a pair makes its own evidence,
and one that lowers every instance of a key lowers the minimum with it. Standalone
verification cannot tell the two apart, so it says in its output which distances rest on
this evidence, `--tables-only` turns it off, and nothing that makes or judges candidates
uses it: the scheduler and `verify --against ORIGINAL` accept a distance below the tables
only where the original has the same dependency (same instruction text) at no more cycles
(`legality.inherited`), so a mutant that lowers one instance of a pair below the original's
tightest instance of it is rejected there, whatever else the kernel holds.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from legality.latency import Entry, LatencyTable, latency_class, load_table, lookup_read, read_slot
from legality.verify import Report, Violation, verify_kernel
from reorder.sass.model import Instruction, KernelCode

Key = tuple[str, str, str]  # producer opcode, consumer opcode, kind (raw#slot, war, waw, war_sb)
DISTANCE_KINDS = frozenset({"raw", "raw_pred", "raw_guard", "raw_u", "waw", "war"})


def source_of(entry: Entry) -> str:
    """Which kind of evidence a table entry is: silicon (a floor from `reorder latency-probe`,
    or a distance a wrong result on an H200 showed too short), ptxas-observed, reference
    (NVIDIA's tables, and bounds kept conservative after a wrong result on an H200 that say
    exact ptxas pairs may lower them), unmeasured (an arch's reference carried from another
    arch's, never measured on its own silicon: `legality.calibration.carry`) or default (an
    unknown pair's worst case)."""
    text = entry.provenance
    if text.startswith("measured") or (text.startswith("H200") and "can lower it" not in text):
        return "silicon"
    if text.startswith("unmeasured"):
        return "unmeasured"
    if text.startswith("ptxas-observed"):
        return "ptxas-observed"
    if text.startswith("default"):
        return "default"
    return "reference"


def exact_key(v: Violation, producer: Instruction, consumer: Instruction) -> tuple[Key, int] | None:
    """The exact key of one reported dependency and the cycles it was given; None where no
    distance can make it legal (a missing wait, an encoding, a barrier, the register budget)."""
    if v.kind == "scoreboard":
        if v.detail.startswith("WAR") and v.elapsed is not None:
            return (producer.opcode, consumer.opcode, "war_sb"), v.elapsed
        return None
    if v.kind not in DISTANCE_KINDS or not isinstance(v.provided, int):
        return None
    kind = f"{v.kind}#{read_slot(v.resource, consumer)}" if v.kind.startswith("raw") else v.kind
    return (producer.opcode, consumer.opcode, kind), v.provided


def required_entry(v: Violation, producer: Instruction, consumer: Instruction, table: LatencyTable) -> Entry | None:
    """The table entry a fixed-distance violation fell short of (None for the others)."""
    if v.kind.startswith("raw"):
        return lookup_read(table, producer.opcode, latency_class(producer), consumer, v.resource)
    if v.kind in ("war", "waw"):
        return table.lookup_pair(
            producer.opcode, consumer.opcode, latency_class(producer), latency_class(consumer), v.kind
        )
    return None


@dataclass(frozen=True, slots=True)
class CompilerChoice:
    """One key the tables do not cover at the distance the compiler used, with its evidence."""

    key: Key
    cycles: int  # the fewest cycles the compiler left for this key in the kernel
    instances: int  # how many of the kernel's dependencies have this key and fall below the tables
    required: int | str  # what the tables ask
    source: str  # of what the tables ask (source_of)
    example: tuple[int, int]  # producer and consumer offsets of the tightest instance

    def line(self) -> str:
        producer, consumer, kind = self.key
        return (
            f"compiler-in-this-cubin {kind:<10} {producer} -> {consumer}: {self.cycles} cycles as compiled "
            f"({self.instances} dependenc{'y' if self.instances == 1 else 'ies'}, "
            f"tightest {self.example[0]:#06x} -> {self.example[1]:#06x}); "
            f"tables ask {self.required} ({self.source})"
        )


def compiler_choices(
    instructions: tuple[Instruction, ...], violations: tuple[Violation, ...], table: LatencyTable
) -> tuple[tuple[Violation, ...], tuple[CompilerChoice, ...]]:
    """(still violations, the compiler's own choices that cover the others), for a kernel
    taken as its compiler emitted it (see the module docstring)."""
    at = {ins.offset: ins for ins in instructions}
    kept: list[Violation] = []
    chosen: dict[Key, CompilerChoice] = {}
    for v in violations:
        p, c = at.get(v.producer_offset), at.get(v.consumer_offset)
        keyed = exact_key(v, p, c) if p is not None and c is not None else None
        entry = required_entry(v, p, c, table) if keyed is not None and p is not None and c is not None else None
        if keyed is None or (entry is not None and source_of(entry) == "silicon"):
            kept.append(v)
            continue
        key, cycles = keyed
        old = chosen.get(key)
        tightest = old is None or cycles < old.cycles
        chosen[key] = CompilerChoice(
            key,
            cycles if tightest or old is None else old.cycles,
            1 + (old.instances if old else 0),
            v.required,
            source_of(entry) if entry is not None else "no table entry",
            (v.producer_offset, v.consumer_offset) if tightest or old is None else old.example,
        )
    return tuple(kept), tuple(sorted(chosen.values(), key=lambda c: c.key))


class Tally:
    """A latency table that counts which of its facts a verification consulted, by source
    (`source_of`): what a legal verdict rests on. Reads only; it changes no answer."""

    def __init__(self, table: LatencyTable) -> None:
        self.table = table
        self.arch = table.arch
        self.used: set[Entry] = set()
        self.patterns: set[tuple[str, str, str]] = set()  # exact unwaited patterns accepted

    def lookup(self, producer: str, consumer: str, kind: str) -> Entry:
        return self._note(self.table.lookup(producer, consumer, kind))

    def lookup_pair(self, *args, **kwargs) -> Entry:
        return self._note(self.table.lookup_pair(*args, **kwargs))

    def unwaited_war_ok(self, reader_opcode: str, writer_opcode: str, elapsed: int) -> bool:
        ok = self.table.unwaited_war_ok(reader_opcode, writer_opcode, elapsed)
        if ok:
            self.patterns.add((reader_opcode, writer_opcode, "war_sb"))
        return ok

    def max_cycles(self) -> int:
        return self.table.max_cycles()

    def _note(self, entry: Entry) -> Entry:
        self.used.add(entry)
        return entry

    def counts(self) -> Counter:
        """Facts consulted per source; exact unwaited patterns count as ptxas-observed."""
        out = Counter(source_of(e) for e in self.used)
        out["ptxas-observed"] += len(self.patterns)
        return out


SOURCES = ("reference", "silicon", "ptxas-observed", "unmeasured", "default")


def verify_as_compiled(
    code: KernelCode, instructions: tuple[Instruction, ...] | None = None, tables_only: bool = False
) -> Report:
    """Standalone verification of a kernel (or an order of it) taken as its compiler emitted
    it: the tables, then (unless `tables_only`) the kernel's own distances for exactly their
    keys (module docstring); the report counts the table facts consulted by source."""
    ins = instructions if instructions is not None else code.instructions
    table = load_table(code.arch)
    tally = Tally(table)
    report = verify_kernel(code, ins, table=tally)
    counts = tally.counts()
    sources = tuple((s, counts[s]) for s in SOURCES if counts[s])
    if tables_only or not report.violations:
        return Report(report.kernel, report.arch, report.violations, report.unknown, sources=sources)
    kept, chosen = compiler_choices(ins, report.violations, table)
    return Report(report.kernel, report.arch, kept, report.unknown, compiler=chosen, sources=sources)


def unmeasured_facts(
    code: KernelCode, instructions: tuple[Instruction, ...], original: tuple[Instruction, ...] | None = None
) -> tuple[str, ...]:
    """One line per table fact the verdict on `instructions` consulted that no silicon measured
    (every source but `silicon`): what a result on an arch without measured floors rests on."""
    tally = Tally(load_table(code.arch))
    verify_kernel(code, instructions, original=original, table=tally)
    lines = {
        f"{e.producer} -> {e.consumer} {e.kind} {e.cycles} cycles ({source_of(e)}): {e.provenance[:160]}"
        for e in tally.used
        if source_of(e) != "silicon"
    }
    return tuple(sorted(lines))
