"""The host clock on one GPU: how tight each link is at `--near` (0.2 s) and `--far` (16 s) from
a sync window, whether the bound contains what the host saw, and a suite kernel on the host axis.

    python -m benchmarks.studies hostclock --out DIR [--near 0.2] [--far 16] [--rounds 400] [--flags 10]
    python -m benchmarks.studies hostclock --dry-run --out DIR      # the modelled GPU, no waiting
    python -m benchmarks.hostclock_gpu --analyse RAW.json --out DIR   # CPU: a run's raw.json again
    python -m benchmarks.hostclock_gpu --reanalyse EVENTS.csv --out DIR   # CPU: a probe run again

Sync windows W0, W1, W2 are taken at 0, 2*near and 2*near + 2*far seconds; flag tests (the
kernel stamps its cycle counter, then sets a flag the host sees; before that it waits for the
host's release) run midway between W0 and W1 and midway between W1 and W2, so each is `near`
or `far` from the nearest window. Written to DIR: study.json (every figure with its kind),
widths.csv (link 2's width from W0 to W2), flags.csv (every flag test and its checks),
sync.csv (every round), raw.json (everything measured). Then `reorder probe --stamps ...
--host-clock` twice on rmsnorm_triton_style: DIR/timeline (2048 rows: several waves of blocks;
2 launches) and DIR/latency (16 rows, 100 launches: launch call to first warp entry), each a
row of hostclock_probes.csv. The dry run measures the modelled GPU of
benchmarks/studies/clockmodel.py on a virtual host clock (made-up numbers, never a
measurement) and runs no probe.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import math
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from benchmarks.studies.runner import DeviceRecord, DryDevice, LiveDevice, commit, declared
from reorder.probe.hostaxis import (
    HOST_PER_GPU,
    LINK1_ASSUMES,
    LINK2_ASSUMES,
    Checkpoint,
    FlagTest,
    Round,
    SyncWindow,
    flag_check,
    host_axis,
    needed_slack,
    rate_check,
)
from reorder.probe.hostclock import host_ns
from reorder.probe.hosttimeline import SYNC_FIELDS, percentile, sync_dicts
from reorder.probe.lines import feasible_lines

ROOT = Path(__file__).resolve().parents[2]
KERNEL = "rmsnorm_triton_style"
STAMPS = "aa0,bb0,1080"  # after the block reduction's barrier, after the guarded EXIT, after the last store
FLAG_FIELDS = (
    "group",
    "seconds_from_window",
    "host_release_ns",
    "host_seen_ns",
    "release_lo_ns",
    "release_hi_ns",
    "flag_lo_ns",
    "flag_hi_ns",
    "flag_gpu_width_ns",
    "sound",
    "ends_before_seen",
    "starts_after_release",
)


@dataclass(frozen=True)
class Measured:
    gpu: str
    syncs: tuple[SyncWindow, SyncWindow, SyncWindow]
    near: tuple[FlagTest, ...]
    far: tuple[FlagTest, ...]


def _until(t_ns: int) -> None:
    while (left := t_ns - host_ns()) > 2_000_000:
        time.sleep(left / 2e9)
    while host_ns() < t_ns:
        pass


def measure(
    session: Any,
    near_s: float,
    far_s: float,
    rounds: int,
    flags: int,
    now: Callable[[], int] = host_ns,
    until: Callable[[int], None] = _until,
) -> Measured:
    """W0; flags near; W1; flags far; W2 (see the module docstring), waiting on the host clock
    `now` (a dry run's is virtual)."""
    w0 = session.sync_window(0, rounds)
    t0 = now()
    until(t0 + int(near_s * 1e9))
    near = tuple(session.flag_test() for _ in range(flags))
    until(t0 + int(2 * near_s * 1e9))
    w1 = session.sync_window(1, rounds)
    t1 = now()
    until(t1 + int(far_s * 1e9))
    far = tuple(session.flag_test() for _ in range(flags))
    until(t1 + int(2 * far_s * 1e9))
    w2 = session.sync_window(2, rounds)
    return Measured(session.gpu, (w0, w1, w2), near, far)


def _from_window(syncs, gpu_ns: int) -> float:
    """Seconds (GPU timer) from gpu_ns to the nearest sync window."""
    return (
        min(0 if s.start <= gpu_ns <= s.end else min(abs(gpu_ns - s.start), abs(gpu_ns - s.end)) for s in syncs) / 1e9
    )


def _extrapolated(w0: SyncWindow, w1: SyncWindow, w2: SyncWindow) -> dict[str, Any]:
    """W0 and W1's lines carried to W2: their width there, and how far W2's rounds lie outside."""
    lines = feasible_lines(w0.windows() + w1.windows(), HOST_PER_GPU)
    worst = 0
    for w in w2.windows():
        lo, hi = lines.span(w.x)
        if w.lo is not None:
            worst = max(worst, w.lo - hi)
        if w.hi is not None:
            worst = max(worst, lo - w.hi)
    return {"width_at_w2_ns": float(lines.width(w2.start)), "w2_outside_by_ns": float(worst)}


def analyse(m: Measured) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """The summary, link 2's width across the run, and one row per flag test."""
    w0, w1, w2 = m.syncs
    axis = host_axis(m.gpu, m.syncs)
    tick = max(s.tick_ns() for s in m.syncs)
    slack = max(needed_slack(t.checkpoints, tick, bits=64) for t in m.near + m.far)
    mid_near, mid_far = (w0.end + w1.start) // 2, (w1.end + w2.start) // 2
    widths = []
    for k in range(401):
        g = w0.start + (w2.end - w0.start) * k // 400
        widths.append({"gpu_ns": g, "seconds_from_window": _from_window(m.syncs, g), "width_ns": float(axis.width(g))})
    flags = []
    for group, tests in (("near", m.near), ("far", m.far)):
        for t in tests:
            try:
                c = flag_check(t, axis, tick, slack)
            except ValueError as exc:  # the SM clock changed rate around both reads: reported, not hidden
                print(f"flag test skipped: {exc}", flush=True)
                continue
            gpu_at = t.checkpoints[len(t.checkpoints) // 2].before
            flags.append(
                {
                    "group": group,
                    "seconds_from_window": round(_from_window(m.syncs, gpu_at), 6),
                    "host_release_ns": c.host_release,
                    "host_seen_ns": c.host_seen,
                    "release_lo_ns": c.release[0],
                    "release_hi_ns": c.release[1],
                    "flag_lo_ns": c.flag[0],
                    "flag_hi_ns": c.flag[1],
                    "flag_gpu_width_ns": c.flag_gpu_width,
                    "sound": c.sound,
                    "ends_before_seen": c.ends_before_seen,
                    "starts_after_release": c.starts_after_release,
                }
            )
    trips = [r.host_up - r.host_down for s in m.syncs for r in s.rounds]

    def group(name: str, key: str) -> list[float]:
        return [f[key] for f in flags if f["group"] == name]

    summary = {
        "gpu": m.gpu,
        "host_clock": "CLOCK_MONOTONIC_RAW",
        "rounds_per_window": [len(s.rounds) for s in m.syncs],
        "timer_step_ns": {"value": tick, "kind": "empirical"},
        "link1_slack_ns": {
            "value": slack,
            "kind": "empirical",
            "needed_by_each_test": [needed_slack(t.checkpoints, tick, bits=64) for t in m.near + m.far],
        },
        "round_trip_ns": {"min": min(trips), "median": percentile(trips, 50), "kind": "exact (host clock)"},
        "window_gaps_s": {"w0_w1": (w1.start - w0.end) / 1e9, "w1_w2": (w2.start - w1.end) / 1e9},
        "link2_width_ns": {
            "at_near_midpoint": float(axis.width(mid_near)),
            "near_midpoint_from_window_s": _from_window(m.syncs, mid_near),
            "at_far_midpoint": float(axis.width(mid_far)),
            "far_midpoint_from_window_s": _from_window(m.syncs, mid_far),
            "inside_windows_min": min(w["width_ns"] for w in widths),
            "kind": "hard",
            "assumes": list(LINK2_ASSUMES),
        },
        "link2_w0_w1_carried_to_w2": {**_extrapolated(w0, w1, w2), "kind": "hard (extrapolated) / empirical check"},
        "link2_rate_check_ns": {
            "value": rate_check(m.syncs),
            "kind": "empirical",
            "meaning": "ns every round of W0, W1, W2 must be widened by for one line to meet all three",
        },
        "link1_flag_width_ns": {
            "near_median": percentile(group("near", "flag_gpu_width_ns"), 50),
            "far_median": percentile(group("far", "flag_gpu_width_ns"), 50),
            "max": max(f["flag_gpu_width_ns"] for f in flags),
            "kind": "hard",
            "assumes": list(LINK1_ASSUMES),
        },
        "flag_host_width_ns": {
            "near_median": percentile([f["flag_hi_ns"] - f["flag_lo_ns"] for f in flags if f["group"] == "near"], 50),
            "far_median": percentile([f["flag_hi_ns"] - f["flag_lo_ns"] for f in flags if f["group"] == "far"], 50),
            "kind": "hard",
        },
        "flag_tests": {
            "count": len(flags),
            "run": len(m.near) + len(m.far),
            "sound": sum(f["sound"] for f in flags),
            "ends_before_seen": sum(f["ends_before_seen"] for f in flags),
            "starts_after_release": sum(f["starts_after_release"] for f in flags),
            "seen_minus_flag_hi_ns_min": min(f["host_seen_ns"] - f["flag_hi_ns"] for f in flags),
            "kind": "exact (checks of hard bounds against host observations)",
        },
    }
    return summary, widths, flags


def _write_csv(path: Path, fields, rows) -> None:
    with path.open("w", newline="") as handle:
        w = csv.DictWriter(handle, fieldnames=list(fields), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def dump_raw(m: Measured) -> dict[str, Any]:
    """Everything measured, as JSON: the analysis can be run again from it (--analyse)."""
    return {
        "gpu": m.gpu,
        "syncs": [[dataclasses.astuple(r) for r in s.rounds] for s in m.syncs],
        "near": [_flag_json(t) for t in m.near],
        "far": [_flag_json(t) for t in m.far],
    }


def _flag_json(t: FlagTest) -> dict[str, Any]:
    return {**dataclasses.asdict(t), "checkpoints": [dataclasses.astuple(c) for c in t.checkpoints]}


def load_raw(raw: dict[str, Any]) -> Measured:
    def flag(d: dict[str, Any]) -> FlagTest:
        return FlagTest(**{**d, "checkpoints": tuple(Checkpoint(*c) for c in d["checkpoints"])})

    syncs = tuple(SyncWindow(i, tuple(Round(*r) for r in rounds)) for i, rounds in enumerate(raw["syncs"]))
    return Measured(raw["gpu"], syncs, tuple(map(flag, raw["near"])), tuple(map(flag, raw["far"])))


def write_study(out: Path, m: Measured) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    (out / "raw.json").write_text(json.dumps(dump_raw(m)) + "\n")
    _write_csv(out / "sync.csv", SYNC_FIELDS, sync_dicts(m.gpu, m.syncs))
    summary, widths, flags = analyse(m)
    (out / "study.json").write_text(json.dumps(summary, indent=1) + "\n")
    _write_csv(out / "widths.csv", ("gpu_ns", "seconds_from_window", "width_ns"), widths)
    _write_csv(out / "flags.csv", FLAG_FIELDS, flags)
    return summary


def spec_for(rows: int, folder: Path) -> Path:
    """The suite spec of KERNEL at `rows` rows."""
    from benchmarks.studies.runner import write_suite_spec

    return write_suite_spec(KERNEL, {"rows": rows}, folder / f"{KERNEL}_{rows}.toml")


CUBIN = ROOT / "benchmarks/kernels/cubin/rmsnorm.cubin"


def probe_command(out: Path, rows: int) -> list[str]:
    """`reorder probe --stamps STAMPS --host-clock` on KERNEL at `rows` rows, into `out` (less
    its launch count)."""
    return [
        sys.executable,
        "-m",
        "reorder",
        "probe",
        str(CUBIN),
        "--launch",
        str(spec_for(rows, out)),
        "--stamps",
        STAMPS,
        "--host-clock",
        "-o",
        str(out / "events.csv"),
    ]


def probe_run(out: Path, rows: int, launches: int) -> int:
    """The probe of KERNEL at `rows` rows over `launches` launches, into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    command = [*probe_command(out, rows), "--launches", str(launches)]
    print("$", " ".join(command[1:]), flush=True)
    return subprocess.run(command, check=False, timeout=540).returncode


def reanalyse(events: Path, out: Path) -> int:
    """A `probe --host-clock` run's files (warp-0 stamps, sync rounds, launch calls) analysed
    again with this tree's code, into out/events.csv and its siblings, with the PNG."""
    from reorder.cli.hostclock import plot_last, summary_lines
    from reorder.probe.hosttimeline import host_timeline, load_run, write_outputs

    gpu, kernel, rows, syncs, calls = load_run(events)
    out.mkdir(parents=True, exist_ok=True)
    warps_per_block = math.gcd(*(r["warp"] for r in rows))  # the rows are each block's warp 0
    timeline = host_timeline(gpu, kernel, rows, warps_per_block, syncs, calls)
    paths = write_outputs(timeline, out / "events.csv")
    plot_last(timeline, paths)
    print("\n".join(summary_lines(timeline, paths)))
    return 0


def options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--near", type=float, default=0.2, help="seconds from a window of the near flag tests")
    p.add_argument("--far", type=float, default=16.0, help="seconds from a window of the far flag tests")
    p.add_argument("--rounds", type=int, default=400, help="handshake rounds per sync window")
    p.add_argument("--flags", type=int, default=10, help="flag tests near and far")
    p.add_argument("--skip-probe", action="store_true", help="only the windows and flag tests")
    p.add_argument("--probe-first", action="store_true", help="the two probe runs before the windows")


def manifest(args: argparse.Namespace) -> dict:
    """Nothing is built ahead: the handshake kernels are PTX loaded by the session."""
    return {"commit": commit()}


class Live(LiveDevice):
    """The GPU's handshake session (reorder.probe.hostclock.Session, opened when measuring) and
    the probe runs as processes of their own; no worker pool."""

    def __init__(self) -> None:
        self.pool = None
        self.now: Callable[[], int] = host_ns
        self.until: Callable[[int], None] = _until

    def close(self) -> None:
        pass

    def session(self) -> Any:
        from reorder.probe.hostclock import Session

        return Session()

    def probe(self, out: Path, rows: int, launches: int) -> int:
        return probe_run(out, rows, launches)


class Dry(DryDevice, Live):
    """The modelled GPU on a virtual host clock; no probe runs."""

    def __init__(self) -> None:
        from benchmarks.studies.clockmodel import VirtualClock

        self.pool = None
        clock = VirtualClock(host_ns())
        self.now, self.until = clock.host_ns, clock.until

    def session(self) -> Any:
        from benchmarks.studies.clockmodel import FakeSession

        return FakeSession(now=self.now)

    def probe(self, out: Path, rows: int, launches: int) -> int:
        raise NotImplementedError("a dry run runs no probe")


@dataclass
class Rows(DeviceRecord):
    prefix: ClassVar[str] = "hostclock"
    probes: list = dataclasses.field(default_factory=list)
    summary: dict = dataclasses.field(default_factory=dict)


PROBES = (("latency", 16, 100), ("timeline", 2048, 2))


def _probes(run, rec: Rows) -> None:
    if run.args.skip_probe or run.args.dry_run:
        reason = "--skip-probe" if run.args.skip_probe else "dry run"
        for name, rows, launches in PROBES:
            rec.add(
                "probes", {"probe": name, "rows": rows, "launches": launches, "status": "skipped", "reason": reason}
            )
        return
    for name, rows, launches in PROBES:
        rc = rec.device.probe(rec.out / name, rows, launches)
        rec.add(
            "probes", {"probe": name, "rows": rows, "launches": launches, "status": "ok" if rc == 0 else f"rc {rc}"}
        )


def check_and_time(run, rec: Rows) -> None:
    """The windows and flag tests (after or before the two probe runs), written as they end."""
    a = run.args
    if a.probe_first:
        _probes(run, rec)
    with rec.device.session() as session:
        session.flag_test()  # warm-up: module loading stays out of the measured tests
        measured = measure(session, a.near, a.far, a.rounds, a.flags, rec.device.now, rec.device.until)
    rec.summary = write_study(rec.out, measured)
    if not a.probe_first:
        _probes(run, rec)


def summary(rec: Rows, out: Path) -> str:
    s, st = rec.summary, rec.stamps
    lines = [f"# The host clock ({st['gpu']}, {st['date']}, built at {st['commit']})", ""]
    if s:
        w, f = s["link2_width_ns"], s["flag_tests"]
        lines += [
            f"- link 2 width: {w['at_near_midpoint']:.0f} ns at {w['near_midpoint_from_window_s']:.2f} s from a "
            f"window, {w['at_far_midpoint']:.0f} ns at {w['far_midpoint_from_window_s']:.2f} s",
            f"- link 1 flag width (median): near {s['link1_flag_width_ns']['near_median']:.0f} ns, "
            f"far {s['link1_flag_width_ns']['far_median']:.0f} ns",
            f"- flag tests sound: {f['sound']} of {f['count']} ({f['run']} run)",
            f"- rate check: {s['link2_rate_check_ns']['value']} ns",
        ]
    lines += [
        f"- probe {p['probe']} ({p['rows']} rows): {p['status']} {p.get('reason', '')}".rstrip() for p in rec.probes
    ]
    return "\n".join(lines) + "\n"


STUDY = declared(
    __name__,
    name="hostclock",
    deadline_s=540.0,
    verdict=lambda rec: 1 if any(p["status"] not in ("ok", "skipped") for p in rec.probes) else 0,  # type: ignore[attr-defined]
)


def main(argv: list[str] | None = None) -> int:
    """The study's command line, with the two CPU re-analyses its results folder names:
    `--analyse RAW.json --out DIR` and `--reanalyse EVENTS.csv --out DIR`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(prog="python -m benchmarks.hostclock_gpu", description=__doc__.splitlines()[0])
    p.add_argument("--analyse", type=Path, metavar="RAW.json", help="CPU: analyse a raw.json again into --out")
    p.add_argument("--reanalyse", type=Path, metavar="EVENTS.csv", help="CPU: a probe run's files again into --out")
    p.add_argument("--out", type=Path)
    args, rest = p.parse_known_args(argv)
    if (args.analyse or args.reanalyse) and args.out is None:
        p.error("--out DIR is required with --analyse and --reanalyse")
    if args.reanalyse:
        return reanalyse(args.reanalyse, args.out)
    if args.analyse:
        print(json.dumps(write_study(args.out, load_raw(json.loads(args.analyse.read_text()))), indent=1))
        return 0
    return STUDY.run([*rest, *(["--out", str(args.out)] if args.out else [])])
