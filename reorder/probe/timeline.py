"""From probe records to a timeline: issue cycle per instruction, and the jumps that explain it.

Pure analysis, testable without a GPU. A sliding-probe variant for position k returns,
per warp and launch, [clock at entry, clock right after k] (u32 each; a slot still all
ones was never written: that warp did not reach k). The issue cycle of position k is
the median over warps and launches of (clock_k - clock_entry) mod 2^32.

Between two probed positions p < k the clock advances by the stalls of instructions
p+1..k plus whatever they waited (the probe's own cost is the same in every variant and
cancels). A jump is an advance exceeding those stalls by more than a threshold; it names
the instruction that waited (the one with a wait mask in p+1..k, else k) and, for each
scoreboard it waited on, the load it waited for: among the earlier instructions that set
one of those scoreboards since it was last waited on (a compiler often gives several
loads one scoreboard, and a wait covers all of them), the nearest one whose result the
waiter reads, else the nearest one.
"""

from __future__ import annotations

import csv
import io
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from reorder.base.errors import InputError
from reorder.base.files import write_atomic
from reorder.sass.control import NO_SCOREBOARD
from reorder.sass.model import Instruction

UNWRITTEN = 0xFFFFFFFF
DEFAULT_JUMP_CYCLES = 20.0
CSV_FIELDS = (
    "index",
    "offset",
    "instruction",
    "stall",
    "wait_mask",
    "cycles",
    "p10",
    "p90",
    "samples",
    "jump_cycles",
    "waiter",
    "waited_on_offset",
    "waited_on",
)


@dataclass(frozen=True, slots=True)
class Point:
    """The measured issue cycle right after one instruction."""

    index: int
    offset: int
    text: str
    stall: int
    wait: int
    cycles: float  # median (clock_k - clock_entry); nan when no warp reached it
    p10: float
    p90: float
    samples: int


@dataclass(frozen=True, slots=True)
class Jump:
    """An advance of the issue cycle well beyond the stalls: who waited, and on what."""

    at: int  # the probed position where the jump shows
    index: int  # the instruction that waited
    offset: int
    text: str
    excess: float  # cycles beyond the stall counts
    scoreboards: tuple[int, ...]
    producer_offset: int | None  # nearest earlier instruction setting one of those scoreboards
    producer_text: str


def deltas(records: np.ndarray) -> np.ndarray:
    """Cycles from entry to probe for every written record; records[..., 0:2] = entry, probe."""
    r = np.asarray(records, dtype=np.uint32).reshape(-1, records.shape[-1])
    written = ~((r[:, 0] == UNWRITTEN) & (r[:, 1] == UNWRITTEN))
    return ((r[written, 1].astype(np.int64) - r[written, 0].astype(np.int64)) % (1 << 32)).astype(np.int64)


def point(ins: Instruction, index: int, records: np.ndarray) -> Point:
    d = deltas(records)
    if d.size == 0:
        nan = float("nan")
        return Point(index, ins.offset, ins.text, ins.ctrl.stall, ins.ctrl.wait, nan, nan, nan, 0)
    p10, med, p90 = np.percentile(d, [10, 50, 90])
    return Point(
        index, ins.offset, ins.text, ins.ctrl.stall, ins.ctrl.wait, float(med), float(p10), float(p90), int(d.size)
    )


def jumps(
    instructions: Sequence[Instruction], points: Sequence[Point], threshold: float = DEFAULT_JUMP_CYCLES
) -> tuple[Jump, ...]:
    """Jumps between consecutive measured points (see the module docstring)."""
    measured = sorted((p for p in points if p.samples), key=lambda p: p.index)
    out = []
    for prev, cur in itertools.pairwise(measured):
        span = instructions[prev.index + 1 : cur.index + 1]
        excess = cur.cycles - prev.cycles - sum(i.ctrl.stall for i in span)
        if excess < threshold:
            continue
        waiter = next((i for i in span if i.ctrl.wait), span[-1])
        out.append(_jump(instructions, cur.index, waiter, excess))
    return tuple(out)


def _jump(instructions: Sequence[Instruction], at: int, waiter: Instruction, excess: float) -> Jump:
    sbs = tuple(sb for sb in range(6) if waiter.ctrl.wait >> sb & 1)
    index = waiter.offset // 16
    producer = waited_producer(instructions[:index], waiter, sbs)
    return Jump(
        at,
        index,
        waiter.offset,
        waiter.text,
        excess,
        sbs,
        producer.offset if producer else None,
        producer.text if producer else "",
    )


