"""Fixed-latency producer -> consumer distances per architecture, each with its provenance.

Instructions fall into latency classes (pipes). A RAW distance is the number of cycles
from the producer's issue to the consumer's issue that the result needs; the stalls
accumulated between them must cover it. Variable-latency producers (loads, MUFU, S2R,
...) are not here: their consumers must wait on a scoreboard instead.

Sources, in order of trust (an entry says which one it came from):
1. `measured`: a stall sweep on silicon (`reorder latency-probe`), loaded from
   `measured_sm_XX.toml` in `$REORDER_TABLES` (a folder the probe wrote) or in
   `legality/tables/` when present; the floor found there is used.
2. `ptxas-observed`: the smallest distance ptxas itself leaves over the project corpus
   and the generated calibration kernels (`legality.calibration.calibrate`, `legality.calibration`,
   `tables/ptxas_sm_XX.toml`, one per arch where calibrated); used where it is below the
   reference, since the compiler's own choice is the authority for its hardware. For
   reads it is taken only for the exact producer and consumer opcodes and the consumer's
   operand slot ptxas used: a class-wide minimum mixed operands read at different stages
   (an H200 run found LEA.HI.X -> LDG address at 4 wrong, where ptxas leaves 5, because a
   conversion's operand is read at 4).
3. `reference`: measured on an H200 or read from NVIDIA's own scheduling tables as
   recovered in reference/sass_hopper_facts.md §3 (section cited per entry). An arch never
   measured on its own silicon (Blackwell: sm_100, sm_103, sm_120) has its own `sm_XX.toml`,
   Hopper's entries carried over and raised to that arch's compiler floors, every one labelled
   `unmeasured on sm_XX silicon` (`legality.calibration.carry`).
4. `default`: the largest value of the compiler table for the producer's row, used for
   any pair without 1-3.

Margin policy: the verifier requires the entry's cycles as they stand. Floors from
silicon sweeps are where results went from wrong to right on one operand shape; an
entry is only taken from a sweep if every variant at and above the floor was correct
over all input sets. The moves never cut a stall below the compiler's own choice for a
pair that has no `measured` or `reference` entry.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from reorder.binary.arches import family
from reorder.sass import opcodes as op
from reorder.sass.model import Instruction

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

TABLE_DIR = Path(__file__).parent / "tables"

# A wait issued less than this many cycles after the op that set a scoreboard does not see it
# (the verifier requires it, the scheduler plans for it).
FRESH_SCOREBOARD_CYCLES = 2

# Latency classes (pipes) of fixed-latency instructions.
FXU, FMAI, IMAD, FP16, FMALITE, UDP, UDP_LIGHT, R2UR_CLASS, CS2R_CLASS, P2R_CLASS, MIO, BRU = (
    "FXU",
    "FMAI",
    "IMAD",
    "FP16",
    "FMALITE",
    "UDP",
    "UDP_LIGHT",
    "R2UR",
    "CS2R",
    "P2R",
    "MIO",
    "BRU",
)

_CLASS_OF: dict[str, str] = (
    dict.fromkeys(
        "IADD3 LOP3 SHF SEL MOV PRMT ISETP IMNMX IABS LEA SGXT BMSK R2P PLOP3 "
        "I2I I2IP I2FP F2IP FSEL FSETP FMNMX FSET IADD "
        "VABSDIFF VABSDIFF4 MOVM F2FP LEPC VOTE".split(),
        FXU,
    )
    | dict.fromkeys("FFMA FADD FMUL FSWZADD".split(), FMAI)
    # VIADD issues to the FMA-lite pipe like IMAD (ref 2.2 pipe sets), not the integer ALU: on the
    # H200 a VIADD -> LOP3 gap of 4 (the ALU-to-ALU floor) read a stale value (find_index) and
    # VIADD -> (HFMA2.MMA) -> LOP3 at 4 faulted (normalize_weights swap), where ptxas leaves 5.
    # VIMNMX/VIADDMNMX/VIMNMX3 have no recorded pipe: they stay unclassified (conservative
    # defaults) except for exact pairs ptxas itself emits.
    | dict.fromkeys("IMAD IMUL IDP VIADD".split(), IMAD)
    # CS2R has a class of its own, with no entries (an unknown pair's worst case, or the exact
    # distances ptxas itself leaves): fixed latency, and on the ALU's pipe for issue
    # (legality.issue), but not at the ALU's distance. On an H200 `CS2R R14, SRZ` read by a
    # VIADD 5 cycles on (the ALU -> IMAD floor) gave a stale base and the next load faulted with
    # a misaligned address (a Triton row sum's prefetch twin), where ptxas leaves 8; it reads a
    # CS2R no sooner than 7 by the ALU, 8 by IMAD, 9 by FMA, 6 by a DFMA (2026-12-02_latency_audit).
    | {"CS2R": CS2R_CLASS}
    # P2R likewise (benchmarks/results/2026-12-02_latency_audit): over every cubin of the repository
    # and 1,450 calibration kernels ptxas never reads a P2R result sooner than 8 cycles on (160
    # pairs, P2R -> ISETP, every one in warp_select), where the ALU class allowed 4; no silicon
    # measurement covers it. Its row in the reference tables asks 8 of every read (sm_80, sm_90;
    # an unknown pair's 15 on the arches that have no P2R row).
    | {"P2R": P2R_CLASS}
    | dict.fromkeys("HADD2 HFMA2 HMUL2 HSET2 HSETP2 HMNMX2".split(), FP16)
    | dict.fromkeys("DFMA DADD DMUL DSETP DMNMX DSET".split(), FMALITE)
    | dict.fromkeys(
        "UIADD3 UIMAD ULEA ULOP3 USHF USEL UPRMT UFLO UPOPC UBREV UMNMX USGXT UBMSK "
        "UISETP UPLOP3 UPSETP UVIADD UF2FP UP2UR UR2UP UCLEA UIABS".split(),
        UDP,
    )
    | dict.fromkeys("ULDC UMOV VOTEU ULEPC".split(), UDP_LIGHT)  # ref 3.1: these forward to UDP in 2
    | {"R2UR": R2UR_CLASS}
)


def latency_class(ins: Instruction) -> str:
    """The pipe class of an instruction on its cubin's arch (see `opcode_class`)."""
    return opcode_class(ins.opcode, ins.arch)


