"""Batch-size sweeps over launch specs: what each `[grid_sweep]` key changes.

A spec's `[grid_sweep]` table maps a sweep key to the list of values to try; a
sweep point is a dict {key: value} (any subset of the keys). `apply_sweep`
returns a new spec dict in which the grid, the buffer shapes and the scalar
params all agree with the point, so inputs built from it (including hooks, which
read shapes from the spec) stay consistent. The rule for each (kernel, key) is
listed in RULES and documented in README.md; a key with no rule is an error
rather than a silent no-op.
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Callable, Mapping
from typing import Any

from reorder.base.errors import SpecError

Spec = dict[str, Any]
Rule = Callable[[Spec, int], None]  # mutates the (already copied) spec in place


def _param(spec: Spec, name: str) -> dict[str, Any]:
    """The [[param]] entry called `name`; SpecError if absent."""
    for param in spec["param"]:
        if param["name"] == name:
            return param
    raise SpecError(f"spec {spec['kernel']['name']!r} has no param {name!r}")


def _set_scalar(spec: Spec, name: str, value: int) -> None:
    _param(spec, name)["value"] = value


def _set_dim(spec: Spec, name: str, axis: int, value: int) -> None:
    shape = list(_param(spec, name)["shape"])
    shape[axis] = value
    _param(spec, name)["shape"] = shape


def _set_grid(spec: Spec, axis: int, value: int) -> None:
    grid = list(spec["kernel"]["grid"])
    grid[axis] = value
    spec["kernel"]["grid"] = grid


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _kselect_rows(spec: Spec, rows: int) -> None:
    """One warp per row, 4 warps per 128-thread CTA."""
    rows_per_cta = spec["kernel"]["block"][0] // 32
    _set_grid(spec, 0, _ceil_div(rows, rows_per_cta))
    for name in ("in", "out_val", "out_idx"):
        _set_dim(spec, name, 0, rows)
    _set_scalar(spec, "rows", rows)


def _kselect_n(spec: Spec, n: int) -> None:
    _set_dim(spec, "in", 1, n)
    _set_scalar(spec, "n", n)


def _particles(buffers: tuple[str, ...]) -> Rule:
    """N particles: every per-particle buffer is [N], grid.x = ceil(N / block.x)."""

    def rule(spec: Spec, n: int) -> None:
        _set_grid(spec, 0, _ceil_div(n, spec["kernel"]["block"][0]))
        for name in buffers:
            _set_dim(spec, name, 0, n)
        _set_scalar(spec, "N", n)

    return rule


def _cfo_groups(spec: Spec, groups: int) -> None:
    """UE groups: grid.y; leading dim of H and of every per-(group, layer) output."""
    _set_grid(spec, 1, groups)
    for name in ("H", "cfo_est", "ta_est", "cfo_rot", "ta_rot"):
        _set_dim(spec, name, 0, groups)


def _cfo_prbs(spec: Spec, prbs: int) -> None:
    """PRBs: 12 subcarriers each; the last dim of H and the n_sc scalar."""
    _set_dim(spec, "H", 4, 12 * prbs)
    _set_scalar(spec, "n_sc", 12 * prbs)


def _bag_count(spec: Spec, bags: int) -> None:
    """Bags: keeps the mean pooling factor, so indices grow with bags. Grid stays 1024 (PyTorch's)."""
    old_bags = _param(spec, "num_bags")["value"]
    pool = _param(spec, "num_indices")["value"] / old_bags
    num_indices = max(1, round(pool * bags))
    _set_dim(spec, "offsets", 0, bags)
    _set_dim(spec, "output", 0, bags)
    _set_dim(spec, "indices", 0, num_indices)
    _set_scalar(spec, "num_bags", bags)
    _set_scalar(spec, "num_indices", num_indices)


def _bag_dim(spec: Spec, dim: int) -> None:
    _set_dim(spec, "weight", 1, dim)
    _set_dim(spec, "output", 1, dim)
    _set_scalar(spec, "dim", dim)


def _norm_rows(spec: Spec, rows: int) -> None:
    """One CTA per row."""
    _set_grid(spec, 0, rows)
    for param in spec["param"]:
        if param["kind"] == "buffer" and len(param["shape"]) == 2:
            _set_dim(spec, param["name"], 0, rows)


def _spmv_rows(spec: Spec, rows: int) -> None:
    """Square matrix of `rows` rows, same mean nonzeros per row; one warp per row."""
    old_rows = _param(spec, "n_rows")["value"]
    per_row = _param(spec, "col_idx")["shape"][0] / old_rows
    nnz = max(1, round(per_row * rows))
    _set_grid(spec, 0, _ceil_div(rows, spec["kernel"]["block"][0] // 32))
    _set_dim(spec, "row_ptr", 0, rows + 1)
    _set_dim(spec, "col_idx", 0, nnz)
    _set_dim(spec, "vals", 0, nnz)
    _set_dim(spec, "x", 0, rows)
    _set_dim(spec, "y", 0, rows)
    _set_scalar(spec, "n_rows", rows)


def _hist_n(spec: Spec, n: int) -> None:
    """Gathered elements: perm and keys are [n]; the grid (and the partial table) stays."""
    _set_dim(spec, "perm", 0, n)
    _set_dim(spec, "keys", 0, n)
    _set_scalar(spec, "n", n)


_PF_NORMALIZE = _particles(("weights", "norm_weights", "CDF", "u"))
_PF_FIND = _particles(("arrayX", "arrayY", "CDF", "u", "xj", "yj", "weights"))

RULES: dict[str, dict[str, Rule]] = {
    "warp_select_k32": {"rows": _kselect_rows, "n": _kselect_n},
    "warp_select_k100": {"rows": _kselect_rows, "n": _kselect_n},
    "normalize_weights": {"N": _PF_NORMALIZE},
    "find_index": {"N": _PF_FIND},
    "cfo_ta_est": {"groups": _cfo_groups, "prbs": _cfo_prbs},
    "embedding_bag_sum": {"bags": _bag_count, "dim": _bag_dim},
    "embedding_bag_mean": {"bags": _bag_count, "dim": _bag_dim},
    "rms_norm_f32": {"rows": _norm_rows},
    "rmsnorm_triton_style": {"rows": _norm_rows},
    "spmv_csr_vector": {"rows": _spmv_rows},
    "gather_histogram": {"n": _hist_n},
}


def apply_sweep(spec_dict: Mapping[str, Any], point: Mapping[str, int]) -> Spec:
    """A copy of spec_dict resized to `point`; the input spec is left untouched.

    Keys are applied in sorted order so the result does not depend on dict order
    (rules that read an old value, like the pooling factor, read only scalars the
    other keys of the same kernel leave alone).
    """
    spec = copy.deepcopy(dict(spec_dict))
    kernel = spec["kernel"]["name"]
    rules = RULES.get(kernel)
    if rules is None:
        raise SpecError(f"no sweep rules for kernel {kernel!r}")
    for key in sorted(point):
        if key not in rules:
            raise SpecError(f"kernel {kernel!r} has no sweep key {key!r} (known: {sorted(rules)})")
        value = int(point[key])
        if value <= 0:
            raise SpecError(f"sweep value {key}={value} must be positive")
        rules[key](spec, value)
    return spec


def sweep_points(spec_dict: Mapping[str, Any]) -> list[dict[str, int]]:
    """The cartesian product of the spec's [grid_sweep] lists, in key order."""
    table = spec_dict.get("grid_sweep", {})
    keys = sorted(table)
    return [dict(zip(keys, values)) for values in itertools.product(*(table[k] for k in keys))]


def smallest_point(spec_dict: Mapping[str, Any]) -> dict[str, int]:
    """The point taking each sweep key's smallest value: the cheap config tests launch."""
    return {key: min(values) for key, values in spec_dict.get("grid_sweep", {}).items()}


def grid_threads(spec_dict: Mapping[str, Any]) -> int:
    """Total threads launched, a quick size measure for ordering sweep points."""
    return math.prod(spec_dict["kernel"]["grid"]) * math.prod(spec_dict["kernel"]["block"])


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise SpecError(f"cannot write {type(value).__name__} into a launch spec")


def spec_toml(spec: Mapping[str, Any]) -> str:
    """A spec dict (e.g. a sweep point from apply_sweep) as a launch-spec TOML file, so a
    point can be handed to `reorder optimize --launch` and `reorder time`."""
    lines = ["[kernel]"] + [f"{k} = {_toml_value(v)}" for k, v in spec["kernel"].items()]
    for key in ("type", "buffer", "param"):  # struct types and [[buffer]]s before the params that use them
        for table in spec.get(key, []):
            lines += ["", f"[[{key}]]"] + [f"{k} = {_toml_value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"
