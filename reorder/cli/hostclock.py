"""`reorder probe --stamps ... --host-clock` and `reorder host-timeline`: region stamps on the
host's clock, with the bound of each link, the launch-to-first-warp latency, and the pairs of
events whose order the bounds prove.

One process per GPU puts its events on the one host clock (CLOCK_MONOTONIC_RAW), so several
GPUs of a host share one axis: run the probe once per GPU (CUDA_VISIBLE_DEVICES=i, its own
-o), then `reorder host-timeline a.csv b.csv -o all.png` draws them together and counts the
proven orders across them.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from reorder.base.errors import GpuError, InputError, LegalityError

HOST_CLOCK_HELP = (
    "put the stamps on the host clock: sync windows through zero-copy memory before and after "
    "the launches, link 1 (cycles -> GPU ns) per SM, link 2 (GPU timer -> host); a stamp after the "
    "kernel's first instruction is added; -o names the events CSV, beside which go "
    ".launches.csv, .sync.csv, .json and .png"
)


def run_host_clock(args: argparse.Namespace, spec, offsets: list[int]) -> int:
    """Build the stamp variant (an entry stamp included), run it between sync windows in a
    worker, and write the events, launches, sync rounds, summary and PNG."""
    from reorder.base.files import check_output, write_atomic
    from reorder.binary.cubin import read_cubin
    from reorder.probe import run as tp
    from reorder.probe.hostclock import stamps_job
    from reorder.probe.hosttimeline import host_timeline, output_paths, write_outputs
    from reorder.probe.variants import build_stamps, check_build, probe_positions, stamp_positions
    from reorder.sass.model import decode_kernel
    from timing import cli_support as cs
    from timing.worker import Job

    out = Path(args.output if args.output != "timeline.csv" else "events.csv")
    for path in output_paths(out).values():  # refused now, not after the GPU run
        check_output(path, [args.cubin, args.launch])
    code = decode_kernel(read_cubin(args.cubin), spec.name)
    entry = probe_positions(code)[:1]
    positions = sorted(set(entry) | set(stamp_positions(code, offsets)))
    build = build_stamps(code, positions, tp.layout_of(spec))
    checked = check_build(code, build)
    if checked.changed or checked.violations:
        raise LegalityError(
            f"{args.cubin}: stamp build refused: originals changed at {list(map(hex, checked.changed))}, "
            f"{len(checked.violations)} verifier violations",
            checked.violations,
        )
    cs.require_gpu()
    with tempfile.TemporaryDirectory(prefix="reorder-hostclock-") as tmp:
        path = write_atomic(Path(tmp) / "stamps.cubin", build.data)
        pspec = tp.probe_spec(spec, build.record_bytes)
        done = cs.run_one(Job.of(stamps_job, str(path), pspec, args.launches, timeout_s=120 + 2 * args.launches))
    if not done.ok:
        raise GpuError(f"host-clock run {done.status}: {done.reason}")
    raw = done.value
    from reorder.probe.hosttimeline import SYNC_FIELDS, csv_bytes, sync_dicts

    # the rounds first: if they contradict the clocks' assumptions, what they were stays on disk
    write_atomic(output_paths(out)["sync"], csv_bytes(SYNC_FIELDS, sync_dicts(raw["gpu"], raw["syncs"])))
    rows = tp.stamp_rows(build, code, raw["records"])
    timeline = host_timeline(
        raw["gpu"], code.kernel.name, rows, build.layout.warps_per_block, raw["syncs"], raw["calls"]
    )
    paths = write_outputs(timeline, out, protect=[args.cubin, args.launch])
    plot_last(timeline, paths)
    for line in summary_lines(timeline, paths):
        print(line)
    return 0


def plot_last(timeline, paths) -> None:
    from reorder.probe.hostplot import plot_host_timeline
    from reorder.probe.hosttimeline import launch_dicts

    last = timeline.launches[-1]
    events = [{k: str(v) for k, v in e.items()} for e in timeline.events if e["launch"] == last.launch]
    launches = [{k: str(v) for k, v in r.items()} for r in launch_dicts(timeline)]
    title = (
        f"{timeline.kernel} on {timeline.gpu}, launch {last.launch}: every block's warp 0 on the host clock; "
        f"{last.proven} of {last.pairs} event pairs in a proven order"
    )
    plot_host_timeline([(events, launches)], paths["png"], last.launch, title)


def summary_lines(t, paths) -> list[str]:
    """What a user reads: each figure with its kind, then the assumptions and the files."""
    from reorder.probe.hostaxis import LINK1_ASSUMES, LINK2_ASSUMES
    from reorder.probe.hosttimeline import percentile

    blocks = len({e["block"] for e in t.events if e["launch"] == t.launches[-1].launch})
    widths = [e["host_hi_ns"] - e["host_lo_ns"] for e in t.events]
    lat = [(r.latency[0], r.latency[1]) for r in t.launches if r.pairs]
    last = t.launches[-1]
    return [
        (
            f"{paths['events']}: {len(t.events)} events ({blocks} blocks' warp 0 x stamps) over {len(t.launches)} "
            f"launches on {t.gpu}, host clock CLOCK_MONOTONIC_RAW"
        ),
        (
            f"link 1 (cycles -> GPU ns, per SM and launch): stamp interval median "
            f"{percentile(t.link1_widths, 50):.0f} ns, p90 {percentile(t.link1_widths, 90):.0f} ns, "
            f"max {int(t.link1_widths.max()) if t.link1_widths.size else 0} ns "
            f"(hard; each stamp's own window alone: median {percentile(t.window_widths, 50):.0f} ns); "
            f"slack e {t.slack_ns} ns (empirical; {t.exact_segments} of {t.segments} SM runs needed none); "
            f"timer step {t.tick_ns} ns (empirical)"
        ),
        (
            f"link 2 (GPU timer -> host): event interval median {percentile(widths, 50) / 1e3:.2f} us, "
            f"max {max(widths, default=0) / 1e3:.2f} us (hard); {len(t.axis.syncs)} sync windows of "
            f"{min(len(s.rounds) for s in t.axis.syncs)}+ rounds"
        ),
        (
            f"launch call -> first warp entry: [{percentile([a for a, _ in lat], 50) / 1e3:.2f}, "
            f"{percentile([b for _, b in lat], 50) / 1e3:.2f}] us (hard bound, median of each end over {len(lat)} "
            f"launches; its middle p10-p90 {percentile([(a + b) / 2 for a, b in lat], 10) / 1e3:.2f}-"
            f"{percentile([(a + b) / 2 for a, b in lat], 90) / 1e3:.2f} us, empirical)"
        ),
        f"launch {last.launch}: {last.proven} of {last.pairs} pairs of warp-0 events in a proven order (hard)",
        "link 1 assumes: " + "; ".join(LINK1_ASSUMES),
        "link 2 assumes: " + "; ".join(LINK2_ASSUMES),
        "wrote " + ", ".join(str(p) for p in paths.values()),
    ]


# ---------------------------------------------------------------- reorder host-timeline


def add_timeline_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("csv", nargs="+", help="events CSVs of `reorder probe --host-clock` (one per GPU)")
    p.add_argument("--launch", type=int, help="which launch to draw (default: the last one all CSVs have)")
    p.add_argument("-o", "--output", default="host_timeline.png")


def run_timeline(args: argparse.Namespace) -> int:
    """Draw one launch of one or more GPUs on the host axis and count its proven orders."""
    from reorder.probe.hostaxis import Event, proven_orders
    from reorder.probe.hostplot import plot_host_timeline
    from reorder.probe.hosttimeline import EVENT_FIELDS, LAUNCH_FIELDS, output_paths, read_table

    tables = []
    for c in args.csv:
        events = read_table(c, EVENT_FIELDS, "an events CSV of `reorder probe --host-clock`")
        launches = read_table(output_paths(c)["launches"], LAUNCH_FIELDS, "a launches CSV")
        tables.append((events, launches))
    common = set.intersection(*({int(e["launch"]) for e in events} for events, _ in tables))
    if not common:
        raise InputError("host-timeline: the CSVs share no launch index")
    launch = max(common) if args.launch is None else args.launch
    if launch not in common:
        raise InputError(f"--launch {launch}: not in every CSV (they share {min(common)}..{max(common)})")
    chosen = [e for events, _ in tables for e in events if int(e["launch"]) == launch]
    proven, pairs = proven_orders(
        [
            Event(e["gpu"], int(e["gpu_lo_ns"]), int(e["gpu_hi_ns"]), int(e["host_lo_ns"]), int(e["host_hi_ns"]))
            for e in chosen
        ]
    )
    gpus = sorted({e["gpu"] for e in chosen})
    title = f"launch {launch} on {len(gpus)} GPU(s), one host clock: {proven} of {pairs} event pairs in a proven order"
    path = plot_host_timeline(tables, args.output, launch, title, protect=args.csv)
    print(
        f"launch {launch}: {len(chosen)} events on {', '.join(gpus)}; "
        f"{proven} of {pairs} pairs in a proven order (hard)"
    )
    print(f"wrote {path}")
    return 0
