"""GPU tier for the benchmark kernel suite: launch each checked-in cubin and compare with NumPy.

Every kernel runs at its spec's smallest sweep point and at the spec's own
(realistic) size, with inputs from reorder.suite.inputs and outputs checked
by benchmarks.kernels.verify. Skips cleanly without cupy or a device.
"""

from __future__ import annotations

import numpy as np
import pytest
import tomllib

pytestmark = pytest.mark.gpu

import cupy  # noqa: E402  (tests/conftest.py collects this file only where a GPU is present)

from benchmarks.kernels import build  # noqa: E402
from benchmarks.kernels.verify import verify  # noqa: E402
from reorder.suite import sweep  # noqa: E402
from reorder.suite.inputs import make_inputs  # noqa: E402

SPEC_PATHS = sorted(build.SPEC_DIR.glob("*.toml"))


def launch(spec: dict, inputs: dict) -> dict[str, np.ndarray]:
    """Run the spec's kernel from its checked-in cubin; returns the out/inout buffers on the host."""
    name = spec["kernel"]["name"]
    func = cupy.RawModule(path=str(build.checked_in_cubin(name))).get_function(name)
    args, device = [], {}
    for param in spec["param"]:
        value = inputs[param["name"]]
        if param["kind"] == "buffer":
            device[param["name"]] = cupy.asarray(value)
            args.append(device[param["name"]])
        else:
            args.append(value)  # numpy scalar of the exact dtype: passed by value with its width
    func(
        tuple(spec["kernel"]["grid"]), tuple(spec["kernel"]["block"]), tuple(args), shared_mem=spec["kernel"]["shared"]
    )
    cupy.cuda.runtime.deviceSynchronize()
    return {
        p["name"]: cupy.asnumpy(device[p["name"]]) for p in spec["param"] if p["kind"] == "buffer" and p["role"] != "in"
    }


@pytest.mark.parametrize("size", ["small", "default"])
@pytest.mark.parametrize("path", SPEC_PATHS, ids=lambda p: p.stem)
def test_kernel_matches_reference(path, size):
    raw = tomllib.loads(path.read_text(encoding="utf-8"))
    spec = sweep.apply_sweep(raw, sweep.smallest_point(raw)) if size == "small" else raw
    inputs = make_inputs(spec)
    outputs = launch(spec, inputs)
    assert verify(spec["kernel"]["name"], inputs, outputs) == []


@pytest.mark.parametrize("kernel", ["warp_select_k32", "warp_select_k100"])
def test_kselect_adversarial_descending_rows(kernel):
    """Descending rows make every element beat the current k-th: the most merges, FAISS's worst case."""
    raw = tomllib.loads((build.SPEC_DIR / f"{kernel}.toml").read_text(encoding="utf-8"))
    spec = sweep.apply_sweep(raw, {"rows": 16, "n": 4096 + 17})  # odd length exercises the tail
    inputs = make_inputs(spec)
    inputs["in"] = np.ascontiguousarray(np.sort(inputs["in"], axis=1)[:, ::-1])
    assert verify(kernel, inputs, launch(spec, inputs)) == []
