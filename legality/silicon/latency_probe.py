"""`reorder latency-probe`: find on silicon the stall below which a dependent result is WRONG.

For each producer -> consumer pair (legality.silicon.probe_chains builds the kernels and their
stall variants on the CPU) this loads the compiler's cubin and each variant s = 1..15 on
the GPU, runs them on several fixed-seed input sets in two launch shapes (one lone warp,
so the warp issues exactly at its stall counts; and a full grid, for input coverage),
and compares the output bytes with the original cubin's. The **floor** of a pair is the
smallest s such that every s' >= s was byte-correct on every input set and shape.
Cycles per link come from clock64 reads around the chain in the lone-warp launch.

Each row also says which variants legality.verify (with the tables in place when the
variants were built) accepts, and whether it ever accepted a variant that was WRONG on
silicon. That must never happen; such a pair is flagged `UNSAFE` in the CSV and on stdout.

Margin policy for `measured_sm_XX.toml`: the floor is written as measured, with no
margin. The verifier may use it as-is because every variant at and above the floor was
byte-correct over all input sets (a wrong stall gives a stale operand, which the chains
are built to expose). A pair is measured on one operand shape, so its floor is a lower
bound for its (producer class, consumer class, kind): the entry for a class pair is the
largest floor over the pairs measured in it, and its provenance names them. A floor below
the compiler's own stall is kept only because the pair was measured (the CSV marks it
`below-ptxas`); class pairs with no located, measured pair get no entry; no entry is ever
above 15 (a pair still wrong at 15 gets no floor and is reported, not written).
"""

from __future__ import annotations

import csv
import datetime as _dt
import io
import json
import subprocess
import sys
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from legality.silicon.probe_chains import LINKS, OUT_WORDS, PAIR_BY_NAME, WORDS, make_inputs, read_manifest
from reorder.base import provenance
from reorder.base.errors import GpuError
from reorder.base.files import write_atomic

SEEDS = (11, 22, 33, 44)
LONE = (1, 32)  # grid, block: one warp alone on an SM
FULL_BLOCKS, FULL_THREADS = 264, 128


@dataclass
class PairResult:
    """One CSV row."""

    pair: str
    status: str  # measured | not generated | no floor | error
    producer: str = ""
    consumer: str = ""
    producer_class: str = ""
    consumer_class: str = ""
    kind: str = ""
    ptxas_stall: int | None = None
    floor: int | None = None
    cycles_per_link_at_floor: float | None = None
    cycles_per_link_at_ptxas: float | None = None
    correct_stalls: list[int] = field(default_factory=list)
    wrong_stalls: list[int] = field(default_factory=list)
    error_stalls: list[int] = field(default_factory=list)
    verifier_accepted: list[int] = field(default_factory=list)
    verifier_unsafe: list[int] = field(default_factory=list)  # accepted by the verifier, WRONG on silicon
    input_sets: int = 0
    edges: int = 0
    note: str = ""

    @property
    def below_ptxas(self) -> bool:
        return self.floor is not None and self.ptxas_stall is not None and self.floor < self.ptxas_stall


# --------------------------------------------------------------------------- GPU side


def _cupy() -> Any:
    from timing.gpu import cupy_module

    return cupy_module()


def gpu_name(cp: Any) -> str:
    return provenance.gpu_name(cp)


def _launch(cp: Any, loaded: dict, path: Path, kernel: str, inputs: Any, grid: int, block: int) -> tuple[bytes, int]:
    """Run one cubin (three times, the same inputs); returns (output bytes, fewest clock cycles of thread 0).
    `loaded` keeps the modules of one pair loaded across input sets."""
    if str(path) not in loaded:
        module = cp.RawModule(path=str(path))
        loaded[str(path)] = (module, module.get_function(kernel))
    fn = loaded[str(path)][1]
    threads = grid * block
    out = cp.zeros(threads * OUT_WORDS, dtype=cp.uint32)
    clk = cp.zeros(threads, dtype=cp.int64)
    best = None
    for _ in range(3):  # the first launch pays for instruction-cache misses
        out.fill(0)
        fn((grid,), (block,), (inputs, out, clk))
        cp.cuda.get_current_stream().synchronize()
        c = int(clk[:1].get()[0])
        best = c if best is None else min(best, c)
    return out.get().tobytes(), best or 0