@lru_cache(maxsize=8192)  # a pure function of the text, asked at every instruction of every walk
def opcode_class(opcode: str, arch: int = 0) -> str:
    """The pipe class of an opcode on `arch`; HFMA2.MMA runs on the fp64-lite pipe on sm_80/sm_90.
    A variable-latency op is MIO, and which ops are depends on the arch (the FP64 pipe is
    scoreboarded on sm_80 and sm_120, not on sm_90: opcodes.VARIABLE_LATENCY_ON); 0 names no
    arch (the ops variable on every arch), for a key whose producer is known fixed."""
    base, *modifiers = opcode.split(".")
    if op.is_variable_latency(base, arch):
        return MIO
    if base in op.BARRIERS:
        return BRU
    if base == "HFMA2" and "MMA" in modifiers:
        return FMALITE
    return _CLASS_OF.get(base, "UNKNOWN")


@dataclass(frozen=True, slots=True)
class Entry:
    """One latency fact: producer class -> consumer class for a dependency kind."""

    producer: str
    consumer: str
    kind: str  # raw, raw_guard (predicate as @P), raw_pred (predicate as a source), raw_u (uniform), waw, war
    cycles: int
    provenance: str


@dataclass(frozen=True)
class LatencyTable:
    """All entries of one architecture, with a lookup that falls back to a cited default."""

    arch: int
    entries: dict[tuple[str, str, str], Entry]
    defaults: dict[tuple[str, str], Entry]  # (producer, kind) -> worst case of that row
    pairs: dict[tuple[str, str, str], Entry] | None = None  # exact opcodes ptxas scheduled closer

    def lookup_pair(
        self,
        producer_opcode: str,
        consumer_opcode: str,
        producer: str,
        consumer: str,
        kind: str,
        slot: str | None = None,
    ) -> Entry:
        """An exact opcode pair the compiler itself scheduled at a smaller distance wins over
        the class entry (the compiler's own choice for that very pair); else the class entry.
        A read is matched with the same operand slot only (`read_slot`)."""
        key = f"{kind}#{slot}" if slot is not None and kind.startswith("raw") else kind
        exact = (self.pairs or {}).get((producer_opcode, consumer_opcode, key))
        entry = self.lookup(producer, consumer, kind)
        return exact if exact is not None and exact.cycles < entry.cycles else entry

    def unwaited_war_ok(self, reader_opcode: str, writer_opcode: str, elapsed: int) -> bool:
        """Whether a variable-latency writer may overwrite a register a variable-latency
        reader has not read yet (its read scoreboard not waited on): only where ptxas
        itself does so for that exact opcode pair, at no fewer cycles (`war_sb` pairs;
        Triton's HGMMA matmul stores a tile with STG.E and refills the registers with
        LDS.128 without a wait, relying on the memory pipe's order)."""
        entry = (self.pairs or {}).get((reader_opcode, writer_opcode, "war_sb"))
        return entry is not None and elapsed >= entry.cycles

    def lookup(self, producer: str, consumer: str, kind: str) -> Entry:
        for key in ((producer, consumer, kind), (producer, "*", kind)):
            if key in self.entries:
                return self.entries[key]
        default = self.defaults.get((producer, kind))
        if default is not None:
            return default
        return unknown_pair(producer, consumer, kind)

    def required(self, producer: Instruction, consumer: Instruction, kind: str) -> Entry:
        return self.lookup(latency_class(producer), latency_class(consumer), kind)

    def max_cycles(self) -> int:
        return max([e.cycles for e in self.entries.values()] + [e.cycles for e in self.defaults.values()] + [15])


