"""Compare kernel outputs with the NumPy references, per kernel and output.

Floating-point kernels sum in a different order than the references, so most
outputs get an allclose tolerance; integer outputs must match exactly. k-select
indices are checked by gathering (ties may legally pick another column), so
a reordered cubin that still selects correct elements passes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from benchmarks.kernels.reference import REFERENCES

# (rtol, atol) per kernel and output; outputs not listed use DEFAULT_TOL.
DEFAULT_TOL = (1e-4, 1e-5)
TOLERANCES: dict[str, dict[str, tuple[float, float]]] = {
    "normalize_weights": {"CDF": (1e-5, 1e-6)},
    "cfo_ta_est": {"cfo_rot": (1e-3, 1e-2), "ta_rot": (1e-3, 1e-2), "cfo_est": (1e-3, 0.5), "ta_est": (1e-3, 1e-9)},
    "embedding_bag_sum": {"output": (1e-4, 1e-4)},
    "embedding_bag_mean": {"output": (1e-4, 1e-5)},
    "spmv_csr_vector": {"y": (1e-4, 1e-4)},
}


def _compare(name: str, got: np.ndarray, want: np.ndarray, tol: tuple[float, float]) -> list[str]:
    got = np.asarray(got).reshape(want.shape)
    if want.dtype.kind in "iu":
        bad = int(np.count_nonzero(got != want))
        return [f"{name}: {bad} of {want.size} integers differ"] if bad else []
    ok = np.isclose(got, want, rtol=tol[0], atol=tol[1])
    if ok.all():
        return []
    worst = int(np.argmax(np.abs(got - want).ravel()))
    return [
        f"{name}: {int((~ok).sum())} of {want.size} outside rtol={tol[0]} atol={tol[1]}; "
        f"worst at {worst}: got {got.ravel()[worst]!r}, want {want.ravel()[worst]!r}"
    ]


def _check_kselect(
    inputs: Mapping[str, Any], outputs: Mapping[str, np.ndarray], want: Mapping[str, np.ndarray]
) -> list[str]:
    errors = _compare("out_val", outputs["out_val"], want["out_val"], (0.0, 0.0))
    x = np.asarray(inputs["in"])
    idx = np.asarray(outputs["out_idx"]).reshape(want["out_idx"].shape).astype(np.int64)
    if idx.min() < 0 or idx.max() >= x.shape[1]:
        return errors + ["out_idx: index out of range"]
    gathered = np.take_along_axis(x, idx, axis=1)
    if not np.array_equal(gathered, np.asarray(outputs["out_val"]).reshape(gathered.shape)):
        errors.append("out_idx: in[row, out_idx] != out_val")
    if any(len(set(row)) != len(row) for row in idx.tolist()):
        errors.append("out_idx: repeated index within a row")
    return errors


def verify(kernel: str, inputs: Mapping[str, Any], outputs: Mapping[str, np.ndarray]) -> list[str]:
    """Mismatches between a kernel's outputs and its reference; an empty list means it passed."""
    want = REFERENCES[kernel](inputs)
    if kernel.startswith("warp_select"):
        return _check_kselect(inputs, outputs, want)
    tols = TOLERANCES.get(kernel, {})
    errors: list[str] = []
    for name, expected in want.items():
        errors += _compare(name, outputs[name], expected, tols.get(name, DEFAULT_TOL))
    return errors
