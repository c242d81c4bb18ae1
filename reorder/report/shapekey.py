"""What tells a kernel's launch shapes apart, and the ranges of it that a dispatch uses.

Batch sizes usually change the grid (an RMSNorm launches one block per row), sometimes only
a scalar argument and the buffers (an EmbeddingBag keeps its grid and loops over `num_bags`).
The dispatch key is the first launch feature, in the order below, that takes a different
value at every shape; when none does, every feature that varies (a 2-D sweep), matched to
the nearest measured shape. Names are those reorder/report/dispatch.py reads.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def launch_features(spec) -> dict[str, float]:
    """Every number of a launch spec a dispatch could key on: the grid's block count, each
    grid and block dimension, each scalar argument, each buffer dimension."""
    out: dict[str, float] = {"blocks": float(math.prod(spec.grid))}
    for which, dims in (("grid", spec.grid), ("block", spec.block)):
        out |= {f"{which}.{axis}": float(d) for axis, d in zip("xyz", dims)}
    for p in spec.params:
        value = getattr(p, "value", None)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[f"param {p.name}"] = float(value)
    for b in spec.buffers:
        out |= {f"shape {b.name}[{i}]": float(d) for i, d in enumerate(b.shape)}
    return out


def dispatch_key(specs: Sequence) -> tuple[str, ...]:
    """The feature(s) a dispatch over these launches keys on (see the module docstring)."""
    rows = [launch_features(s) for s in specs]
    names = [n for n in rows[0] if all(n in r for r in rows)]
    varying = [n for n in names if len({r[n] for r in rows}) > 1]
    for name in varying:
        if len({r[name] for r in rows}) == len(rows):
            return (name,)
    return tuple(varying) or ("blocks",)


def key_of(spec, key: Sequence[str]) -> tuple[float, ...]:
    features = launch_features(spec)
    return tuple(features[k] for k in key)


def split_ranges(groups: Sequence[Sequence[float]]) -> list[list[float | None]]:
    """Inclusive [low, high] per group of sorted, non-overlapping key values (groups in order):
    the boundary between two groups is the geometric midpoint of their nearest values (a batch
    size between two measured ones goes to the nearer in ratio), the first group unbounded below
    and the last above. Integer keys get integer bounds."""
    out: list[list[float | None]] = []
    for k, values in enumerate(groups):
        previous = out[-1][1] if k else None  # the bound above the group before (set for every group but the last)
        low = None if previous is None else previous + 1 if _integral(groups) else previous
        if k == len(groups) - 1:
            high = None
        else:
            mid = math.sqrt(max(values[-1], 1e-30) * max(groups[k + 1][0], 1e-30))
            high = math.floor(mid) if _integral(groups) else mid
            high = max(high, values[-1])
        out.append([low, high])
    return out


def _integral(groups: Sequence[Sequence[float]]) -> bool:
    return all(float(v).is_integer() for g in groups for v in g)


__all__ = ["dispatch_key", "key_of", "launch_features", "split_ranges"]
