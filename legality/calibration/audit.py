"""Audit the latency tables against the compiler: where does the verifier allow less than ptxas ever leaves?

A fixed-latency opcode put in a latency class whose floor is below what that opcode needs is a
silent wrong answer on silicon: the verifier accepts a stall cut the hardware does not honour.
CS2R was such an opcode (in the integer-ALU class, FXU -> IMAD 5; on an H200 a VIADD read
`CS2R R14, SRZ` 5 cycles on, saw a stale base and the next load faulted; ptxas left 8, and
never reads a CS2R sooner than 7 by the ALU or 8 by IMAD). Over-stalling is only slow, so the
audit looks one way only.

For every compiler-made cubin of one arch (the calibration's walker, `calibrate.observe_distinct`,
each distinct kernel once) it takes every dependency of a fixed-latency producer (not MIO, not
BRU) of the kinds the verifier checks: reads by kind and consumer operand slot (`raw#1`,
`raw_pred#2`, `raw_guard#g`, `raw_u#0`) and write-after-write. Grouped by producer opcode base,
kind and consumer class, each row holds how often ptxas scheduled such a pair, the fewest cycles
it ever left, and what the verifier requires of a pair of those classes it has no exact pair
for (`LatencyTable.lookup`, the class entry or its row default), with the fewest it requires of
any pair seen (`lookup_pair`, the ptxas-observed exact pairs included). A row is a suspect where
the class requirement is below ptxas' minimum by `GAP` cycles or more over `SAMPLES` pairs or
more (`Row.suspect` says why those numbers).

    python -m legality.calibration.audit --arch sm_90 [--extra DIR ...] [--csv OUT] [--jobs 2]

`--folders` replaces the repository's folders read (CORPUS); `--extra` adds folders of cubins built
elsewhere (the calibration's kernels: `legality.calibration.build`).
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
from dataclasses import dataclass
from pathlib import Path

from legality.calibration.calibrate import Found, listed, merge, observe_distinct
from legality.latency import BRU, MIO, LatencyTable, load_table, opcode_class, unknown_pair

ROOT = Path(__file__).resolve().parents[2]
# The compiler-made cubins the repository holds (nvcc/ptxas and Triton output, kept as built);
# a `*.candidate.cubin` is reorder's output, not the compiler's, and is left out.
CORPUS = ("tests/corpus", "tests/data", "reorder/suite", "benchmarks/kernels")
AUDITED_KINDS = ("raw", "raw_pred", "raw_guard", "raw_u", "waw")
# A suspect is a gap of 2 cycles or more over 20 pairs or more: with fewer pairs ptxas may just
# never have had a reason to schedule closer; a 1-cycle gap is the integer datapath's forwarding
# overlap (sass_hopper_facts §3.1: ptxas leaves 4 where the table says 6 and IMAD -> IADD3 3),
# which varies by operand and is inside the measured floors' own spread. CS2R's gap was 3 to 8
# over hundreds of pairs. A read already at an unknown pair's worst case is never a suspect.
SAMPLES = 20
GAP = 2
READ_CEILING = unknown_pair("", "", "raw").cycles


@dataclass(frozen=True)
class Row:
    """One (producer opcode base, kind, consumer class) of one arch: ptxas' floor against the verifier's."""

    arch: int
    producer: str  # opcode base; HFMA2.MMA kept apart from HFMA2 (another pipe)
    producer_class: str
    kind: str  # raw kinds with the consumer's operand slot (`raw#1`), or waw
    consumer_class: str
    samples: int
    ptxas_min: int
    required: int  # of a pair of these classes without an exact ptxas-observed pair
    required_seen: int  # the fewest required of any pair seen (exact pairs included)
    source: str  # the class requirement's provenance, first words
    example: str  # where ptxas left its minimum

    @property
    def gap(self) -> int:
        return self.ptxas_min - self.required

    def suspect(self, samples: int = SAMPLES, gap: int = GAP) -> bool:
        """The verifier lets an unseen pair of this row closer than ptxas ever went, by `gap`
        cycles over `samples` pairs (see SAMPLES). A read already at an unknown pair's worst
        case (the largest single stall) is not: no table asks more of a read it knows nothing of."""
        ceiling = self.kind.startswith("raw") and self.required >= READ_CEILING
        return self.samples >= samples and self.gap >= gap and not ceiling


def compiler_cubins(root: Path = ROOT, folders: tuple[str, ...] = CORPUS) -> list[Path]:
    """Every compiler-made cubin under the repository's folders, in a stable order."""
    found = (p for folder in folders for p in (root / folder).rglob("*.cubin"))
    return sorted(p for p in found if not p.name.endswith(".candidate.cubin"))


def producer_label(opcode: str) -> str:
    """The opcode base a row is keyed by: HFMA2.MMA runs on another pipe than HFMA2."""
    base = opcode.split(".")[0]
    return "HFMA2.MMA" if base == "HFMA2" and ".MMA" in opcode else base


def audited(key: tuple[str, str, str], arch: int) -> bool:
    """A fixed-latency producer's dependency (on `arch`) of a kind the verifier checks at a distance."""
    producer, _, kind = key
    return opcode_class(producer, arch) not in (MIO, BRU) and kind.split("#")[0] in AUDITED_KINDS


