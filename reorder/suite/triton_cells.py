"""From one cell's timing matrix to its rows: Triton's best, reorder's best from each config.

A cell is one kernel family x shape x L2 state. Every build of it (each config's original
cubin and each byte-identical reorder candidate) was timed in the same rounds
(timing.multi), so any two builds compare as a paired ratio. Winners are picked on the even
rounds and every reported figure comes from the odd ones (timing.multi.split_rounds): the
best of forty builds picked and measured on the same noise would look better than it is.

- Triton's best: the fastest original (what `@triton.autotune` over these configs picks);
- from each config: its fastest candidate against its own original (paired ratio, 95% CI);
- reorder as an axis: the fastest of originals and candidates together (what the autotuner
  picks once reorder's binaries are among its configs), against Triton's best (paired);
- roofline: bytes / measured copy bandwidth, or FLOPs / measured cuBLAS fp16 rate for a GEMM,
  over the time.

Pure numpy: the CPU tests feed it made-up matrices.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from timing.multi import split_rounds, time_ci
from timing.stats import paired_ratio_ci, trimmed_mean


@dataclass(frozen=True)
class Member:
    """One timed build: its config label and candidate name ('' for the config's original)."""

    config: str
    candidate: str = ""

    @property
    def label(self) -> str:
        return f"{self.config}/{self.candidate}" if self.candidate else self.config


def _best(times: np.ndarray, columns: Sequence[int]) -> int:
    means = trimmed_mean(times[:, list(columns)], axis=0)
    return list(columns)[int(np.argmin(means))]


def _column(report: np.ndarray, build: int) -> Sequence[float]:
    """One build's times over the report rounds: a numpy column, which the statistics of
    timing read as the sequence of floats they declare."""
    return cast(Sequence[float], report[:, build])


def _ratio(report: np.ndarray, a: int, b: int) -> tuple[float, float, float]:
    """time(b) / time(a) on the report rounds with its 95% CI (1, 1, 1 for the same build)."""
    if a == b:
        return 1.0, 1.0, 1.0
    est = paired_ratio_ci(_column(report, a), _column(report, b), rng=0)
    return est.ratio, est.low, est.high


def config_rows(members: Sequence[Member], times: np.ndarray) -> list[dict]:
    """One row per config: its original's time, its best candidate's and their paired ratio."""
    pick, report = split_rounds(times)
    rows = []
    for config in dict.fromkeys(m.config for m in members):
        original = members.index(Member(config))
        mine = [i for i, m in enumerate(members) if m.config == config and m.candidate]
        us, lo, hi = time_ci(_column(report, original))
        row = {
            "config": config,
            "original_us": us,
            "original_ci_low": lo,
            "original_ci_high": hi,
            "candidates_timed": len(mine),
        }
        if mine:
            best = _best(pick, mine)
            r, r_lo, r_hi = _ratio(report, original, best)
            b_us, b_lo, b_hi = time_ci(_column(report, best))
            row.update(
                {
                    "best_candidate": members[best].candidate,
                    "candidate_us": b_us,
                    "candidate_ci_low": b_lo,
                    "candidate_ci_high": b_hi,
                    "ratio": r,
                    "ratio_ci_low": r_lo,
                    "ratio_ci_high": r_hi,
                    "speedup": 1.0 / r,
                }
            )
        rows.append(row)
    return rows


def cell_summary(
    members: Sequence[Member], times: np.ndarray, bytes_moved: int, flops: int, roof: Mapping[str, float]
) -> dict:
    """The cell's row: Triton's best, reorder's best candidate, reorder as an axis, roofline."""
    pick, report = split_rounds(times)
    originals = [i for i, m in enumerate(members) if not m.candidate]
    candidates = [i for i, m in enumerate(members) if m.candidate]
    triton = _best(pick, originals)
    axis = _best(pick, originals + candidates)
    t_us, t_lo, t_hi = time_ci(_column(report, triton))
    a_us, a_lo, a_hi = time_ci(_column(report, axis))
    r, r_lo, r_hi = _ratio(report, triton, axis)
    row = {
        "triton_best_config": members[triton].config,
        "triton_best_us": t_us,
        "triton_ci_low": t_lo,
        "triton_ci_high": t_hi,
        "triton_worst_us": float(trimmed_mean(report[:, originals], axis=0).max()),
        "reorder_best": members[axis].label,
        "reorder_best_is_candidate": bool(members[axis].candidate),
        "reorder_best_us": a_us,
        "reorder_ci_low": a_lo,
        "reorder_ci_high": a_hi,
        "ratio": r,
        "ratio_ci_low": r_lo,
        "ratio_ci_high": r_hi,
        "speedup": 1.0 / r,
        "triton_wins": r_lo > 1.0,
        "rounds_pick": len(pick),
        "rounds_report": len(report),
    }
    if candidates:
        cand = _best(pick, candidates)
        c, c_lo, c_hi = _ratio(report, triton, cand)
        row.update(
            {
                "best_candidate": members[cand].label,
                "best_candidate_vs_triton": c,
                "best_candidate_ci_low": c_lo,
                "best_candidate_ci_high": c_hi,
            }
        )
    return {**row, **roofline(bytes_moved, flops, roof, t_us, a_us)}


def roofline(bytes_moved: int, flops: int, roof: Mapping[str, float], triton_us: float, reorder_us: float) -> dict:
    """Fraction of the roof each time reaches: FLOPs / peak for a GEMM, else bytes / bandwidth."""
    if flops:
        ideal_us, bound = 1e6 * flops / roof.get("flops", float("nan")), "compute"
    else:
        ideal_us, bound = 1e6 * bytes_moved / roof.get("bytes_per_s", float("nan")), "memory"
    return {
        "roof_bound": bound,
        "roof_us": ideal_us,
        "roofline_triton": ideal_us / triton_us,
        "roofline_reorder": ideal_us / reorder_us,
    }
