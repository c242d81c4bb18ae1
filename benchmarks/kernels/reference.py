"""NumPy references for every suite kernel.

Each reference is a pure function of the input dict that `inputs.make_inputs`
builds (buffers and scalars by param name; output buffers are present too and
only their shapes are read) and returns {output param name: expected ndarray}.
They define what the CUDA kernels must compute, so a reordered cubin can be
checked against them (see verify.py), and are written for clarity, not speed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

Inputs = Mapping[str, Any]
Outputs = dict[str, np.ndarray]

LCG_MULT = 1103515245
LCG_INC = 12345


def warp_select(inputs: Inputs) -> Outputs:
    """k smallest of each row, ascending, with their column indices (stable on ties)."""
    x = np.asarray(inputs["in"])
    k = int(inputs["k"])
    order = np.argsort(x, axis=1, kind="stable")[:, :k]
    return {"out_val": np.take_along_axis(x, order, axis=1).astype(np.float32), "out_idx": order.astype(np.int32)}


def lcg_next(state: int) -> int:
    """Rodinia's d_randu LCG step in 32-bit unsigned arithmetic, kept to 31 bits."""
    return (LCG_MULT * (state & 0xFFFFFFFF) + LCG_INC) & 0x7FFFFFFF


def normalize_weights(inputs: Inputs) -> Outputs:
    """w / sum, the serial float32 CDF of it, and u[i] = u1 + i/N with u1 from the LCG."""
    weights = np.asarray(inputs["weights"], np.float32)
    n = int(inputs["N"])
    total = np.float32(inputs["partial_sums"][0])
    norm = (weights[:n] / total).astype(np.float32)
    cdf = np.cumsum(norm, dtype=np.float32)  # add.accumulate: sequential, like the kernel
    n32 = np.float32(n)
    u1 = np.float32(np.float32(lcg_next(int(inputs["seed"][0]))) / np.float32(2147483647.0)) / n32
    u = (np.float32(u1) + np.arange(n, dtype=np.float32) / n32).astype(np.float32)
    return {"norm_weights": norm, "CDF": cdf, "u": u}


def find_index(inputs: Inputs) -> Outputs:
    """First CDF entry >= u[i] (N-1 if none), then gather the particle position."""
    n = int(inputs["N"])
    cdf = np.asarray(inputs["CDF"], np.float32)[:n]
    u = np.asarray(inputs["u"], np.float32)[:n]
    # The first x with CDF[x] >= u is the first x where the running max reaches u,
    # which holds for any CDF, monotone or not, just like the kernel's linear scan.
    index = np.minimum(np.searchsorted(np.maximum.accumulate(cdf), u, side="left"), n - 1)
    return {
        "xj": np.asarray(inputs["arrayX"], np.float32)[index],
        "yj": np.asarray(inputs["arrayY"], np.float32)[index],
        "weights": np.full(n, np.float32(1.0) / np.float32(n), np.float32),
    }


def cfo_ta_est(inputs: Inputs) -> Outputs:
    """Summed DMRS-to-DMRS and subcarrier-to-subcarrier rotations per (group, layer), and their angles."""
    pairs = np.asarray(inputs["H"], np.float64)  # [group, ant, layer, dmrs, sc, (re, im)]
    h = pairs[..., 0] + 1j * pairs[..., 1]
    n_sc = int(inputs["n_sc"])
    n_dmrs = int(inputs["n_dmrs"])
    h = h[..., :n_dmrs, :n_sc]
    cfo_rot = (np.conj(h[..., :-1, :]) * h[..., 1:, :]).sum(axis=(1, 3, 4))
    ta_rot = (np.conj(h[..., :-1]) * h[..., 1:]).sum(axis=(1, 3, 4))
    return {
        "cfo_rot": _pairs(cfo_rot),
        "ta_rot": _pairs(ta_rot),
        "cfo_est": (np.angle(cfo_rot) * float(inputs["cfo_scale"])).astype(np.float32),
        "ta_est": (np.angle(ta_rot) * float(inputs["ta_scale"])).astype(np.float32),
    }


def _pairs(values: np.ndarray) -> np.ndarray:
    """Complex -> float32 with a trailing (re, im) axis, the float2 layout of the outputs."""
    return np.stack([values.real, values.imag], axis=-1).astype(np.float32)