def probe_pair(entry: dict, folder: Path, seeds: tuple[int, ...] = SEEDS, cp: Any = None) -> PairResult:
    """Measure one pair from a built manifest entry."""
    row = PairResult(entry["pair"], "not generated", kind=entry["kind"], note=entry.get("reason", ""))
    if not entry["located"]:
        return row
    cp = cp or _cupy()
    row.producer, row.consumer = entry["producer_opcode"], entry["consumer_opcode"]
    row.producer_class, row.consumer_class = entry["producer_class"], entry["consumer_class"]
    row.edges = entry["edges"]
    row.ptxas_stall = Counter(entry["ptxas_stalls"]).most_common(1)[0][0]
    note = PAIR_BY_NAME[entry["pair"]].note if entry["pair"] in PAIR_BY_NAME else ""
    kernel = entry["kernel"]
    shapes = (LONE, (FULL_BLOCKS, FULL_THREADS))
    variants = {int(s): folder / p for s, p in entry["variants"].items()}
    status: dict[int, str] = dict.fromkeys(variants, "correct")
    cycles: dict[int, list[int]] = {s: [] for s in variants}
    reference_cycles: list[int] = []
    loaded: dict[str, Any] = {}
    for seed in seeds:
        for grid, block in shapes:
            host = make_inputs(entry["inputs"], seed, grid * block)
            assert host.shape == (grid * block, WORDS)
            dev = cp.asarray(np.ascontiguousarray(host).reshape(-1))
            try:
                ref, ref_clk = _launch(cp, loaded, folder / entry["original"], kernel, dev, grid, block)
                again, _ = _launch(cp, loaded, folder / entry["original"], kernel, dev, grid, block)
            except Exception as exc:  # noqa: BLE001 - any CUDA failure of the reference ends the pair
                row.status, row.note = "error", f"reference cubin failed: {exc}"
                return row
            if ref != again:
                row.status, row.note = "error", "the reference cubin is not deterministic"
                return row
            if (grid, block) == LONE:
                reference_cycles.append(ref_clk)
            for s, path in variants.items():
                if status[s] == "error":
                    continue
                try:
                    got, clk = _launch(cp, loaded, path, kernel, dev, grid, block)
                except Exception as exc:  # noqa: BLE001 - a variant may fail; record it and go on
                    status[s] = "error"
                    row.note = (row.note + f"; s{s}: {exc}").strip("; ")
                    continue
                if got != ref:
                    status[s] = "wrong"
                if (grid, block) == LONE:
                    cycles[s].append(clk)
    row.input_sets = len(seeds) * len(shapes)
    row.correct_stalls = sorted(s for s, v in status.items() if v == "correct")
    row.wrong_stalls = sorted(s for s, v in status.items() if v == "wrong")
    row.error_stalls = sorted(s for s, v in status.items() if v == "error")
    row.floor = floor_of(status)
    accepted = {int(s): ok for s, ok in entry["verifier_ok"].items()}
    row.verifier_accepted = sorted(s for s, ok in accepted.items() if ok)
    row.verifier_unsafe = sorted(s for s in row.verifier_accepted if status.get(s) != "correct")
    if row.floor is not None:
        row.cycles_per_link_at_floor = round(min(cycles[row.floor]) / LINKS, 2) if cycles[row.floor] else None
        row.status = "measured"
    else:
        row.status = "no floor"
    if reference_cycles:
        row.cycles_per_link_at_ptxas = round(min(reference_cycles) / LINKS, 2)
    if note:
        row.note = (note + ("; " + row.note if row.note else "")).strip()
    return row


def canary_ran(folder: Path, canary: dict | None, cp: Any = None) -> bool | None:
    """Whether the GPU ran the patched `.text` (legality.silicon.canary): the canary's output
    differs from its original's on the first input set. None when the build has no canary."""
    if canary is None:
        return None
    cp = cp or _cupy()
    entry = next(e for e in read_manifest(folder)["pairs"] if e["pair"] == canary["pair"])
    host = make_inputs(entry["inputs"], SEEDS[0], LONE[0] * LONE[1])
    dev = cp.asarray(np.ascontiguousarray(host).reshape(-1))
    loaded: dict[str, Any] = {}
    ref, _ = _launch(cp, loaded, folder / canary["original"], canary["kernel"], dev, *LONE)
    got, _ = _launch(cp, loaded, folder / canary["cubin"], canary["kernel"], dev, *LONE)
    return got != ref


