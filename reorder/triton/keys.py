"""The autotune key as the dispatch: `rt.tune` over several key values.

Triton's autotuner picks a config per value of its `key` (the arguments named there). A
kernel serves many of them, and the best binary can depend on the value (an RMSNorm at 16
rows against 8192). `tune(kernel, key=["n_cols"], launches=[(args, grid), ...])` turns each
argument set into one launch shape of one multi-shape search per config (reorder.search.shapes:
every trial checked and timed at every shape, the weighted geometric mean as the objective),
and with `per_shape` keeps optimize's per-shape groups (reorder.report.pershape) when they are
a real gain. This module holds what is Triton's in that: the key values of an argument set,
their one-line refusals, and the manifest that maps key values to the stored binaries in the
form reorder/report/dispatch.py reads (key names `param NAME`), so `dispatch.choose(manifest,
params={"n_cols": 4096})` and the autotuner's pruning (TuneResult.dispatch) pick by one rule:

- one key: each group serves an inclusive range of it, split at the geometric midpoint
  between neighbouring measured values, the first range unbounded below and the last above
  (an unseen value goes to the group of the nearer measured value, in ratio);
- several keys, or groups that are not contiguous in key order: the group of the nearest
  measured value in log scale.

An unseen key whose arguments Triton specializes differently (an int equal to 1, or not
divisible by 16) compiles another cubin; its group's stored binary was made for another one,
so the stages hook keeps the compiler's cubin: the plain build (reorder.triton.rewrite).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reorder.base.errors import InputError
from reorder.base.files import write_atomic
from reorder.report.dispatch import group_for
from reorder.report.shapekey import split_ranges

FORMAT = "reorder-triton-dispatch/1"


@dataclass(frozen=True)
class KeyGroup:
    """Key values served by one binary of one config: its stored winner and its marked config."""

    values: tuple[tuple[float, ...], ...]  # the measured key values, in key order
    tuned: str  # the stored winner (tuned:KEY)
    marked: Any  # the config asking for it
    moves: str
    cubin: str  # the binary's file, beside the manifest
    ratios: tuple[str, ...] = ()  # per value: the ratio it measured there, or why none


def key_values(names: Sequence[str], values: Mapping[str, Any], where: str) -> tuple[float, ...]:
    """The numbers of the autotune key in one argument set; an InputError naming the
    argument set and the key when it is missing or not an int/float (a dispatch keys on
    numbers: a tensor's dtype is the same specialization question the cubin answers)."""
    out = []
    for name in names:
        if name not in values:
            raise InputError(f"{where}: key {name!r} is not a parameter of the kernel (have: {', '.join(values)})")
        value = values[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputError(
                f"{where}: key {name!r} is {type(value).__name__} {value!r}: rt.tune dispatches on int or float "
                "key arguments"
            )
        out.append(float(value))
    return tuple(out)


def check_keys(names: Sequence[str], rows: Sequence[tuple[float, ...]]) -> None:
    """Refuse (one line) an empty key and two argument sets with the same key values: the
    autotuner gives both one config, so no dispatch could tell them apart."""
    if not names:
        raise InputError("launches: give key=[...], the autotune key's argument names the dispatch keys on")
    seen: dict[tuple[float, ...], int] = {}
    for k, row in enumerate(rows):
        if row in seen:
            shown = ", ".join(f"{n}={v:g}" for n, v in zip(names, row))
            raise InputError(f"launches {seen[row] + 1} and {k + 1} have the same key values ({shown})")
        seen[row] = k


def label_of_key(names: Sequence[str], row: Sequence[float]) -> str:
    """A launch shape's label (its spec file's stem): the key values, e.g. `n_cols4096`."""
    return "-".join(f"{n}{v:g}" for n, v in zip(names, row)).replace(".", "p")


def manifest(kernel: str, names: Sequence[str], groups: Sequence[KeyGroup], note: str) -> dict:
    """The dispatch manifest over key values (reorder/report/dispatch.py's form, `param NAME`
    keys). One key and groups contiguous in its order: inclusive ranges; otherwise ranges
    are null and the nearest measured value's group serves."""
    order = sorted(groups, key=lambda g: min(g.values))
    ranges: list | None = None
    if len(names) == 1:
        flat = sorted((v[0], k) for k, g in enumerate(order) for v in g.values)
        runs = [k for k, (_, k2) in enumerate(flat) if k == 0 or flat[k - 1][1] != k2]
        if len(runs) == len(order):  # each group one run of consecutive values
            ranges = split_ranges([sorted(v[0] for v in g.values) for g in order])
    return {
        "format": FORMAT,
        "kernel": kernel,
        "key": [f"param {n}" for n in names],
        "gain": len({g.tuned for g in groups}) > 1,
        "note": note,
        "rule": "one key: the group whose range holds the value (ranges split at the geometric midpoint); "
        "otherwise the group of the nearest measured value in log scale",
        "groups": [
            {
                "range": ranges[k] if ranges else None,
                "cubin": g.cubin,
                "tuned": g.tuned,
                "moves": g.moves,
                "shapes": [{"key": list(v), "ratio": r} for v, r in zip(g.values, g.ratios or [""] * len(g.values))],
            }
            for k, g in enumerate(order)
        ],
    }


def write_manifest(folder: Path, doc: dict, blobs: Mapping[str, bytes]) -> Path:
    """keys.json and the group cubins in `folder` (each file whole or absent)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in blobs.items():
        write_atomic(folder / name, data)
    return write_atomic(folder / "keys.json", (json.dumps(doc, indent=1) + "\n").encode())


def group_of(doc: Mapping, values: Sequence[float]) -> Mapping:
    """The manifest group serving a launch with these key values (the module docstring's rule)."""
    return group_for(doc, values)


def read_values(doc: Mapping, named_args: Mapping[str, Any]) -> tuple[float, ...] | None:
    """A launch's key values as the manifest names them, or None when one is not a number
    (the launch then gets no reorder binary of this manifest: the plain build)."""
    out = []
    for key in doc["key"]:
        value = named_args.get(key.removeprefix("param "))
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        out.append(float(value))
    return tuple(out)


__all__ = ["KeyGroup", "check_keys", "group_of", "key_values", "label_of_key", "manifest", "read_values"]
