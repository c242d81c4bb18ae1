"""A reference latency table for an arch none of whose facts was measured on its own silicon.

Hopper's class-level table (`tables/sm_90.toml` overlaid with the H200 floors of
`measured_sm_90.toml`) is the nearest table measured on silicon. For Blackwell (sm_100, sm_103,
sm_120) it is carried over entry by entry, and each entry is checked against the compiler of the
arch itself: over every dependent pair ptxas scheduled in the calibration set for that arch
(`legality.calibration`), the smallest distance it left between ops of the entry's producer and
consumer classes for that dependency kind. Where ptxas never goes as low as Hopper's value, the
entry is raised to ptxas' floor: that arch's compiler evidently needs more. Where it goes lower,
the entry stays at Hopper's value (a class-wide minimum mixes opcodes and operand slots, which
once let a load's address be read a cycle early on silicon); only the exact pairs ptxas used go
below it (`[[pair]]` of `ptxas_sm_XX.toml`), as on every arch.

Every entry written says `unmeasured on sm_XX silicon` first, then Hopper's value with its own
provenance and ptxas' floor on the arch, so `legality.evidence.source_of` files it as
`unmeasured` and `reorder optimize` lists it among the facts a result rests on that were never
measured (docs/blackwell.md). A floor measured by `reorder latency-probe` on the arch's GPU
(`measured_sm_XX.toml`) replaces the entry, as everywhere.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from legality.latency import TABLE_DIR, Entry, _entries_from_toml, _measured, opcode_class

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SOURCE_FAMILY = 90  # the nearest family measured on silicon (NVIDIA H200)
Floor = tuple[int, int, str]  # fewest cycles, pairs seen, an example


def class_floors(arch: int, evidence) -> dict[tuple[str, str, str], Floor]:
    """(producer class, consumer class, kind) -> ptxas' fewest cycles over every exact pair seen in
    this arch's cubins of the calibration set (`calibrate.Evidence`), read slots folded together."""
    hashes = dict.fromkeys(h for c in (*evidence.corpus, *evidence.extra) if c.arch == arch for _, h in c.kernels)
    out: dict[tuple[str, str, str], Floor] = {}
    for h in hashes:
        for (p, c, kind), (cycles, count, example) in evidence.found[h][1].items():
            key = (opcode_class(p, arch), opcode_class(c, arch), kind.split("#")[0])
            best, seen, first = out.get(key, (99, 0, ""))
            out[key] = (cycles, seen + count, example) if cycles < best else (best, seen + count, first)
    return out


def hopper_table() -> tuple[list[Entry], list[Entry]]:
    """Hopper's class entries (reference with the H200 floors in place) and row defaults."""
    path = TABLE_DIR / f"sm_{SOURCE_FAMILY}.toml"
    doc = tomllib.loads(path.read_text())
    entries = {(e.producer, e.consumer, e.kind): e for e in _entries_from_toml(doc, path.name)}
    entries |= _measured(SOURCE_FAMILY)
    defaults = [Entry(d["producer"], "*", d["kind"], int(d["cycles"]), d["provenance"]) for d in doc.get("default", [])]
    return list(entries.values()), defaults


def _covered(entry: Entry, entries: list[Entry], floors: dict, default: bool) -> Floor | None:
    """ptxas' floor over the class pairs this entry decides: its own pair; for a `*` consumer every
    consumer without an entry of its own; for a row default every consumer without either."""
    own = {e.consumer for e in entries if e.producer == entry.producer and e.kind == entry.kind}
    if not default and entry.consumer != "*":
        return floors.get((entry.producer, entry.consumer, entry.kind))
    taken = own if default else own - {"*"}
    if default and "*" in own:
        return None  # a `*` entry decides every consumer this default would
    found = [
        f for (p, c, k), f in floors.items() if p == entry.producer and k == entry.kind and c not in taken and c != "*"
    ]
    if not found:
        return None
    low = min(f[0] for f in found)
    return low, sum(f[1] for f in found), next(f[2] for f in found if f[0] == low)


def carried(arch: int, entry: Entry, floor: Floor | None) -> Entry:
    """`entry` of Hopper's table as the arch's: raised to ptxas' floor there where that is higher,
    labelled unmeasured."""
    source = f"sm_{SOURCE_FAMILY}'s {entry.cycles} ({entry.provenance})"
    if floor is None:
        return Entry(
            entry.producer,
            entry.consumer,
            entry.kind,
            entry.cycles,
            f"unmeasured on sm_{arch} silicon: {source}; no pair it decides in sm_{arch}'s calibration set",
        )
    cycles, count, example = floor
    raised = cycles > entry.cycles
    verdict = f"raised to ptxas' floor {cycles}" if raised else f"ptxas on sm_{arch} goes down to {cycles}"
    return Entry(
        entry.producer,
        entry.consumer,
        entry.kind,
        max(cycles, entry.cycles),
        f"unmeasured on sm_{arch} silicon: {source}; {verdict} over {count} pairs of sm_{arch}'s calibration set "
        f"(e.g. {example})",
    )


def reference_text(arch: int, evidence, header: list[str]) -> str:
    """The whole `sm_XX.toml` of an arch: every Hopper entry and default, carried."""
    floors = class_floors(arch, evidence)
    entries, defaults = hopper_table()
    lines = [
        f"# Reference latencies for sm_{arch}, carried from sm_{SOURCE_FAMILY} (legality.calibration.carry).",
        f"# No entry was measured on sm_{arch} silicon: each is Hopper's value (its own source quoted), raised to",
        f"# the fewest cycles ptxas 13 leaves for that class pair on sm_{arch} where that is higher.",
        "# `reorder latency-probe` on the GPU writes measured_sm_XX.toml, whose floors replace these.",
        *(f"# {line}" for line in header),
    ]
    for table, rows in (("entry", entries), ("default", defaults)):
        for e in rows:
            c = carried(arch, e, _covered(e, entries, floors, table == "default"))
            lines += [f"[[{table}]]", f'producer = "{c.producer}"']
            lines += [f'consumer = "{c.consumer}"'] if table == "entry" else []
            lines += [f'kind = "{c.kind}"', f"cycles = {c.cycles}", f"provenance = {_quoted(c.provenance)}"]
    return "\n".join(lines) + "\n"


def _quoted(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(text)


def write_reference(arch: int, evidence, header: list[str]) -> Path:
    """Write legality/tables/sm_XX.toml for `arch` (see the module docstring)."""
    path = TABLE_DIR / f"sm_{arch}.toml"
    path.write_text(reference_text(arch, evidence, header))
    return path
