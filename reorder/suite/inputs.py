"""Input generation for launch specs: the `init` distributions plus per-kernel hooks.

`make_inputs(spec, rng)` turns a spec dict (as tomllib parses it) into {param
name: ndarray | numpy scalar}: scalars from `value`, buffers from `init`, `out`
buffers poisoned with 0xFF bytes (NaN / -1) as timing.inputs does, then the
spec's `hook` (if any) supplies the buffers whose content needs structure a
distribution cannot give (valid bag offsets, a monotone CDF, CSR row pointers, a
phase-rotated channel). Hooks accept either a spec dict or a timing.spec
LaunchSpec, read every size from the spec's shapes (so they stay valid after
`sweep.apply_sweep` resizes a spec) and return exactly the declared dtypes.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from reorder.base.errors import SpecError

Spec = Mapping[str, Any]
Inputs = dict[str, Any]
Hook = Callable[[Spec, np.random.Generator], Inputs]


POISON_BYTE = 0xFF


def params_by_name(spec: Spec) -> dict[str, Mapping[str, Any]]:
    """The spec dict's [[param]] entries keyed by name."""
    return {p["name"]: p for p in spec["param"]}


def shape_of(spec: Any, name: str) -> tuple[int, ...]:
    """Shape of buffer param `name`, from a spec dict or a timing.spec.LaunchSpec."""
    if isinstance(spec, Mapping):
        return tuple(int(d) for d in params_by_name(spec)[name]["shape"])
    return tuple(int(d) for d in spec.param(name).shape)


def scalar_of(spec: Any, name: str) -> Any:
    """Value of scalar param `name`, from a spec dict or a timing.spec.LaunchSpec."""
    if isinstance(spec, Mapping):
        return params_by_name(spec)[name]["value"]
    return spec.param(name).value