# Consumers that read a predicate operand the way a guard is read (13 cycles after an ALU
# write on sm_90, ref 3.1 "MIO/BRU predicate readers"): branches, and VOTE, where ptxas
# leaves 13 and 12 gave wrong results on an H200 (warp_select_k100), and BAR (BAR.RED's
# predicate: FSETP -> BAR.RED.POPC at 4, 5 and 6 cycles counted wrong on an H200, ptxas leaves
# 13; benchmarks/results/2026-11-30_barrier).
# Variable-latency ops read a predicate operand the same way (ref 3.1's MIO readers): LDGSTS's
# zero-fill predicate 4 cycles after its ISETP copied stale data on an H200 (Triton softmax,
# 2026-11-30), where ptxas leaves 13 in every LDGSTS of the repository's cubins.
GUARD_LIKE_READERS = frozenset({"BRA", "EXIT", "BRX", "RET", "VOTE", "VOTEU", "BAR"})


def read_kind(resource: str, ins: Instruction) -> str:
    """Latency-table kind of reading `resource` in `ins`: raw, raw_u, raw_pred or raw_guard."""
    if resource.startswith("UR"):
        return "raw_u"
    if resource.startswith(("P", "UP")):
        guard = ins.guard.lstrip("@!")
        guard_like = ins.base in GUARD_LIKE_READERS or ins.is_variable_latency
        return "raw_guard" if resource == guard or guard_like else "raw_pred"
    return "raw"


@lru_cache(maxsize=65536)
def _slots(opcode: str, operands: tuple[str, ...]) -> dict[str, str]:
    from reorder.sass.operands import operand_names

    out: dict[str, str] = {}
    for index, names in operand_names(opcode, operands)[1]:
        for k, name in enumerate(names):
            out.setdefault(name, f"{index}.{k}" if k else f"{index}")
    return out


def read_slot(resource: str, ins: Instruction) -> str:
    """Which operand of `ins` reads `resource`: its index among the operands, with the
    position inside the operand after a dot for a later register of a pair or an address
    (`desc[UR8][R6.64]` reads UR8, UR9, R6, R7: R7 is '1.3'); 'g' for the guard.

    A consumer can read its operands at different stages (a load's address before a
    store's data, IMAD.WIDE's addend after its factors), so what ptxas leaves before one
    operand says nothing about another: the compiler's own distances are keyed by slot.
    """
    if ins.guard and resource == ins.guard.lstrip("@!"):
        return "g"
    return _slots(ins.opcode, ins.operands).get(resource, "?")


def lookup_read(table: LatencyTable, producer_opcode: str, producer_cls: str, consumer: Instruction, resource: str):
    """The table entry for `consumer` reading `resource` written by a fixed-latency producer."""
    return table.lookup_pair(
        producer_opcode,
        consumer.opcode,
        producer_cls,
        latency_class(consumer),
        read_kind(resource, consumer),
        read_slot(resource, consumer),
    )


def unknown_pair(producer: str, consumer: str, kind: str) -> Entry:
    """What a pair no table row covers needs: the largest single stall for a read, 2 else."""
    return Entry(
        producer, consumer, kind, 15 if kind.startswith("raw") else 2, "default: unknown pair, the largest single stall"
    )


def _entries_from_toml(doc: dict, source: str) -> list[Entry]:
    out = []
    for row in doc.get("entry", []):
        out.append(
            Entry(row["producer"], row["consumer"], row["kind"], int(row["cycles"]), row.get("provenance", source))
        )
    return out


def read_table(path: Path) -> dict:
    """A table file's TOML document. The compiler's observed tables are a megabyte of TOML
    (0.12 CPU-s for tomllib, in every process that verifies: each CLI run, each search or
    fuzz worker, the Triton hook's first compile). legality.flat_toml reads their generated
    grammar in a sixth of that (tomllib reads anything else), and the parsed document is kept
    as JSON in the disk cache (reorder.base.diskcache), keyed by the file's bytes, so it is
    parsed once per content."""
    from legality import flat_toml
    from reorder.base.diskcache import cached_json, key_of

    data = path.read_bytes()

    def parsed() -> dict:
        text = data.decode("utf-8")
        fast = flat_toml.loads(text)  # the generated tables' grammar, 10x faster; None: anything else
        return fast if fast is not None else tomllib.loads(text)

    return cached_json("table", key_of(data), parsed)


