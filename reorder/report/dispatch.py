"""Load the right cubin for a launch from a reorder dispatch manifest (manifest.json).

`reorder optimize --launch A --launch B ... --per-shape` writes, in OUT.reorder/dispatch/, one
cubin per group of launch shapes, manifest.json (each group's launch predicate, its cubin and
the measurements behind it) and a copy of this file as dispatch.py. The copy needs nothing but
the standard library (and cupy for `load`), so it can ship beside the cubins:

    from dispatch import choose, load
    path = choose(grid=(rows, 1, 1))           # the cubin for a launch of `rows` blocks
    kernel = load(grid=(rows, 1, 1))           # cupy.RawModule(path=...).get_function(kernel)

The manifest's key names what tells the launches apart (`blocks`: the grid's block count;
`grid.x`; `param NAME`: a scalar argument; `shape NAME[i]`: a buffer dimension). With one key a
group's predicate is an inclusive range of it (null: unbounded), the ranges splitting halfway
(geometrically) between the measured shapes; with several keys (or groups given no range) a
launch goes to the group of the nearest measured shape in log scale.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent


def read_manifest(path: str | Path | None = None) -> dict:
    """The manifest (default: manifest.json beside this file)."""
    return json.loads(Path(path or HERE / "manifest.json").read_text())


def key_values(
    keys: Sequence[str],
    grid: Sequence[int] = (1, 1, 1),
    block: Sequence[int] = (1, 1, 1),
    params: Mapping[str, float] | None = None,
    shapes: Mapping[str, Sequence[int]] | None = None,
) -> tuple[float, ...]:
    """The launch's value of each key (a ValueError naming a key the launch does not give)."""
    dims = (tuple(grid) + (1, 1, 1))[:3], (tuple(block) + (1, 1, 1))[:3]
    out = []
    for key in keys:
        if key == "blocks":
            out.append(float(math.prod(dims[0])))
        elif key.startswith(("grid.", "block.")):
            which, axis = key.split(".")
            out.append(float(dims[which == "block"]["xyz".index(axis)]))
        elif key.startswith("param "):
            name = key[len("param ") :]
            if not params or name not in params:
                raise ValueError(f"the launch must give params[{name!r}]: the manifest dispatches on it")
            out.append(float(params[name]))
        elif key.startswith("shape "):
            name, _, axis = key[len("shape ") :].rstrip("]").partition("[")
            if not shapes or name not in shapes:
                raise ValueError(f"the launch must give shapes[{name!r}]: the manifest dispatches on it")
            out.append(float(shapes[name][int(axis)]))
        else:
            raise ValueError(f"unknown dispatch key {key!r}")
    return tuple(out)


def _in_range(value: float, bounds: Sequence[float | None]) -> bool:
    low, high = bounds
    return (low is None or value >= low) and (high is None or value <= high)


def _distance(a: Sequence[float], b: Sequence[float]) -> float:
    return sum((math.log(max(x, 1e-30)) - math.log(max(y, 1e-30))) ** 2 for x, y in zip(a, b))


def group_for(manifest: Mapping, values: Sequence[float]) -> Mapping:
    """The group serving a launch with these key values."""
    groups = manifest["groups"]
    if len(manifest["key"]) == 1 and all(g.get("range") is not None for g in groups):
        for group in groups:
            if _in_range(values[0], group["range"]):
                return group
    return min(
        groups, key=lambda g: min(_distance(values, s["key"]) for s in g["shapes"])
    )  # several keys, or a gap in the ranges: the nearest measured shape's group


def choose(manifest: str | Path | None = None, **launch) -> Path:
    """The cubin for a launch (grid=, block=, params=, shapes= as key_values takes them)."""
    path = Path(manifest or HERE / "manifest.json")
    doc = read_manifest(path)
    group = group_for(doc, key_values(doc["key"], **launch))
    return path.parent / group["cubin"]


def load(manifest: str | Path | None = None, **launch):
    """The kernel function of the chosen cubin, loaded with cupy."""
    import cupy

    path = Path(manifest or HERE / "manifest.json")
    kernel = read_manifest(path)["kernel"]
    return cupy.RawModule(path=str(choose(path, **launch))).get_function(kernel)


__all__ = ["choose", "group_for", "key_values", "load", "read_manifest"]