NOT_RUN = (
    "the GPU ran the compiler's code, not the patched .text: the canary (its first global store "
    "silenced) gave the original's output, so every stall would read as correct; no table written "
    "(a driver that finalizes sm_100+ kernels from their Capsule Mercury sections does this)"
)


def floor_of(status: dict[int, str]) -> int | None:
    """Smallest s such that every s' >= s is correct (None if the largest stall is not)."""
    floor = None
    for s in sorted(status, reverse=True):
        if status[s] != "correct":
            break
        floor = s
    return floor


def run_pairs(
    folder: str | Path,
    names: list[str] | None = None,
    isolate: bool = True,
    seeds: tuple[int, ...] = SEEDS,
    timeout: float = 120.0,
) -> list[PairResult]:
    """Probe the pairs of a built folder; with `isolate`, each pair in its own child process."""
    folder = Path(folder)
    doc = read_manifest(folder)
    entries = [e for e in doc["pairs"] if names is None or e["pair"] in names]
    if not isolate:
        cp = _cupy() if any(e["located"] for e in entries) else None
        return [probe_pair(e, folder, seeds, cp) for e in entries]
    _cupy()  # fail early, with one line, when there is no GPU
    rows = []
    for e in entries:
        if not e["located"]:
            rows.append(probe_pair(e, folder, seeds))
            continue
        cmd = [
            sys.executable,
            "-m",
            "legality.silicon.latency_probe",
            "--child",
            str(folder.resolve()),
            e["pair"],
            ",".join(map(str, seeds)),
        ]
        try:
            done = subprocess.run(
                cmd, capture_output=True, timeout=timeout, check=False, cwd=Path(__file__).resolve().parents[2]
            )
            if done.returncode != 0:
                raise RuntimeError((done.stderr.decode(errors="replace").strip().splitlines() or ["?"])[-1])
            rows.append(PairResult(**json.loads(done.stdout.decode())))
        except (subprocess.TimeoutExpired, RuntimeError, ValueError, TypeError) as exc:
            rows.append(PairResult(e["pair"], "error", kind=e["kind"], note=f"child process failed: {exc}"))
    return rows


# --------------------------------------------------------------------------- outputs

CSV_FIELDS = (
    "pair",
    "status",
    "producer",
    "consumer",
    "producer_class",
    "consumer_class",
    "kind",
    "ptxas_stall",
    "floor",
    "below_ptxas",
    "cycles_per_link_at_floor",
    "cycles_per_link_at_ptxas",
    "verifier_min_stall",
    "verifier_accepted",
    "verifier_unsafe",
    "correct_stalls",
    "wrong_stalls",
    "error_stalls",
    "input_sets",
    "edges",
    "note",
)


STAMP_FIELDS = ("gpu", "date", "commit")


def to_csv(rows: list[PairResult], stamp: dict[str, str] | None = None) -> str:
    """One row per pair; `stamp` (gpu, date, commit) leads every row when given."""
    stamp = stamp or {}
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=[*(k for k in STAMP_FIELDS if k in stamp), *CSV_FIELDS], lineterminator="\n")
    w.writeheader()
    for r in rows:
        d = asdict(r)
        d["below_ptxas"] = r.below_ptxas
        d["verifier_min_stall"] = min(r.verifier_accepted) if r.verifier_accepted else ""
        for k in ("verifier_accepted", "verifier_unsafe", "correct_stalls", "wrong_stalls", "error_stalls"):
            d[k] = " ".join(map(str, d[k]))
        w.writerow({**stamp, **{k: ("" if d[k] is None else d[k]) for k in CSV_FIELDS}})
    return buf.getvalue()


def git_commit() -> str:
    """The commit measured (see reorder.base.provenance)."""
    return provenance.commit(12)