def waited_producer(before: Sequence[Instruction], waiter: Instruction, sbs: tuple[int, ...]) -> Instruction | None:
    """The instruction `waiter` waited for on scoreboards `sbs` (see the module docstring)."""
    in_flight = []
    for ins in reversed(before):
        if any(ins.ctrl.wait >> sb & 1 for sb in sbs):
            break  # that scoreboard was drained here: nothing older is still in flight on it
        if any(sb in (ins.ctrl.wbar, ins.ctrl.rbar) for sb in sbs if sb != NO_SCOREBOARD):
            in_flight.append(ins)
    reads = set(waiter.access.reads)
    feeding = [i for i in in_flight if reads & set(i.access.writes)]
    found = feeding or in_flight
    return found[0] if found else None


# ---------------------------------------------------------------- files


def write_csv(path: str | Path, points: Sequence[Point], found: Sequence[Jump]) -> Path:
    """The timeline as CSV, written whole or not at all (a full disk leaves none of it)."""
    by_index = {j.at: j for j in found}
    handle = io.StringIO(newline="")
    writer = csv.writer(handle)
    writer.writerow(CSV_FIELDS)
    for p in points:
        j = by_index.get(p.index)
        writer.writerow(
            [
                p.index,
                f"{p.offset:#06x}",
                p.text,
                p.stall,
                p.wait,
                _num(p.cycles),
                _num(p.p10),
                _num(p.p90),
                p.samples,
                _num(j.excess) if j else "",
                f"{j.offset:#06x} {j.text}" if j else "",
                f"{j.producer_offset:#06x}" if j and j.producer_offset is not None else "",
                j.producer_text if j else "",
            ]
        )
    return write_atomic(path, handle.getvalue().encode())


def _num(value: float) -> str:
    return "" if math.isnan(value) else f"{value:.1f}"


def read_csv(path: str | Path) -> list[dict[str, str]]:
    """Rows of a timeline CSV, refused with one line when it is not one."""
    from reorder.base.files import read_input

    p = Path(path)
    try:
        rows = list(csv.DictReader(io.StringIO(read_input(p).decode("utf-8"), newline="")))
    except (UnicodeDecodeError, csv.Error):
        rows = []
    if not rows or not set(CSV_FIELDS) <= set(rows[0]):
        raise InputError(f"{p}: not a timeline CSV (expected columns {', '.join(CSV_FIELDS)})")
    try:
        points_of(rows)  # every row must parse before anything is drawn
        for r in rows:
            float(r["jump_cycles"] or 0)
    except (ValueError, TypeError) as exc:
        raise InputError(f"{p}: not a timeline CSV (a row does not parse: {exc})") from None
    return rows


def points_of(rows: list[dict[str, str]]) -> list[Point]:
    """The measured points of a timeline CSV (to analyse a run again without the GPU)."""

    def num(text: str) -> float:
        return float(text) if text else math.nan

    return [
        Point(
            int(r["index"]),
            int(r["offset"], 16),
            r["instruction"],
            int(r["stall"]),
            int(r["wait_mask"]),
            num(r["cycles"]),
            num(r["p10"]),
            num(r["p90"]),
            int(r["samples"]),
        )
        for r in rows
    ]


def plot(
    tables: Sequence[tuple[str, list[dict[str, str]]]], path: str | Path, protect: Sequence[str | Path] = ()
) -> Path:
    """Issue cycle vs instruction index, one line per timeline, jumps annotated; written
    atomically, never over a file in `protect` (the input CSVs)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(11, 5))
    for label, rows in tables:
        xs = [int(r["index"]) for r in rows if r["cycles"]]
        ys = [float(r["cycles"]) for r in rows if r["cycles"]]
        ax.plot(xs, ys, marker=".", linewidth=1, label=label)
        for r in rows:
            if r["jump_cycles"] and r["cycles"]:
                opcode = next(t for t in r["instruction"].split(" ") if not t.startswith("@"))
                note = opcode + (f" <- {r['waited_on_offset']}" if r["waited_on_offset"] else "")
                ax.annotate(
                    f"+{float(r['jump_cycles']):.0f} {note}",
                    (int(r["index"]), float(r["cycles"])),
                    fontsize=7,
                    rotation=30,
                    xytext=(4, 4),
                    textcoords="offset points",
                )
    ax.set_xlabel("instruction index (probe after it)")
    ax.set_ylabel("cycles since kernel entry (median over warps, launches)")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=120)
    plt.close(fig)
    return write_atomic(path, png.getvalue(), protect=protect)
