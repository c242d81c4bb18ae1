"""The host-axis timeline as a PNG: every block's warp 0 by phase, the launch call, the first
warp entry, and each stamp's bound, for one launch of one or several GPUs (one CSV each).

Phases are drawn between the middles of consecutive stamps' host bounds (an estimate, so the
bars can be seen); each stamp's hard bound is the thin black line through its row; the
launch call's host interval is exact; the first warp entry's band is its hard bound.
"""

from __future__ import annotations

import io
import itertools
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from reorder.base.files import write_atomic

US = 1000.0


def plot_host_timeline(
    tables: Sequence[tuple[list[dict[str, str]], list[dict[str, str]]]],
    path: str | Path,
    launch: int,
    title: str,
    protect: Sequence[str | Path] = (),
) -> Path:
    """(events rows, launch rows) per GPU -> PNG of `launch`, µs from the earliest launch call."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    calls = [r for _, launches in tables for r in launches if int(r["launch"]) == launch]
    t0 = min(int(r["host_call_ns"]) for r in calls)
    lanes = _lanes(tables, launch)
    height = min(max(4.0, 0.012 * len(lanes) + 2.5), 14.0)
    fig, ax = plt.subplots(figsize=(12, height))
    colours = plt.get_cmap("tab10")
    phases: dict[tuple[int, str], tuple[list[int], list[float], list[float]]] = defaultdict(lambda: ([], [], []))
    for y, (_, stamps) in enumerate(lanes):
        for a, b in itertools.pairwise(stamps):
            ys, lefts, widths = phases[(int(a["stamp"]), f"{a['offset']} -> {b['offset']}")]
            ys.append(y)
            lefts.append((int(a["host_mid_ns"]) - t0) / US)
            widths.append((int(b["host_mid_ns"]) - int(a["host_mid_ns"])) / US)
    for (stamp, name), (ys, lefts, widths) in sorted(phases.items()):
        ax.barh(
            ys,
            widths,
            left=lefts,
            height=1.0 if len(lanes) > 200 else 0.8,
            linewidth=0,
            color=colours(stamp % 10),
            label=f"phase {name} (estimate)",
        )
    ys = [y for y, (_, stamps) in enumerate(lanes) for _ in stamps]
    lo = [(int(s["host_lo_ns"]) - t0) / US for _, stamps in lanes for s in stamps]
    hi = [(int(s["host_hi_ns"]) - t0) / US for _, stamps in lanes for s in stamps]
    thin = len(lanes) > 200
    ax.hlines(
        ys,
        lo,
        hi,
        colors="black",
        linewidth=0.3 if thin else 0.6,
        alpha=0.3 if thin else 1.0,
        label="stamp's host interval (hard)",
    )
    for n, r in enumerate(calls):
        first = n == 0
        ax.axvspan(
            (int(r["host_call_ns"]) - t0) / US,
            (int(r["host_return_ns"]) - t0) / US,
            color="0.6",
            alpha=0.5,
            zorder=0,
            label="launch call, start to return (exact)" if first else None,
        )
        ax.axvspan(
            (int(r["first_entry_lo_ns"]) - t0) / US,
            (int(r["first_entry_hi_ns"]) - t0) / US,
            color="red",
            zorder=0,
            alpha=0.3,
            label="first warp entry (hard bound)" if first else None,
        )
    ax.set_yticks(_ticks(lanes))
    ax.set_yticklabels([lanes[i][0] for i in _ticks(lanes)], fontsize=7)
    ax.set_ylim(-1, len(lanes))
    ax.invert_yaxis()
    ax.set_xlabel("host clock (CLOCK_MONOTONIC_RAW), µs after the launch call")
    ax.set_ylabel("block (warp 0), by first stamp")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.005, 1.0))
    ax.grid(alpha=0.3, axis="x")
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=110)
    plt.close(fig)
    return write_atomic(path, png.getvalue(), protect=protect)


def _lanes(tables, launch: int) -> list[tuple[str, list[dict[str, str]]]]:
    """One lane per (GPU, block): its warp 0's stamps in order; lanes by GPU, then by the
    middle of their first stamp."""
    lanes = []
    for events, _ in tables:
        blocks: dict[tuple[str, int], list[dict[str, str]]] = defaultdict(list)
        for e in events:
            if int(e["launch"]) == launch:
                blocks[(e["gpu"], int(e["block"]))].append(e)
        order = sorted(blocks, key=lambda k: min(int(s["host_mid_ns"]) for s in blocks[k]))
        for gpu, block in order:
            stamps = sorted(blocks[(gpu, block)], key=lambda s: int(s["stamp"]))
            name = f"{gpu} b{block}" if len(tables) > 1 else f"b{block}"
            lanes.append((name, stamps))
    return lanes


def _ticks(lanes) -> list[int]:
    step = max(1, len(lanes) // 24)
    return list(range(0, len(lanes), step))
