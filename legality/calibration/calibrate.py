"""Calibrate the latency table against what ptxas itself emits.

NVIDIA's scheduling tables are upper bounds; ptxas schedules below them where the
hardware forwards results early (integer pipes, uniform loads, MIO operand reads). For
each dependency this finds the smallest producer-to-consumer distance ptxas leaves
anywhere in a set of cubins: the compiler's own choice, which the tool may rely on
("never below the compiler's choice without a silicon measurement"). Pairs under
complementary guards (@P0 / @!P0) are not dependencies and are skipped.

Two kinds of evidence, two sets of cubins:
- `[[pair]]`: keyed by the exact producer opcode, consumer opcode and (for reads) the
  consumer's operand slot; an unwaited write-after-read of a variable-latency reader is a
  `war_sb` pair. Learned from every cubin given, the generated calibration kernels
  (`legality.calibration`) included: an exact key cannot lend one operand's distance to
  another.
- `[[entry]]`: class-wide minima of write-after-write (and write-after-read, written for
  the record only). A class-wide minimum mixes opcodes and operands, and one was wrong on
  silicon, so `legality.latency.class_table` never lowers a requirement with one: it only
  fills a class pair the reference lacks. They come from the project's corpora (`--corpus`).

Not learned: a read of a variable-latency result issued with no scoreboard (`untracked`).
ptxas issues MUFU.RCP or FCHK without one where a later op's scoreboard covers it (MUFU.RCP,
then BREV on SB2, then a wait on SB2 before the read: in-order completion), so the distance
seen says nothing about when the result is ready; such code is legal as compiled only by
the cubin's own evidence (`legality.evidence`).

Each table is one architecture's: only cubins of `--arch` are read (sm_90a cubins say sm_90).

Regenerate every table (~10 minutes on 2 cores; needs nvcc/ptxas, writes the tables with
their provenance: counts, ptxas version, date):
    python -m legality.calibration [--work DIR] [--jobs 2]
One table by hand, from cubins already built (`legality.calibration.build` layout):
    python -m legality.calibration.calibrate --arch sm_90 --corpus tests/corpus/cubin/sm_90 benchmarks/kernels/cubin
        tests/corpus/triton/sm_90 --extra WORK/cubin > legality/tables/ptxas_sm_90.toml
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from legality.latency import Entry, class_table, latency_class, opcode_class, read_slot
from legality.verify import Violation, verify_instructions
from reorder.binary.cubin import read_cubin
from reorder.sass.model import decode_kernel

FIXED_KINDS = ("raw", "raw_pred", "raw_guard", "raw_u", "waw", "war")
PATTERN_KINDS = ("war_sb",)

Key = tuple[str, str, str]
Found = dict[Key, tuple[int, int, str]]  # key -> (min distance, pairs seen, an example)


@dataclass(frozen=True)
class _Probe:
    """A table that demands more than any schedule provides, so every pair is reported."""

    arch: int

    def lookup(self, producer: str, consumer: str, kind: str) -> Entry:
        return Entry(producer, consumer, kind, 99, "probe")

    def lookup_pair(
        self,
        producer_opcode: str,
        consumer_opcode: str,
        producer: str,
        consumer: str,
        kind: str,
        slot: str | None = None,
    ) -> Entry:
        return self.lookup(producer, consumer, kind)

    def max_cycles(self) -> int:
        return 32

    def unwaited_war_ok(self, reader_opcode: str, writer_opcode: str, elapsed: int) -> bool:
        return False


def _exact_key(v: Violation, p, c) -> tuple[Key, int] | None:
    """The exact-pair key and distance of one reported dependency (None: not a fixed one)."""
    if v.kind == "scoreboard" and v.detail.startswith("WAR") and v.elapsed is not None:
        return (p.opcode, c.opcode, "war_sb"), v.elapsed
    if v.kind not in FIXED_KINDS:
        return None
    kind = f"{v.kind}#{read_slot(v.resource, c)}" if v.kind.startswith("raw") else v.kind
    return (p.opcode, c.opcode, kind), int(v.provided)


def _class_key(v: Violation, p, c) -> tuple[Key, int] | None:
    """The class-wide key of one dependency; reads are taken per exact pair and slot only."""
    if v.kind not in FIXED_KINDS or v.kind.startswith("raw"):
        return None
    return (latency_class(p), latency_class(c), v.kind), int(v.provided)


def observe_cubin(
    path: Path, where: str | None = None, kernels: tuple[str, ...] | None = None
) -> dict[str, tuple[Found, Found]]:
    """kernel name -> (class-wide, exact-pair) minimums, for `kernels` of one cubin (all by default)."""
    out: dict[str, tuple[Found, Found]] = {}
    cubin = read_cubin(path)
    probe = _Probe(cubin.arch)
    for kernel in cubin.kernels:
        if kernels is not None and kernel.name not in kernels:
            continue
        classes: Found = {}
        pairs: Found = {}
        code = decode_kernel(cubin, kernel.name)
        by_offset = {i.offset: i for i in code.instructions}
        label = f"{where or path.name}:{kernel.name}"
        for v in verify_instructions(code.instructions, cubin.arch, table=probe):
            p, c = by_offset[v.producer_offset], by_offset[v.consumer_offset]
            for found, keyed in ((classes, _class_key(v, p, c)), (pairs, _exact_key(v, p, c))):
                if keyed is not None:
                    _keep_min(found, keyed[0], keyed[1], f"{label} {v.producer_offset:#x}->{v.consumer_offset:#x}")
        out[kernel.name] = (classes, pairs)
    return out


def observed_minimums(paths: list[Path], exact: bool = False) -> Found:
    """(producer class, consumer class, kind) -> (min distance, pairs seen, an example);
    with `exact`, keyed by the full producer and consumer opcodes (and read slot) instead."""
    out: Found = {}
    for path in paths:
        for found in observe_cubin(path).values():
            merge(out, found[1 if exact else 0])
    return out


def _keep_min(out: Found, key: Key, cycles: int, example: str, count: int = 1) -> None:
    best, seen, first = out.get(key, (99, 0, ""))
    if cycles < best:
        best, first = cycles, example
    out[key] = (best, seen + count, first)


def merge(out: Found, found: Found) -> Found:
    """Fold one set of minimums into another (the smaller distance wins, counts add)."""
    for key, (cycles, count, example) in found.items():
        _keep_min(out, key, cycles, example, count)
    return out


@dataclass(frozen=True)
class Listed:
    """One cubin as the calibration sees it: its arch and, per kernel, what ptxas scheduled."""

    path: Path
    arch: int
    kernels: tuple[tuple[str, str], ...]  # (name, code hash)


def family(arch: int) -> int:
    """Arches that share an instruction encoding: identical code decodes and verifies alike."""
    return 90 if arch >= 90 else 80


def listed(path: Path) -> Listed:
    """A cubin's kernels by the hash of their code (control codes, relocations included):
    equal for sm_90 and sm_90a builds, for -O2 and -O3 mostly, and for most sm_86 and sm_89
    kernels, which need not be verified twice."""
    cubin = read_cubin(path)
    hashes = tuple(
        (
            k.name,
            hashlib.sha1(
                b"%d:" % family(cubin.arch) + k.text + repr(sorted(r.offset for r in k.relocations)).encode()
            ).hexdigest(),
        )
        for k in cubin.kernels
    )
    return Listed(path, cubin.arch, hashes)


def _observe_job(job: tuple[Path, str, tuple[str, ...]]) -> dict[str, tuple[Found, Found]]:
    return observe_cubin(*job)


def observe_distinct(cubins: list[Listed], jobs: int = 2, root: Path | None = None) -> dict[str, tuple[Found, Found]]:
    """code hash -> (class-wide, exact-pair) minimums, each distinct kernel verified once,
    in `jobs` processes; examples are named by their path under `root` (so a table says
    which build, arch and -O level showed it)."""
    first: dict[str, tuple[Path, str]] = {}
    for c in cubins:
        for name, h in c.kernels:
            first.setdefault(h, (c.path, name))
    by_path: dict[Path, list[str]] = {}
    for path, name in first.values():
        by_path.setdefault(path, []).append(name)
    work = [(p, _where(p, root), tuple(names)) for p, names in by_path.items()]
    hash_of = {(c.path, name): h for c in cubins for name, h in c.kernels}
    out: dict[str, tuple[Found, Found]] = {}
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for (path, _, _), found in zip(work, pool.map(_observe_job, work, chunksize=2)):
            out |= {hash_of[(path, name)]: f for name, f in found.items()}
    return out


def _where(path: Path, root: Path | None) -> str:
    return path.relative_to(root).as_posix() if root is not None and path.is_relative_to(root) else path.name


def to_toml(found: Found, label: str, table: str = "entry") -> str:
    """One `[[table]]` per key, each with its provenance (count and an example)."""
    lines = []
    for (p, c, kind), (cycles, count, example) in sorted(found.items()):
        lines += [
            f"[[{table}]]",
            f'producer = "{p}"',
            f'consumer = "{c}"',
            f'kind = "{kind}"',
            f"cycles = {cycles}",
            f'provenance = "ptxas-observed: smallest of {count} dependent pairs in {label}, e.g. {example}"',
        ]
    return "\n".join(lines) + "\n"


def cubins_in(folders: list[str]) -> list[Path]:
    """Every cubin under the folders, recursively, in a stable order."""
    return sorted(p for folder in folders for p in Path(folder).rglob("*.cubin"))


@dataclass(frozen=True)
class Evidence:
    """Every cubin read, and what each distinct kernel showed."""

    corpus: tuple[Listed, ...]
    extra: tuple[Listed, ...]
    found: dict[str, tuple[Found, Found]]


def gather(corpus: list[str], extra: list[str], jobs: int = 2, archs: set[int] | None = None) -> Evidence:
    """Read and verify (against the probe table) every cubin under the folders, once; only
    cubins of `archs` where given."""
    corpus_paths = set(cubins_in(corpus))
    wanted = [listed(p) for p in sorted(corpus_paths) + [p for p in cubins_in(extra) if p not in corpus_paths]]
    wanted = [c for c in wanted if archs is None or c.arch in archs]
    listed_corpus = [c for c in wanted if c.path in corpus_paths]
    listed_extra = [c for c in wanted if c.path not in corpus_paths]
    root = Path(extra[0]) if len(extra) == 1 else None
    found = observe_distinct(listed_corpus, jobs)
    rest = [c for c in listed_extra if any(h not in found for _, h in c.kernels)]
    found |= observe_distinct(rest, jobs, root)
    return Evidence(tuple(listed_corpus), tuple(listed_extra), found)


def _minimums(cubins: list[Listed], found: dict[str, tuple[Found, Found]], which: int) -> Found:
    out: Found = {}
    for h in dict.fromkeys(h for c in cubins for _, h in c.kernels):
        merge(out, found[h][which])
    return out


def below_classes(arch: int, classes: Found, pairs: Found) -> Found:
    """The pairs that lower a requirement: one at or above what the verifier requires of
    its classes anyway (the reference table with these class-wide entries and silicon
    measurements) changes no verdict, and a table of every pair seen is ten times larger.
    The unwaited write-after-read pattern (`war_sb`: LatencyTable.unwaited_war_ok) is no
    class distance and is always kept."""
    table = class_table(
        arch, [Entry(p, c, kind, cycles, "calibration") for (p, c, kind), (cycles, _, _) in classes.items()]
    )

    def lowers(key: Key, cycles: int) -> bool:
        kind = key[2].split("#")[0]
        if kind in PATTERN_KINDS:
            return True
        return cycles < table.lookup(opcode_class(key[0], arch), opcode_class(key[1], arch), kind).cycles

    return {key: value for key, value in pairs.items() if lowers(key, value[0])}


def table_text(arch: int, evidence: Evidence, corpus: list[str], extra: list[str], header: list[str]) -> str:
    """A whole ptxas-observed table for one arch: class-wide entries from the corpus cubins,
    exact pairs from all, with a provenance header saying what was read."""
    mine = [c for c in evidence.corpus if c.arch == arch]
    more = [c for c in evidence.extra if c.arch == arch]
    distinct = {h for c in mine + more for _, h in c.kernels}
    head = [
        f"# ptxas-observed minimum distances for sm_{arch} (generated by legality.calibration.calibrate)",
        *(f"# {line}" for line in header),
        f"# class-wide [[entry]]: {len(mine)} cubins of the project's corpora ({', '.join(map(_shown, corpus))})",
        (
            f"# exact [[pair]]: those and {len(more)} more cubins ({', '.join(map(_shown, extra)) or 'none'}); "
            f"{len(distinct)} distinct kernels (each counted once); only pairs below the class-level table kept"
        ),
        (
            "# a kernel whose code is identical on two arches (most sm_86 and sm_89 kernels, sm_90a and sm_90) is "
            "verified once: its example may name the other arch's build"
        ),
    ]
    classes = _minimums(mine, evidence.found, 0)
    pairs = below_classes(arch, classes, _minimums(mine + more, evidence.found, 1))
    body = to_toml(classes, "the project's corpora") + to_toml(pairs, "the calibration set", "pair")
    return "\n".join(head) + "\n" + body


def _shown(folder: str) -> str:
    """A folder as a table names it: relative to the repository, else the build's own layout."""
    path = Path(folder).resolve()
    repo = Path(__file__).resolve().parents[2]
    if path.is_relative_to(repo):
        return path.relative_to(repo).as_posix()
    parts = path.parts
    return "WORK/" + "/".join(parts[parts.index("cubin") :]) if "cubin" in parts else str(path)


def main(argv: list[str]) -> int:
    """Print one arch's table (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m legality.calibration.calibrate")
    parser.add_argument("--arch", required=True, help="sm_80, sm_86, sm_89 or sm_90")
    parser.add_argument("--corpus", nargs="+", required=True, help="folders of the project's own cubins")
    parser.add_argument("--extra", nargs="*", default=[], help="folders of further cubins (exact pairs only)")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    arch = int(args.arch.removeprefix("sm_").rstrip("a"))
    evidence = gather(args.corpus, args.extra, args.jobs, {arch})
    print(table_text(arch, evidence, args.corpus, args.extra, []), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