def poisoned(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """All bytes 0xFF, so an element a kernel forgets to write cannot match a reference."""
    arr = np.empty(shape, dtype=dtype)
    arr.view(np.uint8).fill(POISON_BYTE)
    return arr


def init_buffer(param: Mapping[str, Any], rng: np.random.Generator) -> np.ndarray:
    """Draw one buffer from its `init` table (zeros when there is none)."""
    dtype = np.dtype(param["dtype"])
    shape = tuple(int(d) for d in param["shape"])
    if param.get("role") == "out":
        return poisoned(shape, dtype)
    init = param.get("init", {"dist": "const", "value": 0})
    dist = init["dist"]
    size = int(np.prod(shape))
    if dist == "const":
        return np.full(shape, init["value"], dtype=dtype)
    if dist == "uniform":
        return rng.uniform(init["low"], init["high"], size=shape).astype(dtype)
    if dist == "normal":
        return rng.normal(init["mean"], init["std"], size=shape).astype(dtype)
    if dist == "integers":
        return rng.integers(init["low"], init["high"], size=shape, dtype=np.int64, endpoint=False).astype(dtype)
    if dist == "arange":
        return np.arange(size, dtype=dtype).reshape(shape)
    if dist == "permutation":
        return rng.permutation(size).astype(dtype).reshape(shape)
    raise SpecError(f"param {param['name']!r}: unknown init dist {dist!r}")


def load_hook(ref: str) -> Hook:
    """Resolve a 'module.path:function' hook reference."""
    module_name, _, func_name = ref.partition(":")
    if not func_name:
        raise SpecError(f"hook {ref!r} is not of the form 'module:function'")
    return getattr(importlib.import_module(module_name), func_name)


def make_inputs(spec: Spec, rng: np.random.Generator | None = None) -> Inputs:
    """All kernel arguments for `spec`, in a dict keyed by param name.

    The generator defaults to one seeded with the spec's `seed`, so a spec alone
    determines its inputs.
    """
    if rng is None:
        rng = np.random.default_rng(spec["kernel"].get("seed", 0))
    values: Inputs = {}
    for param in spec["param"]:
        if param["kind"] == "scalar":
            values[param["name"]] = np.dtype(param["dtype"]).type(param["value"])
        else:
            values[param["name"]] = init_buffer(param, rng)
    hook_ref = spec["kernel"].get("hook")
    if hook_ref:
        for name, value in load_hook(hook_ref)(spec, rng).items():
            if name not in values:
                raise SpecError(f"hook {hook_ref!r} returned unknown param {name!r}")
            param = params_by_name(spec)[name]
            values[name] = np.asarray(value, dtype=param["dtype"]) if param["kind"] == "buffer" else value
    return values


def particle_weights(n: int, rng: np.random.Generator) -> np.ndarray:
    """Unnormalised particle weights (1/N) * exp(likelihood), likelihood spread like Rodinia's."""
    likelihood = rng.normal(0.0, 2.0, size=n)
    return (np.exp(likelihood - likelihood.max()) / n).astype(np.float32)


def normalize_weights_inputs(spec: Spec, rng: np.random.Generator) -> Inputs:
    """Weights, their sum (the output of Rodinia's sum_kernel) and an LCG seed."""
    weights = particle_weights(shape_of(spec, "weights")[0], rng)
    total = np.float32(weights.astype(np.float64).sum())
    return {
        "weights": weights,
        "partial_sums": np.array([total], np.float32),
        "seed": np.array([rng.integers(1, 2**31 - 1)], np.int32),
    }


def find_index_inputs(spec: Spec, rng: np.random.Generator) -> Inputs:
    """A monotone CDF, systematic resampling points u, particle positions near (64, 64)."""
    n = shape_of(spec, "CDF")[0]
    weights = particle_weights(n, rng).astype(np.float64)
    cdf = np.cumsum(weights / weights.sum()).astype(np.float32)
    u1 = rng.uniform(0.0, 1.0 / n)
    u = (u1 + np.arange(n) / n).astype(np.float32)
    return {
        "CDF": cdf,
        "u": u,
        "arrayX": (64.0 + rng.normal(0.0, 5.0, n)).astype(np.float32),
        "arrayY": (64.0 + rng.normal(0.0, 2.0, n)).astype(np.float32),
    }


def cfo_ta_channel(
    shape: tuple[int, ...], cfo_phase: np.ndarray, ta_phase: np.ndarray, rng: np.random.Generator, snr_db: float = 30.0
) -> np.ndarray:
    """H[g, a, l, t, s] = h(s) * e^{j cfo t} * e^{j ta s} + noise, h a 4-tap frequency-selective channel.

    shape is [groups, ants, layers, dmrs, sc, 2]: complex values as (re, im) float32
    pairs, the float2 layout the kernel reads. cfo_phase / ta_phase are [groups,
    layers] rotations per DMRS step and per subcarrier.
    """
    groups, ants, layers, n_dmrs, n_sc = shape[:5]
    shape = shape[:5]
    sc = np.arange(n_sc)
    taps = (rng.normal(size=(groups, ants, layers, 4)) + 1j * rng.normal(size=(groups, ants, layers, 4))) / np.sqrt(8)
    delays = rng.uniform(0.0, 0.01, size=4)  # tap delays in cycles per subcarrier
    h = np.einsum("galp,ps->gals", taps, np.exp(-2j * np.pi * np.outer(delays, sc)))
    t = np.arange(n_dmrs)
    rot_t = np.exp(1j * cfo_phase[:, None, :, None] * t[None, None, None, :])  # g,1,l,t
    rot_s = np.exp(1j * ta_phase[:, None, :, None] * sc[None, None, None, :])  # g,1,l,s
    clean = h[:, :, :, None, :] * rot_t[..., None] * rot_s[:, :, :, None, :]
    noise_std = 10.0 ** (-snr_db / 20.0) / np.sqrt(2.0)
    noise = noise_std * (rng.normal(size=shape) + 1j * rng.normal(size=shape))
    return complex_to_pairs(clean + noise)


def complex_to_pairs(values: np.ndarray) -> np.ndarray:
    """Complex array -> float32 array with a trailing (re, im) axis (float2 layout)."""
    return np.ascontiguousarray(np.stack([values.real, values.imag], axis=-1), dtype=np.float32)


def cfo_ta_inputs(spec: Spec, rng: np.random.Generator) -> Inputs:
    """Synthetic DMRS channel estimates with a CFO of up to +-600 Hz and a delay of up to +-1 us."""
    shape = shape_of(spec, "H")
    groups, layers = shape[0], shape[2]
    cfo_hz = rng.uniform(-600.0, 600.0, size=(groups, layers))
    delay_s = rng.uniform(-1e-6, 1e-6, size=(groups, layers))
    cfo_phase = cfo_hz / float(scalar_of(spec, "cfo_scale"))
    ta_phase = delay_s / float(scalar_of(spec, "ta_scale"))
    return {"H": cfo_ta_channel(shape, cfo_phase, ta_phase, rng)}


def skewed_ids(count: int, num_embeddings: int, rng: np.random.Generator) -> np.ndarray:
    """Recsys-like ids: a power-law over ranks, ranks scattered over the table."""
    ranks = np.floor(num_embeddings * rng.uniform(0.0, 1.0, count) ** 3).astype(np.int64)
    return (ranks * 2654435761) % num_embeddings


def embedding_bag_inputs(spec: Spec, rng: np.random.Generator) -> Inputs:
    """Bag offsets from multinomial bag sizes (mean = indices / bags) and skewed row ids."""
    num_indices = shape_of(spec, "indices")[0]
    bags = shape_of(spec, "offsets")[0]
    num_embeddings = shape_of(spec, "weight")[0]
    sizes = rng.multinomial(num_indices, np.full(bags, 1.0 / bags))
    offsets = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    return {"indices": skewed_ids(num_indices, num_embeddings, rng), "offsets": offsets}


def spmv_inputs(spec: Spec, rng: np.random.Generator) -> Inputs:
    """CSR structure: multinomial row lengths, uniformly random sorted columns per row."""
    rows = shape_of(spec, "row_ptr")[0] - 1
    nnz = shape_of(spec, "col_idx")[0]
    n_cols = shape_of(spec, "x")[0]
    lengths = rng.multinomial(nnz, np.full(rows, 1.0 / rows))
    row_ptr = np.concatenate(([0], np.cumsum(lengths))).astype(np.int32)
    row_of = np.repeat(np.arange(rows), lengths)
    cols = rng.integers(0, n_cols, size=nnz)
    order = np.lexsort((cols, row_of))
    return {"row_ptr": row_ptr, "col_idx": cols[order].astype(np.int32)}
