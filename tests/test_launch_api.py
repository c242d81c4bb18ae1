"""timing.launch.Spec: a launch spec built in code from device arrays and numpy structs,
with fake device arrays standing in for cupy's (the same __cuda_array_interface__)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tomllib

from reorder.base.errors import SpecError
from tests import fake_device
from timing.cli_support import checked_spec
from timing.launch import Spec
from timing.layout import Pointer
from timing.params import StructBuffer
from timing.spec import LaunchSpec, StructParam, parse_spec

CUBINS = Path(__file__).resolve().parent.parent / "benchmarks" / "kernels" / "structs" / "cubin"
TENSOR = np.dtype([("data", np.uint64), ("stride", np.int64, 2), ("size", np.int64, 2)], align=True)


def tensor(a: fake_device.FakeArray) -> np.void:
    rows, cols = a.host.shape
    return np.array((a.data.ptr, (cols, 1), (rows, cols)), dtype=TENSOR)[()]


def warp_select_spec(rows: int = 64, n: int = 1024, k: int = 32) -> Spec:
    dist = fake_device.array(np.random.default_rng(0).random((rows, n), dtype=np.float32))
    out_k = fake_device.array(np.zeros((rows, k), np.float32))
    out_v = fake_device.array(np.zeros((rows, k), np.int64))
    return Spec.build(
        "warpSelect<float, long, false, 32, 2, 128>",
        rows // 4,
        128,
        {
            "in": tensor(dist),
            "outK": tensor(out_k),
            "outV": tensor(out_v),
            "initK": np.float32(np.finfo(np.float32).max),
            "initV": np.int64(-1),
            "k": np.int32(k),
        },
        buffers={"dist": dist, "out_k": out_k, "out_v": out_v},
        outputs=["out_k", "out_v"],
    )


def test_a_faiss_call_becomes_a_spec_the_cubin_accepts():
    spec = warp_select_spec()
    assert isinstance(spec, LaunchSpec) and spec.grid == (16, 1, 1)
    checked = checked_spec(spec, [CUBINS / "kselect_tensor.cubin"])
    assert checked.name.startswith("_ZN5faiss3gpu10warpSelect") and isinstance(checked, Spec)
    in_ = spec.param("in")
    assert isinstance(in_, StructParam) and dict(in_.value) == {
        "data": Pointer("dist"),
        "stride": (1024, 1),
        "size": (64, 1024),
    }
    assert [f.type for f in spec.type_map[in_.type].fields] == ["ptr", "int64", "int64"]
    assert spec.param("dist").role == "inout" and spec.param("out_v").role == "out"
    again = parse_spec(tomllib.loads(spec.toml()), source=spec.source)  # the CLI's form
    assert again.params == spec.params and again.extra == spec.extra and again.types == spec.types


def test_descriptors_in_device_memory_and_pointers_inside_arrays():
    h = fake_device.array(np.zeros((2, 8), np.float32))
    out = fake_device.array(np.zeros(4, np.float32))
    counter = fake_device.array(np.zeros(1, np.uint32))
    prm = np.dtype([("h", np.uint64), ("n", np.uint16), ("scale", np.float32)], align=True)
    host = np.array([(h.data.ptr, 8, 0.5), (h.data.ptr + 8 * 4, 8, 0.25)], dtype=prm)
    prms = fake_device.array(host.view(np.uint8))
    dyn = np.dtype([("prms", np.uint64), ("count", np.uint16), ("out", np.uint64), ("ticket", np.uint64)], align=True)
    spec = Spec.build(
        "cfoTaEstDescrKernel",
        (1, 2),
        256,
        {"d": np.array((prms.data.ptr, 2, out.data.ptr + 8, counter.data.ptr), dtype=dyn)[()]},
        buffers={"h": h, "out": out, "ticket": counter, "prms": prms},
        structs={"prms": prm},
        outputs=["out"],
        zeros=["ticket"],
    )
    prms_buffer = spec.param("prms")
    assert isinstance(prms_buffer, StructBuffer) and len(prms_buffer.values) == 2
    assert dict(prms_buffer.values[1])["h"] == Pointer("h", 8)
    assert dict(spec.param("d").value)["out"] == Pointer("out", 2)
    assert spec.param("ticket").role == "zeros"
    assert [f.type for f in spec.type_map["d_t"].fields] == ["ptr", "uint16", "ptr", "ptr"]


def test_what_the_api_refuses():
    a = fake_device.array(np.zeros(4, np.float32))
    packed = np.dtype([("p", np.uint64), ("n", np.uint16), ("q", np.uint64)])  # no align=True
    with pytest.raises(SpecError, match=r"field 'q' is at offset 10 in the dtype, 16 by the C layout; .*align=True"):
        Spec.build("k", 1, 32, [np.array((a.data.ptr, 1, 0), dtype=packed)[()]], buffers={"a": a})
    with pytest.raises(SpecError, match="give Python numbers as numpy scalars"):
        Spec.build("k", 1, 32, [a, 3])
    prm = np.dtype([("p", np.uint64), ("n", np.int32)], align=True)
    rows = np.array([(a.data.ptr, 1), (a.data.ptr + (1 << 30), 2)], dtype=prm)  # the second points nowhere
    with pytest.raises(SpecError, match=r"buffer 'prms'\[1\].p: 0x.* is the address of no array"):
        Spec.build("k", 1, 32, [a], buffers={"prms": fake_device.array(rows.view(np.uint8))}, structs={"prms": prm})
    plain = Spec.build("k", 1, 32, [np.array((a.data.ptr + (1 << 30), 3), dtype=prm)[()]], buffers={"a": a})
    assert [f.type for f in plain.type_map["arg0_t"].fields] == ["uint64", "int32"]  # no address: a plain integer
    with pytest.raises(SpecError, match=r"outputs/zeros/inits/structs name no device array: \['nope'\]"):
        Spec.build("k", 1, 32, [a], outputs=["nope"])
