"""GPU tier of the struct kernels: checked and timed through their specs, their
outputs compared with NumPy, the zeros ticket cleared per launch, and a Spec built in code
from cupy arrays and numpy structs launching the FAISS-style kernel."""

from __future__ import annotations

import shutil
from pathlib import Path

import cupy  # tests/conftest.py collects this file only where a GPU is present
import numpy as np
import pytest

from timing import gpu
from timing.check import check_pair, run_once
from timing.cli_support import checked_spec, validated_spec
from timing.inputs import draw_inputs
from timing.launch import Spec
from timing.paired import time_pair

pytestmark = pytest.mark.gpu

HERE = Path(__file__).resolve().parent.parent.parent / "benchmarks" / "kernels" / "structs"
CASES = {
    "warp_select_tensor_k32": "kselect_tensor",
    "warp_select_tensor_k100": "kselect_tensor",
    "cfo_ta_descr": "cfo_ta_descr",
    "last_block_sum_zeros": "last_block",
}


def _case(name: str, tmp_path: Path):
    cubin = HERE / "cubin" / f"{CASES[name]}.cubin"
    copy = tmp_path / "copy.cubin"
    shutil.copyfile(cubin, copy)
    return cubin, copy, validated_spec(HERE / "specs" / f"{name}.toml", [cubin])


def _outputs(name: str, tmp_path: Path) -> tuple[dict, dict]:
    cubin, _, spec = _case(name, tmp_path)
    host = draw_inputs(spec, 0)
    return host, run_once(gpu.load_kernel(cubin, spec), spec, host)


@pytest.mark.parametrize("name", sorted(CASES))
def test_check_and_time_each_struct_kernel(name, tmp_path):
    cubin, copy, spec = _case(name, tmp_path)
    result = check_pair(cubin, copy, spec, sets=2)
    assert result.ok and result.shared_poisoned, result.describe()
    timed = time_pair(cubin, copy, spec, budget_s=1.0)
    assert timed.a_us > 0 and timed.ratio.low <= 1.0 + 0.05 and timed.ratio.high >= 1.0 - 0.05


def test_warp_select_on_tensor_structs_selects_the_k_smallest(tmp_path):
    host, out = _outputs("warp_select_tensor_k32", tmp_path)
    want = np.sort(host["dist"], axis=1)[:, :32]
    assert np.array_equal(out["out_k"], want)
    rows = np.arange(want.shape[0])[:, None]
    assert np.array_equal(host["dist"][rows, out["out_v"]], want)  # int64 indices point at them


def test_cfo_ta_through_descriptors_matches_numpy(tmp_path):
    host, out = _outputs("cfo_ta_descr", tmp_path)
    h = host["H"][..., 0].astype(np.float64) + 1j * host["H"][..., 1]  # [g, ant, layer, t, sc]
    cfo = (np.conj(h[:, :, :, :-1, :]) * h[:, :, :, 1:, :]).sum(axis=(1, 3, 4))
    got = out["cfo_rot"][..., 0] + 1j * out["cfo_rot"][..., 1]
    assert np.allclose(got, cfo, rtol=1e-3, atol=1e-2 * np.abs(cfo).max())
    assert np.allclose(out["cfo_est"], np.angle(cfo) * 1486.84, rtol=1e-3, atol=1e-2)
    assert np.isfinite(out["ta_est"]).all()
    assert len(out["ue_grp_prms"]) == 8 * 80  # the descriptors come back, pointers symbolic


def test_zeros_ticket_is_cleared_before_every_launch(tmp_path):
    host, out = _outputs("last_block_sum_zeros", tmp_path)
    assert out["ticket"][0] == 1024  # every block took a ticket from zero
    assert np.isclose(out["result"][0], host["x"].astype(np.float64).sum(), rtol=1e-4, atol=1e-1)


def test_a_spec_built_from_cupy_arrays_and_numpy_structs(tmp_path):
    tensor = np.dtype([("data", np.uint64), ("stride", np.int64, 2), ("size", np.int64, 2)], align=True)

    def t(a):
        return np.array((a.data.ptr, (a.shape[1], 1), a.shape), dtype=tensor)[()]

    dist = cupy.random.random((64, 2048), dtype=cupy.float32)
    out_k, out_v = cupy.zeros((64, 32), cupy.float32), cupy.zeros((64, 32), cupy.int64)
    spec = Spec.build(
        "warpSelect<float, long, false, 32, 2, 128>",
        16,
        128,
        {
            "in": t(dist),
            "outK": t(out_k),
            "outV": t(out_v),
            "initK": np.float32(np.finfo(np.float32).max),
            "initV": np.int64(-1),
            "k": np.int32(32),
        },
        buffers={"dist": dist, "out_k": out_k, "out_v": out_v},
        outputs=["out_k", "out_v"],
    )
    cubin = HERE / "cubin" / "kselect_tensor.cubin"
    spec = checked_spec(spec, [cubin])
    copy = tmp_path / "copy.cubin"
    shutil.copyfile(cubin, copy)
    assert check_pair(cubin, copy, spec, sets=2).ok
