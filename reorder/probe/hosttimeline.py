"""Region stamps on the host's clock: the events, the launches, and what the bounds prove.

Pure analysis of what `reorder.probe.hostclock.stamps_job` brings back (the stamp rows of
every warp, the sync windows, the launch calls), testable without a GPU. Per launch, every
warp's checkpoints give each SM's cycle-to-ns lines (link 1); the sync windows put the GPU
timer on the host clock (link 2). Written out: one event per block's warp 0 and stamp, one
row per launch (launch call, first warp entry, their latency, the pairs of events whose
order is proven), every sync round, and a summary whose every value says what kind it is.
"""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from reorder.base.errors import InputError
from reorder.base.files import read_input, write_atomic
from reorder.probe.hostaxis import (
    LINK1_ASSUMES,
    LINK2_ASSUMES,
    Checkpoint,
    Event,
    HostAxis,
    SyncWindow,
    cycle_lines,
    host_axis,
    needed_slack,
    proven_orders,
)

EVENT_FIELDS = (
    "gpu",
    "launch",
    "block",
    "warp",
    "sm",
    "stamp",
    "offset",
    "instruction",
    "clock",
    "globaltimer_ns",
    "globaltimer_after_ns",
    "gpu_lo_ns",
    "gpu_hi_ns",
    "gpu_bound",
    "host_lo_ns",
    "host_hi_ns",
    "host_mid_ns",
)
LAUNCH_FIELDS = (
    "gpu",
    "launch",
    "host_call_ns",
    "host_return_ns",
    "first_entry_lo_ns",
    "first_entry_hi_ns",
    "latency_lo_ns",
    "latency_hi_ns",
    "proven_pairs",
    "pairs",
)
SYNC_FIELDS = ("gpu", "window", "round", "host_down_ns", "gpu_seen_ns", "gpu_down_ns", "gpu_up_ns", "host_up_ns")
KINDS = {
    "exact": "a clock as read: the host's own events, the GPU's raw timer and cycle reads",
    "hard": "a bound that holds whenever the assumptions listed with it do",
    "empirical": "measured over this run's sample, no better than that sample",
    "estimate": "the middle of a bound, to draw with",
}


@dataclass(frozen=True)
class LaunchRow:
    """One launch on the host clock."""

    launch: int
    host_call: int  # exact
    host_return: int  # exact
    entry_lo: int  # hard: earliest stamp-0 event's host interval
    entry_hi: int
    proven: int  # pairs of warp-0 events with a proven order
    pairs: int

    @property
    def latency(self) -> tuple[int, int]:
        return self.entry_lo - self.host_call, self.entry_hi - self.host_call


@dataclass(frozen=True)
class HostTimeline:
    """Every block's warp 0 on the host clock, per launch, with how tight each link was."""

    gpu: str
    kernel: str
    axis: HostAxis
    tick_ns: int
    events: tuple[dict[str, Any], ...]
    launches: tuple[LaunchRow, ...]
    link1_widths: np.ndarray  # ns, every checkpoint of every warp and launch, through its SM's lines
    window_widths: np.ndarray  # ns, the same checkpoints' own windows (unwidened)
    infeasible_segments: int  # SM runs whose checkpoints no one line meets, even with the slack
    segments: int
    slack_ns: int  # link 1's slack e (hostaxis: empirical)
    exact_segments: int  # SM runs consistent with one line with no slack at all