def _observed_table(arch: int, fam: int) -> Path:
    """The ptxas-observed table of this very arch where one was calibrated (sm_86 and sm_89
    schedule differently from sm_80: ptxas' choices for one say nothing about the other),
    else its family's."""
    own = TABLE_DIR / f"ptxas_sm_{arch}.toml"
    return own if own.exists() else TABLE_DIR / f"ptxas_sm_{fam}.toml"


def _reference(arch: int) -> tuple[dict[tuple[str, str, str], Entry], dict[tuple[str, str], Entry]]:
    """Entries and row defaults of the arch's own reference table where it has one (Blackwell's,
    carried), else its family's (sm_80's for sm_75..sm_89, sm_90's for Hopper)."""
    own = TABLE_DIR / f"sm_{arch}.toml"
    base = own if own.exists() else TABLE_DIR / f"sm_{90 if family(arch) >= 90 else 80}.toml"
    doc = tomllib.loads(base.read_text())
    entries = {(e.producer, e.consumer, e.kind): e for e in _entries_from_toml(doc, str(base.name))}
    defaults = {
        (e.producer, e.kind): e
        for e in (
            Entry(d["producer"], "*", d["kind"], int(d["cycles"]), d["provenance"]) for d in doc.get("default", [])
        )
    }
    return entries, defaults


def measured_path(arch: int, name: str = "measured") -> Path | None:
    """Where this arch's silicon table `<name>_sm_XX.toml` is: in `$REORDER_TABLES` (the folder
    `reorder latency-probe --out` wrote, used as it stands) first, then in legality/tables/."""
    folders = [Path(os.environ["REORDER_TABLES"])] if os.environ.get("REORDER_TABLES") else []
    found = [f / f"{name}_sm_{arch}.toml" for f in [*folders, TABLE_DIR]]
    return next((p for p in found if p.is_file()), None)


def unmeasured_arch(arch: int) -> bool:
    """True for an arch whose class-level facts were never measured on its own silicon and for
    which no silicon table is at hand (`reorder.binary.arches`: Blackwell until `reorder
    latency-probe` has run on its GPU): its tables rest on the compiler and on Hopper alone."""
    from reorder.binary.arches import ARCHS

    info = ARCHS.get(arch)
    return info is not None and info.silicon is None and info.family >= 100 and measured_path(arch) is None


def _measured(arch: int) -> dict[tuple[str, str, str], Entry]:
    """Silicon floors of this very arch (`reorder latency-probe`), where measured."""
    measured = measured_path(arch)
    if measured is None:
        return {}
    return {
        (e.producer, e.consumer, e.kind): e
        for e in _entries_from_toml(tomllib.loads(measured.read_text()), measured.name)
    }


def class_table(arch: int, observed: list[Entry]) -> LatencyTable:
    """The class-level table of an arch (no exact pairs): the reference table, overlaid with
    silicon measurements. A ptxas-observed class-wide entry (write-after-write, unscoreboarded
    reads; never reads or write-after-read) only fills a class pair the reference lacks, where
    it asks more than an unknown pair's default: it never lowers a requirement. A class-wide
    minimum mixes opcodes and operands: one let a load's address be read a cycle early on
    silicon, and MIO -> FXU `untracked` at 31 (POPC -> IADD3 on sm_80) let a load whose
    scoreboard a mutant dropped be read 49 cycles later (softmax_row, held-out). Only the
    exact pairs ptxas used (`LatencyTable.pairs`) go below the reference."""
    entries, defaults = _reference(arch)
    for e in observed:
        if e.kind == "war" or e.kind.startswith("raw"):
            continue
        key = (e.producer, e.consumer, e.kind)
        known = entries.get(key) or defaults.get((e.producer, e.kind))
        if known is None and e.cycles > unknown_pair(e.producer, e.consumer, e.kind).cycles:
            entries[key] = e
    return LatencyTable(arch, entries | _measured(arch), defaults)


@lru_cache(maxsize=8)
def load_table(arch: int) -> LatencyTable:
    """The table for an arch: the reference table of its family, the compiler's own lower
    distances (`ptxas_sm_XX.toml`: class-wide entries and exact pairs), and silicon
    measurements, which replace both."""
    observed = _observed_table(arch, 90 if family(arch) >= 90 else 80)
    if not observed.exists():
        return class_table(arch, [])
    doc = read_table(observed)
    pairs = {
        (e.producer, e.consumer, e.kind): e for e in _entries_from_toml({"entry": doc.get("pair", [])}, observed.name)
    }
    table = class_table(arch, _entries_from_toml(doc, observed.name))
    return LatencyTable(arch, table.entries, table.defaults, pairs)