def exact_pairs(paths: list[Path], arch: int, jobs: int = 2) -> Found:
    """(producer opcode, consumer opcode, kind#slot) -> ptxas' minimum over the cubins of `arch`."""
    cubins = [c for c in map(listed, paths) if c.arch == arch]
    found = observe_distinct(cubins, jobs, ROOT)
    out: Found = {}
    for h in dict.fromkeys(h for c in cubins for _, h in c.kernels):
        merge(out, {k: v for k, v in found[h][1].items() if audited(k, arch)})
    return out


def rows(arch: int, pairs: Found, table: LatencyTable | None = None) -> list[Row]:
    """Fold exact pairs into rows and set each beside the verifier's requirement."""
    table = table or load_table(arch)
    groups: dict[tuple[str, str, str], list[tuple[tuple[str, str, str], tuple[int, int, str]]]] = {}
    for key, value in pairs.items():
        groups.setdefault((producer_label(key[0]), key[2], opcode_class(key[1], arch)), []).append((key, value))
    out = []
    for (producer, kind, consumer_cls), members in sorted(groups.items()):
        producer_cls = opcode_class(members[0][0][0], arch)
        base, _, slot = kind.partition("#")
        entry = table.lookup(producer_cls, consumer_cls, base)
        seen = min(
            table.lookup_pair(p, c, producer_cls, consumer_cls, base, slot or None).cycles for (p, c, _), _ in members
        )
        low, _, example = min((v for _, v in members), key=lambda v: v[0])
        samples = sum(v[1] for _, v in members)
        words = " ".join(entry.provenance.split()[:4])
        out.append(
            Row(arch, producer, producer_cls, kind, consumer_cls, samples, low, entry.cycles, seen, words, example)
        )
    return out


FIELDS = (
    "arch producer producer_class kind consumer_class samples ptxas_min required required_seen gap suspect source "
    "example"
).split()


def to_csv(table: list[Row]) -> str:
    """The audit table, one row per (producer, kind, consumer class)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(FIELDS)
    for r in table:
        writer.writerow(
            [r.arch, r.producer, r.producer_class, r.kind, r.consumer_class, r.samples, r.ptxas_min, r.required]
            + [r.required_seen, r.gap, int(r.suspect()), r.source, r.example]
        )
    return buffer.getvalue()


@dataclass(frozen=True)
class Opcode:
    """One producer opcode and kind family over all its consumers: CS2R's signature is an opcode
    ptxas never schedules at its class's distance for any consumer (its smallest gap >= GAP),
    where a single row's gap may only mean ptxas had no reason to schedule that pair closer."""

    arch: int
    producer: str
    family: str  # raw, raw_pred, raw_guard, raw_u or waw
    samples: int
    smallest_gap: int  # over its rows: ptxas' minimum less the class requirement
    rows: tuple[Row, ...]

    def suspect(self, samples: int = SAMPLES, gap: int = GAP) -> bool:
        return self.samples >= samples and self.smallest_gap >= gap


def by_opcode(table: list[Row]) -> list[Opcode]:
    """The rows folded per producer opcode and kind family (read slots and consumers together)."""
    groups: dict[tuple[str, str], list[Row]] = {}
    for r in table:
        groups.setdefault((r.producer, r.kind.split("#")[0]), []).append(r)
    return [
        Opcode(rs[0].arch, producer, fam, sum(r.samples for r in rs), min(r.gap for r in rs), tuple(rs))
        for (producer, fam), rs in sorted(groups.items())
    ]


def summary(table: list[Row]) -> str:
    """A line of counts and one line per suspect, for the terminal."""
    suspects = [r for r in table if r.suspect()]
    head = f"sm_{table[0].arch if table else '?'}: {len(table)} rows, {sum(r.samples for r in table)} pairs, "
    lines = [head + f"{len(suspects)} suspects (>= {SAMPLES} pairs, verifier >= {GAP} cycles below ptxas' minimum)"]
    lines += [
        f"  {r.producer} {r.kind} -> {r.consumer_class}: ptxas min {r.ptxas_min} over {r.samples}, "
        f"verifier {r.required} ({r.source}); e.g. {r.example}"
        for r in suspects
    ]
    opcodes = [o for o in by_opcode(table) if o.suspect()]
    lines.append(
        f"{len(opcodes)} opcodes never scheduled at their class's distance (>= {GAP} above it, every consumer):"
    )
    lines += [
        f"  {o.producer} {o.family}: {o.samples} pairs, ptxas >= {o.smallest_gap} above the verifier" for o in opcodes
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m legality.calibration.audit")
    parser.add_argument("--arch", default="sm_90", help="sm_80, sm_86, sm_89, sm_90, sm_100, sm_103 or sm_120")
    parser.add_argument("--folders", nargs="*", default=list(CORPUS), help="the repository's folders to read")
    parser.add_argument("--extra", nargs="*", default=[], help="folders of further compiler-made cubins")
    parser.add_argument("--csv", help="write the whole table here")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    arch = int(args.arch.removeprefix("sm_").rstrip("a"))
    paths = compiler_cubins(ROOT, tuple(args.folders)) + sorted(
        p for folder in args.extra for p in Path(folder).rglob("*.cubin")
    )
    table = rows(arch, exact_pairs(paths, arch, args.jobs))
    if args.csv:
        Path(args.csv).write_text(to_csv(table))
    print(summary(table))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