def host_timeline(
    gpu: str,
    kernel: str,
    rows: Sequence[dict[str, Any]],
    warps_per_block: int,
    syncs: Sequence[SyncWindow],
    calls: Sequence[Any],
) -> HostTimeline:
    """Link 1 per launch and SM from every warp's stamps, link 2 from the sync windows."""
    axis = host_axis(gpu, syncs)
    tick = max(s.tick_ns() for s in syncs)
    by_launch: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_launch[r["launch"]].append(r)
    slack = max((needed_slack(map(_checkpoint, rs), tick) for rs in by_launch.values()), default=0)
    exact = sum(_exact_segments(map(_checkpoint, rs), tick) for rs in by_launch.values())
    events: list[dict[str, Any]] = []
    launches, widths, own, bad, segs = [], [], [], 0, 0
    for call in calls:
        launch_rows = by_launch.get(call.launch, [])
        gpu_lo, gpu_hi, kind, stats = _link1(launch_rows, tick, slack)
        widths.append(stats[0])
        own.append(stats[1])
        bad, segs = bad + stats[2], segs + stats[3]
        launches.append(_launch_row(axis, call, launch_rows, gpu_lo, gpu_hi, kind, warps_per_block, events))
    return HostTimeline(
        gpu,
        kernel,
        axis,
        tick,
        tuple(events),
        tuple(launches),
        np.concatenate(widths) if widths else np.zeros(0, dtype=np.int64),
        np.concatenate(own) if own else np.zeros(0, dtype=np.int64),
        bad,
        segs,
        slack,
        exact,
    )


def _exact_segments(checkpoints, tick: int) -> int:
    return sum(line.lines is not None for line in cycle_lines(checkpoints, tick))


def _checkpoint(r: dict[str, Any]) -> Checkpoint:
    return Checkpoint(r["sm"], r["clock"], r["globaltimer_ns"], r["globaltimer_after_ns"])


def _link1(rows: Sequence[dict[str, Any]], tick: int, slack: int):
    """GPU-ns interval of every row (int64 arrays in row order), its kind, and width stats."""
    lines = cycle_lines([_checkpoint(r) for r in rows], tick, slack=slack) if rows else []
    found: dict[Checkpoint, tuple[int, int, str]] = {}
    for line in lines:
        lo, hi = line.intervals()
        kind = "line" if line.lines is not None else "window"
        for cp, a, b in zip(line.checkpoints, lo.tolist(), hi.tolist()):
            found[cp] = (a, b, kind)
    got = [found[_checkpoint(r)] for r in rows]
    gpu_lo = np.array([g[0] for g in got], dtype=np.int64)
    gpu_hi = np.array([g[1] for g in got], dtype=np.int64)
    before = np.array([r["globaltimer_ns"] for r in rows], dtype=np.int64)
    after = np.array([r["globaltimer_after_ns"] for r in rows], dtype=np.int64) + tick
    infeasible = sum(line.lines is None for line in lines)
    return gpu_lo, gpu_hi, [g[2] for g in got], (gpu_hi - gpu_lo, after - before, infeasible, len(lines))


def _launch_row(axis, call, rows, gpu_lo, gpu_hi, kind, warps_per_block, events) -> LaunchRow:
    """Host intervals of the launch's warp-0 events (appended to `events`) and its row."""
    if not rows:
        return LaunchRow(call.launch, call.host_call, call.host_return, 0, 0, 0, 0)
    first = [i for i, r in enumerate(rows) if r["stamp"] == 0]
    entry = axis.intervals(np.array([gpu_lo[first].min()]), np.array([gpu_hi[first].min()]))
    lead = [i for i, r in enumerate(rows) if r["warp"] % warps_per_block == 0]
    host_lo, host_hi = axis.intervals(gpu_lo[lead], gpu_hi[lead])
    mine = []
    for n, i in enumerate(lead):
        r = rows[i]
        lo, hi = int(host_lo[n]), int(host_hi[n])
        events.append(
            {
                "gpu": axis.gpu,
                **{k: r[k] for k in ("launch", "block", "warp", "sm", "stamp", "offset", "instruction", "clock")},
                "globaltimer_ns": r["globaltimer_ns"],
                "globaltimer_after_ns": r["globaltimer_after_ns"],
                "gpu_lo_ns": int(gpu_lo[i]),
                "gpu_hi_ns": int(gpu_hi[i]),
                "gpu_bound": kind[i],
                "host_lo_ns": lo,
                "host_hi_ns": hi,
                "host_mid_ns": (lo + hi) // 2,
            }
        )
        mine.append(Event(axis.gpu, int(gpu_lo[i]), int(gpu_hi[i]), lo, hi))
    proven, pairs = proven_orders(mine)
    return LaunchRow(call.launch, call.host_call, call.host_return, int(entry[0][0]), int(entry[1][0]), proven, pairs)