def to_toml(rows: list[PairResult], arch: int, gpu: str, date: str | None = None, commit: str | None = None) -> str:
    """measured_sm_XX.toml: one entry per measured (producer class, consumer class, kind)."""
    date = date or _dt.date.today().isoformat()
    commit = commit or git_commit()
    groups: dict[tuple[str, str, str], list[PairResult]] = {}
    for r in rows:
        if r.status == "measured" and r.floor is not None and 1 <= r.floor <= 15:
            groups.setdefault((r.producer_class, r.consumer_class, r.kind), []).append(r)
    lines = [
        f"# Silicon-measured fixed latencies for sm_{arch} (generated by reorder latency-probe; do not edit).",
        "# cycles = the largest floor over the pairs measured in that class pair: the smallest stall at and",
        "# above which every variant was byte-correct on every input set (see legality/silicon/latency_probe.py).",
    ]
    for (p, c, kind), members in sorted(groups.items()):
        cycles = max(m.floor for m in members if m.floor is not None)  # every member has one (above)
        sets = min(m.input_sets for m in members)
        detail = ", ".join(
            f"{m.pair} {m.producer}->{m.consumer} floor {m.floor} (ptxas {m.ptxas_stall})" for m in members
        )
        prov = (
            f"measured on {gpu}, {date}, reorder latency-probe, commit {commit}, floor where results go "
            f"WRONG->CORRECT over {sets} input sets; pairs: {detail}"
        )
        lines += [
            "[[entry]]",
            f'producer = "{p}"',
            f'consumer = "{c}"',
            f'kind = "{kind}"',
            f"cycles = {cycles}",
            "provenance = " + json.dumps(prov),
        ]
    return "\n".join(lines) + "\n"


def table(rows: list[PairResult]) -> str:
    head = f"{'pair':<16} {'producer->consumer':<34} {'classes':<22} {'kind':<9} ptxas floor cyc/link verifier  status"
    out = [head]
    for r in rows:
        pc = f"{r.producer}->{r.consumer}" if r.producer else "-"
        cls = f"{r.producer_class}->{r.consumer_class}" if r.producer_class else "-"
        ver = str(min(r.verifier_accepted)) if r.verifier_accepted else "-"
        flag = f"  UNSAFE: verifier accepted WRONG stalls {r.verifier_unsafe}" if r.verifier_unsafe else ""
        below = " below-ptxas" if r.below_ptxas else ""
        out.append(
            f"{r.pair:<16} {pc:<34} {cls:<22} {r.kind:<9} {_s(r.ptxas_stall):>5} {_s(r.floor):>5} "
            f"{_s(r.cycles_per_link_at_floor):>8} {ver:>8}  {r.status}{below}{flag}"
            + (f"  ({r.note[:90]})" if r.status != "measured" else "")
        )
    return "\n".join(out)


def _s(v: object) -> str:
    return "-" if v is None else str(v)


def write_outputs(rows: list[PairResult], arch: int, gpu: str, csv_path: Path, toml_path: Path) -> None:
    """The CSV (every row stamped with GPU, date and commit) and the measured table."""
    stamp = {"gpu": gpu, "date": _dt.date.today().isoformat(), "commit": git_commit()}
    write_atomic(csv_path, to_csv(rows, stamp).encode())
    write_atomic(toml_path, to_toml(rows, arch, gpu).encode())


def unsafe_rows(rows: list[PairResult]) -> list[PairResult]:
    return [r for r in rows if r.verifier_unsafe]


def _child(argv: list[str]) -> int:
    folder, name = Path(argv[0]), argv[1]
    seeds = tuple(int(s) for s in argv[2].split(",")) if len(argv) > 2 else SEEDS
    entry = next(e for e in read_manifest(folder)["pairs"] if e["pair"] == name)
    try:
        row = probe_pair(entry, folder, seeds)
    except GpuError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    print(json.dumps(asdict(row)))
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        sys.exit(_child(sys.argv[2:]))
    print(
        "usage: python -m legality.silicon.latency_probe --child DIR PAIR [SEEDS]  (use `reorder latency-probe`)",
        file=sys.stderr,
    )
    sys.exit(2)
