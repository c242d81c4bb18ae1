"""The launch specs of the struct kernels, as data: `python -m benchmarks.kernels.structs.specs`
writes specs/<name>.toml (checked in; tests/test_struct_kernels.py checks they are current).

Sizes match the flat suite kernels they stand beside (benchmarks/kernels/specs): k-select
over 512 rows of 32768 floats, CFO/TA over 8 UE groups x 4 antennas x 4 layers x 4 DMRS
symbols x 3264 subcarriers, and a last-block sum over 8M floats.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from timing.spec import parse_spec
from timing.spectoml import spec_toml

SPEC_DIR = Path(__file__).resolve().parent / "specs"
FLT_MAX = 3.4028234663852886e38

TENSOR2 = {
    "name": "Tensor2",
    "fields": [  # faiss::gpu::Tensor<T, 2, true>: pointer, strides, sizes (int64)
        {"name": "data_", "type": "ptr"},
        {"name": "stride_", "type": "int64", "count": 2},
        {"name": "size_", "type": "int64", "count": 2},
    ],
}


def _tensor(buffer: str, rows: int, cols: int) -> dict[str, Any]:
    return {"data_": buffer, "stride_": [cols, 1], "size_": [rows, cols]}


def warp_select(k: int, queue: tuple[int, int], rows: int = 512, n: int = 32768) -> dict[str, Any]:
    """FAISS's warpSelect<float, long, false, WarpQ, ThreadQ, 128> on Tensor structs."""
    name = f"warpSelect<float, long, false, {queue[0]}, {queue[1]}, 128>"
    return {
        "kernel": {"name": name, "grid": [-(-rows // 4), 1, 1], "block": [128, 1, 1], "shared": 0, "seed": 1234},
        "type": [TENSOR2],
        "buffer": [
            {
                "name": "dist",
                "dtype": "float32",
                "shape": [rows, n],
                "role": "in",
                "init": {"dist": "uniform", "low": 0.0, "high": 1.0},
            },
            {"name": "out_k", "dtype": "float32", "shape": [rows, k], "role": "out"},
            {"name": "out_v", "dtype": "int64", "shape": [rows, k], "role": "out"},
        ],
        "param": [
            {"name": "in", "kind": "struct", "type": "Tensor2", "value": _tensor("dist", rows, n)},
            {"name": "outK", "kind": "struct", "type": "Tensor2", "value": _tensor("out_k", rows, k)},
            {"name": "outV", "kind": "struct", "type": "Tensor2", "value": _tensor("out_v", rows, k)},
            {"name": "initK", "kind": "scalar", "dtype": "float32", "value": FLT_MAX},
            {"name": "initV", "kind": "scalar", "dtype": "int64", "value": -1},
            {"name": "k", "kind": "scalar", "dtype": "int32", "value": k},
        ],
    }


def _descr(n: int) -> dict[str, Any]:
    return {
        "name": f"TensorDescr{n}",
        "fields": [
            {"name": "addr", "type": "ptr"},
            {"name": "type", "type": "int32"},
            {"name": "strides", "type": "int32", "count": n},
        ],
    }


def cfo_ta_descr(
    groups: int = 8,
    ants: int = 4,
    layers: int = 4,
    dmrs: int = 4,
    n_sc: int = 3264,
    cfo_scale: float = 1486.84,
    ta_scale: float = -5.305165e-6,
) -> dict[str, Any]:
    """cuPHY-style: one 24-byte __grid_constant__ descriptor pointing at per-group parameter
    structs (tensor descriptors inside) and at an array of output pointers."""
    group_h = ants * layers * dmrs * n_sc * 2  # float32 elements of one group's H
    prms = [
        {
            "tInfoHEst": {
                "addr": {"buffer": "H", "index": g * group_h},
                "type": 0,
                "strides": [layers * dmrs * n_sc, dmrs * n_sc, n_sc, 1],
            },
            "tInfoCfoRot": {"addr": {"buffer": "cfo_rot", "index": g * layers * 2}, "type": 0, "strides": [1]},
            "tInfoTaRot": {"addr": {"buffer": "ta_rot", "index": g * layers * 2}, "type": 0, "strides": [1]},
            "nRxAnt": ants,
            "nLayers": layers,
            "nDmrsSyms": dmrs,
            "nSc": n_sc,
            "cfoScale": cfo_scale,
            "taScale": ta_scale,
        }
        for g in range(groups)
    ]
    est = [
        p
        for g in range(groups)
        for p in ({"buffer": "cfo_est", "index": g * layers}, {"buffer": "ta_est", "index": g * layers})
    ]
    return {
        "kernel": {
            "name": "cfoTaEstDescrKernel",
            "grid": [layers, groups, 1],
            "block": [256, 1, 1],
            "shared": 0,
            "seed": 1234,
            "hook": "reorder.suite.structs.inputs:cfo_ta_descr_inputs",
        },
        "type": [
            _descr(4),
            _descr(1),
            {
                "name": "CfoTaEstUeGrpPrms",
                "fields": [
                    {"name": "tInfoHEst", "type": "TensorDescr4"},
                    {"name": "tInfoCfoRot", "type": "TensorDescr1"},
                    {"name": "tInfoTaRot", "type": "TensorDescr1"},
                    {"name": "nRxAnt", "type": "uint16"},
                    {"name": "nLayers", "type": "uint8"},
                    {"name": "nDmrsSyms", "type": "uint8"},
                    {"name": "nSc", "type": "uint16"},
                    {"name": "cfoScale", "type": "float32"},
                    {"name": "taScale", "type": "float32"},
                ],
            },
            {
                "name": "CfoTaEstDynDescr",
                "fields": [
                    {"name": "pUeGrpPrms", "type": "ptr"},
                    {"name": "nUeGrps", "type": "uint16"},
                    {"name": "ppEst", "type": "ptr"},
                ],
            },
        ],
        "buffer": [
            {"name": "H", "dtype": "float32", "shape": [groups, ants, layers, dmrs, n_sc, 2], "role": "in"},
            {"name": "cfo_est", "dtype": "float32", "shape": [groups, layers], "role": "out"},
            {"name": "ta_est", "dtype": "float32", "shape": [groups, layers], "role": "out"},
            {"name": "cfo_rot", "dtype": "float32", "shape": [groups, layers, 2], "role": "out"},
            {"name": "ta_rot", "dtype": "float32", "shape": [groups, layers, 2], "role": "out"},
            {"name": "ue_grp_prms", "type": "CfoTaEstUeGrpPrms", "values": prms},
            {"name": "est_ptrs", "type": "ptr", "values": est},
        ],
        "param": [
            {
                "name": "dynDescr",
                "kind": "struct",
                "type": "CfoTaEstDynDescr",
                "value": {"pUeGrpPrms": "ue_grp_prms", "nUeGrps": groups, "ppEst": "est_ptrs"},
            }
        ],
    }


def last_block_sum(n: int = 8 * 2**20, blocks: int = 1024) -> dict[str, Any]:
    """reduce::lastBlockSum<256>(SumArgs): the ticket is a `zeros` buffer."""
    return {
        "kernel": {
            "name": "lastBlockSum<256>",
            "grid": [blocks, 1, 1],
            "block": [256, 1, 1],
            "shared": 0,
            "seed": 1234,
        },
        "type": [
            {
                "name": "SumArgs",
                "fields": [
                    {"name": "in", "type": "ptr"},
                    {"name": "partial", "type": "ptr"},
                    {"name": "ticket", "type": "ptr"},
                    {"name": "result", "type": "ptr"},
                    {"name": "n", "type": "int64"},
                ],
            }
        ],
        "buffer": [
            {
                "name": "x",
                "dtype": "float32",
                "shape": [n],
                "role": "in",
                "init": {"dist": "normal", "mean": 0.0, "std": 1.0},
            },
            {"name": "partial", "dtype": "float32", "shape": [blocks], "role": "out"},
            {"name": "ticket", "dtype": "uint32", "shape": [1], "role": "zeros"},
            {"name": "result", "dtype": "float32", "shape": [1], "role": "out"},
        ],
        "param": [
            {
                "name": "args",
                "kind": "struct",
                "type": "SumArgs",
                "value": {"in": "x", "partial": "partial", "ticket": "ticket", "result": "result", "n": n},
            }
        ],
    }


SPECS: dict[str, tuple[str, dict[str, Any], str]] = {
    # spec name -> (source, raw spec, what it stands beside)
    "warp_select_tensor_k32": ("kselect_tensor.cu", warp_select(32, (32, 2)), "warp_select_k32"),
    "warp_select_tensor_k100": ("kselect_tensor.cu", warp_select(100, (128, 4)), "warp_select_k100"),
    "cfo_ta_descr": ("cfo_ta_descr.cu", cfo_ta_descr(), "cfo_ta_est"),
    "last_block_sum_zeros": ("last_block.cu", last_block_sum(), ""),
}


def spec_text(name: str) -> str:
    """The checked-in file's text for one spec."""
    source, raw, flat = SPECS[name]
    header = f"Launch spec of {raw['kernel']['name']} ({source}), written by benchmarks.kernels.structs.specs" + (
        f"; the flat version is {flat}" if flat else ""
    )
    return spec_toml(parse_spec(raw, source=name), header=header)


def main() -> int:
    SPEC_DIR.mkdir(exist_ok=True)
    for name in SPECS:
        (SPEC_DIR / f"{name}.toml").write_text(spec_text(name))
        print(SPEC_DIR / f"{name}.toml")
    return 0


if __name__ == "__main__":
    sys.exit(main())