# ---------------------------------------------------------------- summary and files


def percentile(values: Sequence[float] | np.ndarray, q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if len(values) else float("nan")


def summary(t: HostTimeline) -> dict[str, Any]:
    """Every figure of the run, each with its kind (KINDS) and, for bounds, its assumptions."""
    lat_lo = [r.latency[0] for r in t.launches]
    lat_hi = [r.latency[1] for r in t.launches]
    event_widths = [e["host_hi_ns"] - e["host_lo_ns"] for e in t.events]
    last = t.launches[-1] if t.launches else None

    def value(v: Any, kind: str, unit: str = "ns", assumes: Sequence[str] = ()) -> dict[str, Any]:
        out = {"value": v, "kind": kind, "unit": unit}
        if assumes:
            out["assumes"] = list(assumes)
        return out

    return {
        "kinds": KINDS,
        "gpu": t.gpu,
        "kernel": t.kernel,
        "host_clock": "CLOCK_MONOTONIC_RAW",
        "launches": len(t.launches),
        "sync_windows": len(t.axis.syncs),
        "sync_rounds": [len(s.rounds) for s in t.axis.syncs],
        "timer_step_ns": value(t.tick_ns, "empirical"),
        "link1_stamp_width_ns": {
            "median": value(percentile(t.link1_widths, 50), "hard", assumes=LINK1_ASSUMES),
            "p90": value(percentile(t.link1_widths, 90), "hard", assumes=LINK1_ASSUMES),
            "max": value(int(t.link1_widths.max()) if t.link1_widths.size else None, "hard", assumes=LINK1_ASSUMES),
            "own_window_median": value(percentile(t.window_widths, 50), "hard", assumes=LINK1_ASSUMES[2:]),
            "slack_e": value(t.slack_ns, "empirical"),
            "segments_one_line_without_slack": value(t.exact_segments, "exact", unit="count"),
            "segments_without_one_line": value(t.infeasible_segments, "exact", unit="count"),
            "segments": value(t.segments, "exact", unit="count"),
        },
        "link2_event_width_ns": {
            "median": value(percentile(event_widths, 50), "hard", assumes=LINK2_ASSUMES),
            "max": value(max(event_widths) if event_widths else None, "hard", assumes=LINK2_ASSUMES),
        },
        "launch_to_first_entry_ns": {
            "lower_median": value(percentile(lat_lo, 50), "hard", assumes=LINK1_ASSUMES + LINK2_ASSUMES),
            "upper_median": value(percentile(lat_hi, 50), "hard", assumes=LINK1_ASSUMES + LINK2_ASSUMES),
            "middle_p10": value(percentile([(a + b) / 2 for a, b in zip(lat_lo, lat_hi)], 10), "empirical"),
            "middle_p90": value(percentile([(a + b) / 2 for a, b in zip(lat_lo, lat_hi)], 90), "empirical"),
        },
        "last_launch_proven_pairs": value(last.proven if last else 0, "hard", unit="count"),
        "last_launch_pairs": value(last.pairs if last else 0, "exact", unit="count"),
    }


def output_paths(csv_path: str | Path) -> dict[str, Path]:
    """events.csv -> its siblings: launches, sync rounds, summary, PNG."""
    p = Path(csv_path)
    stem = p.with_suffix("")
    return {
        "events": p,
        "launches": stem.with_name(stem.name + ".launches.csv"),
        "sync": stem.with_name(stem.name + ".sync.csv"),
        "summary": stem.with_name(stem.name + ".json"),
        "png": stem.with_name(stem.name + ".png"),
    }


def csv_bytes(fields: Sequence[str], rows: Sequence[dict[str, Any]]) -> bytes:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(fields), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue().encode()


def launch_dicts(t: HostTimeline) -> list[dict[str, Any]]:
    return [
        {
            "gpu": t.gpu,
            "launch": r.launch,
            "host_call_ns": r.host_call,
            "host_return_ns": r.host_return,
            "first_entry_lo_ns": r.entry_lo,
            "first_entry_hi_ns": r.entry_hi,
            "latency_lo_ns": r.latency[0],
            "latency_hi_ns": r.latency[1],
            "proven_pairs": r.proven,
            "pairs": r.pairs,
        }
        for r in t.launches
    ]


def sync_dicts(gpu: str, syncs: Sequence[SyncWindow]) -> list[dict[str, Any]]:
    return [
        {
            "gpu": gpu,
            "window": s.index,
            "round": n,
            "host_down_ns": r.host_down,
            "gpu_seen_ns": r.gpu_seen,
            "gpu_down_ns": r.gpu_down,
            "gpu_up_ns": r.gpu_up,
            "host_up_ns": r.host_up,
        }
        for s in syncs
        for n, r in enumerate(s.rounds)
    ]


def write_outputs(t: HostTimeline, csv_path: str | Path, protect: Sequence[str | Path] = ()) -> dict[str, Path]:
    """The events CSV and its siblings (output_paths), each written atomically."""
    paths = output_paths(csv_path)
    write_atomic(paths["events"], csv_bytes(EVENT_FIELDS, t.events), protect=protect)
    write_atomic(paths["launches"], csv_bytes(LAUNCH_FIELDS, launch_dicts(t)), protect=protect)
    write_atomic(paths["sync"], csv_bytes(SYNC_FIELDS, sync_dicts(t.gpu, t.axis.syncs)), protect=protect)
    write_atomic(paths["summary"], (json.dumps(summary(t), indent=1) + "\n").encode(), protect=protect)
    return paths


def read_table(path: str | Path, fields: Sequence[str], what: str) -> list[dict[str, str]]:
    """Rows of one of these CSVs, refused in one line when it is not one."""
    p = Path(path)
    try:
        rows = list(csv.DictReader(io.StringIO(read_input(p).decode("utf-8"), newline="")))
    except (UnicodeDecodeError, csv.Error):
        rows = []
    if not rows or not set(fields) <= set(rows[0]):
        raise InputError(f"{p}: not {what} (expected columns {', '.join(fields)})")
    try:
        for r in rows:
            for f in fields:
                if f.endswith("_ns") or f in ("launch", "block", "stamp", "window", "round"):
                    int(r[f])
    except (ValueError, TypeError) as exc:
        raise InputError(f"{p}: not {what} (a row does not parse: {exc})") from None
    return rows


def load_run(csv_path: str | Path) -> tuple[str, str, list[dict[str, Any]], list[SyncWindow], list[Any]]:
    """(gpu, kernel, stamp rows, sync windows, launch calls) back from the files of a run, to
    analyse it again on a CPU. The events CSV keeps each block's warp 0 only, so link 1 is
    then solved from those warps' checkpoints alone."""
    from reorder.probe.hostaxis import Round
    from reorder.probe.hostclock import LaunchCall

    paths = output_paths(csv_path)
    events = read_table(paths["events"], EVENT_FIELDS, "an events CSV of `reorder probe --host-clock`")
    ints = ("launch", "block", "warp", "sm", "stamp", "clock", "globaltimer_ns", "globaltimer_after_ns")
    rows = [{**{k: e[k] for k in ("offset", "instruction")}, **{k: int(e[k]) for k in ints}} for e in events]
    rounds: dict[int, list[Round]] = defaultdict(list)
    for r in read_table(paths["sync"], SYNC_FIELDS, "a sync CSV"):
        rounds[int(r["window"])].append(Round(*(int(r[f]) for f in SYNC_FIELDS[3:])))
    syncs = [SyncWindow(i, tuple(rs)) for i, rs in sorted(rounds.items())]
    calls = [
        LaunchCall(int(r["launch"]), int(r["host_call_ns"]), int(r["host_return_ns"]))
        for r in read_table(paths["launches"], LAUNCH_FIELDS, "a launches CSV")
    ]
    kernel = json.loads(read_input(paths["summary"]).decode())["kernel"]
    return events[0]["gpu"], kernel, rows, syncs, calls