def _bag_reduce(inputs: Inputs, mean: bool) -> Outputs:
    indices = np.asarray(inputs["indices"], np.int64)
    offsets = np.asarray(inputs["offsets"], np.int64)
    weight = np.asarray(inputs["weight"], np.float32)
    num_bags, dim = int(inputs["num_bags"]), int(inputs["dim"])
    num_indices, padding = int(inputs["num_indices"]), int(inputs["padding_idx"])
    out = np.zeros((num_bags, dim), np.float64)
    ends = np.append(offsets[1:num_bags], num_indices)
    for bag in range(num_bags):
        rows = indices[offsets[bag] : ends[bag]]
        rows = rows[rows != padding]
        if rows.size:
            out[bag] = weight[rows, :dim].astype(np.float64).sum(axis=0)
            if mean:
                out[bag] /= rows.size
    return {"output": out.astype(np.float32)}


def embedding_bag_sum(inputs: Inputs) -> Outputs:
    """Per bag, the sum of its weight rows (padding rows skipped)."""
    return _bag_reduce(inputs, mean=False)


def embedding_bag_mean(inputs: Inputs) -> Outputs:
    """Per bag, the mean of its non-padding weight rows; an empty bag gives zeros."""
    return _bag_reduce(inputs, mean=True)


def _rms_norm(x: np.ndarray, w: np.ndarray, n_cols: int, eps: float) -> np.ndarray:
    x64 = np.asarray(x, np.float64)[:, :n_cols]
    scale = 1.0 / np.sqrt((x64 * x64).mean(axis=1, keepdims=True) + eps)
    return (x64 * scale * np.asarray(w, np.float64)[:n_cols]).astype(np.float32)


def rms_norm_f32(inputs: Inputs) -> Outputs:
    """x * rsqrt(mean(x^2) + eps) * w per row."""
    return {"dst": _rms_norm(inputs["x"], inputs["w"], int(inputs["ncols"]), float(inputs["eps"]))}


def rmsnorm_triton_style(inputs: Inputs) -> Outputs:
    """Same maths as rms_norm_f32; only the kernel's shape differs."""
    return {"out": _rms_norm(inputs["x"], inputs["w"], int(inputs["n_cols"]), float(inputs["eps"]))}


def spmv_csr_vector(inputs: Inputs) -> Outputs:
    """y = A x for A in CSR form."""
    row_ptr = np.asarray(inputs["row_ptr"], np.int64)
    n_rows = int(inputs["n_rows"])
    cols = np.asarray(inputs["col_idx"], np.int64)[: row_ptr[n_rows]]
    vals = np.asarray(inputs["vals"], np.float64)[: row_ptr[n_rows]]
    row_of = np.repeat(np.arange(n_rows), np.diff(row_ptr[: n_rows + 1]))
    products = vals * np.asarray(inputs["x"], np.float64)[cols]
    return {"y": np.bincount(row_of, weights=products, minlength=n_rows).astype(np.float32)}


def mix_key(keys: np.ndarray) -> np.ndarray:
    """The kernel's 32-bit key hash (xor-shift, multiply, xor-shift)."""
    k = np.asarray(keys, np.uint64) & 0xFFFFFFFF
    k ^= k >> np.uint64(16)
    k = (k * np.uint64(0x45D9F3B)) & np.uint64(0xFFFFFFFF)
    k ^= k >> np.uint64(16)
    return k


def gather_histogram(inputs: Inputs) -> Outputs:
    """Per-CTA histograms of hash(keys[perm[i]]); CTA b owns tile [b*t, (b+1)*t), t = ceil(n / grid)."""
    n, n_bins = int(inputs["n"]), int(inputs["n_bins"])
    grid = np.asarray(inputs["partial"]).shape[0]
    keys = np.asarray(inputs["keys"])[np.asarray(inputs["perm"], np.int64)[:n]]
    bins = (mix_key(keys) & np.uint64(n_bins - 1)).astype(np.int64)
    tile = -(-n // grid)
    cta = np.arange(n) // tile
    counts = np.bincount(cta * n_bins + bins, minlength=grid * n_bins)
    return {"partial": counts.reshape(grid, n_bins).astype(np.uint32)}


REFERENCES: dict[str, Callable[[Inputs], Outputs]] = {
    "warp_select_k32": warp_select,
    "warp_select_k100": warp_select,
    "normalize_weights": normalize_weights,
    "find_index": find_index,
    "cfo_ta_est": cfo_ta_est,
    "embedding_bag_sum": embedding_bag_sum,
    "embedding_bag_mean": embedding_bag_mean,
    "rms_norm_f32": rms_norm_f32,
    "rmsnorm_triton_style": rmsnorm_triton_style,
    "spmv_csr_vector": spmv_csr_vector,
    "gather_histogram": gather_histogram,
}
