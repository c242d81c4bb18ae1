"""Struct parameters, descriptor buffers, zeros counters and C++ kernel names, on
the CPU: layouts against the cubins' parameter tables and against nvcc itself, name
resolution, bad specs (one line, exit 2), and the device-side building through a fake cupy."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import tomllib

from benchmarks.kernels.structs import specs as struct_specs
from reorder.base.errors import InputError, SpecError
from reorder.binary import names
from reorder.binary.cubin import read_cubin
from reorder.cli.main import main
from tests import fake_device
from timing import devicestructs
from timing.cli_support import checked_spec, validated_spec
from timing.gpu import DeviceSet
from timing.inputs import draw_inputs
from timing.layout import Pointer, describe_layout, placed_fields, size_align
from timing.spec import check_against_params, param_offsets, parse_spec
from timing.spectoml import spec_toml

HERE = Path(__file__).resolve().parent.parent / "benchmarks" / "kernels" / "structs"
CUBINS = {
    source: HERE / "cubin" / source.replace(".cu", ".cubin")
    for source in ("kselect_tensor.cu", "cfo_ta_descr.cu", "last_block.cu")
}
K32 = "warpSelect<float, long, false, 32, 2, 128>"


def spec_of(name: str):
    source = struct_specs.SPECS[name][0]
    return validated_spec(HERE / "specs" / f"{name}.toml", [CUBINS[source]])


@pytest.mark.parametrize("name", sorted(struct_specs.SPECS))
def test_layout_agrees_with_the_cubin_parameter_table(name):
    spec = spec_of(name)
    kernel = read_cubin(CUBINS[struct_specs.SPECS[name][0]]).kernel(spec.name)
    table = sorted(kernel.params, key=lambda p: p.ordinal)
    assert list(param_offsets(spec)) == [p.offset for p in table]
    assert spec.name == kernel.name and spec.name.startswith("_Z")  # resolved to the mangled symbol


@pytest.mark.parametrize("name", sorted(struct_specs.SPECS))
def test_checked_in_specs_are_current_and_round_trip(name):
    text = (HERE / "specs" / f"{name}.toml").read_text()
    assert text == struct_specs.spec_text(name)
    spec = parse_spec(tomllib.loads(text), source=name)
    assert parse_spec(tomllib.loads(spec_toml(spec)), source=name) == spec


def test_faiss_tensor_layout_and_cfo_descriptor_layout():
    k32 = spec_of("warp_select_tensor_k32")
    assert (
        describe_layout(k32.type_map, "Tensor2")
        == "struct Tensor2 {data_@0:ptr, stride_@8:int64[2], size_@24:int64[2]} 40 bytes, align 8"
    )
    cfo = spec_of("cfo_ta_descr").type_map
    assert size_align(cfo, "CfoTaEstDynDescr") == (24, 8)  # uint16 count padded to the float** at 16
    assert [(p.field.name, p.offset) for p in placed_fields(cfo, "CfoTaEstUeGrpPrms")][3:] == [
        ("nRxAnt", 64),
        ("nLayers", 66),
        ("nDmrsSyms", 67),
        ("nSc", 68),
        ("cfoScale", 72),
        ("taScale", 76),
    ]
    assert size_align(cfo, "TensorDescr4") == (32, 8)  # 28 bytes of fields, tail padding to 8


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_device_memory_layouts_agree_with_nvcc(tmp_path):
    """Structs in device memory have no parameter table to check against: static_asserts
    against the kernel sources' own types, compiled by nvcc, do it."""
    cfo = spec_of("cfo_ta_descr").type_map
    lines = ["#include <cstddef>", f'#include "{HERE / "cfo_ta_descr.cu"}"', "using namespace pusch;"]
    cxx = {"TensorDescr4": "TensorDescr<4>", "TensorDescr1": "TensorDescr<1>"}
    for ty in ("TensorDescr4", "TensorDescr1", "CfoTaEstUeGrpPrms", "CfoTaEstDynDescr"):
        c = cxx.get(ty, ty)
        lines.append(f'static_assert(sizeof({c}) == {size_align(cfo, ty)[0]}, "{ty} size");')
        lines += [
            f'static_assert(offsetof({c}, {p.field.name}) == {p.offset}, "{ty}.{p.field.name}");'
            for p in placed_fields(cfo, ty)
        ]
    src = tmp_path / "layout.cu"
    src.write_text("\n".join(lines) + "\n")
    done = subprocess.run(
        ["nvcc", "-arch=sm_90", "-c", str(src), "-o", str(tmp_path / "layout.o")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


# ---------------------------------------------------------------- names


def test_names_resolve_by_signature_substring_and_symbol():
    cubin = read_cubin(CUBINS["kselect_tensor.cu"])
    symbol = cubin.kernel(K32).name
    assert symbol.startswith("_ZN5faiss3gpu10warpSelectIflLb0ELi32E")
    assert cubin.kernel("warpSelect<float,long,false,32,2,128>").name == symbol  # spaces do not matter
    assert cubin.kernel(symbol).name == symbol
    full = names.demangle((symbol,))[0]
    assert cubin.kernel(full).name == symbol


def test_ambiguous_and_missing_names_list_the_candidates():
    cubin = read_cubin(CUBINS["kselect_tensor.cu"])
    with pytest.raises(
        InputError,
        match=r"'warpSelect' is ambiguous, 2 kernels match: .*128, 4, 128.*32, 2, 128|"
        r"'warpSelect' is ambiguous, 2 kernels match: .*32, 2, 128.*128, 4, 128",
    ):
        cubin.kernel("warpSelect")
    with pytest.raises(InputError, match=r"no kernel named 'blockSelect' \(have: void faiss::gpu::warpSelect<"):
        cubin.kernel("blockSelect")


def test_without_a_demangler_symbols_still_match_and_the_error_says_why(monkeypatch):
    monkeypatch.setattr(names, "find_demangler", lambda: None)
    names.demangle.cache_clear()
    try:
        cubin = read_cubin(CUBINS["last_block.cu"])
        assert cubin.kernel("lastBlockSum").name == "_ZN6reduce12lastBlockSumILi256EEEvNS_7SumArgsE"
        with pytest.raises(InputError, match="no demangler found"):
            cubin.kernel("lastBlockSum<256>")
    finally:
        names.demangle.cache_clear()


# ---------------------------------------------------------------- bad specs


def _raw(name: str) -> dict:
    return tomllib.loads((HERE / "specs" / f"{name}.toml").read_text())


def _bad(raw: dict, match: str) -> None:
    with pytest.raises(SpecError, match=match):
        parse_spec(raw, source="bad.toml")


def test_bad_struct_specs_are_one_line_each():
    raw = _raw("cfo_ta_descr")
    raw["type"][0]["fields"][0]["type"] = "pointer"
    _bad(raw, r"type 'TensorDescr4' field 'addr': unknown field type 'pointer'")
    raw = _raw("cfo_ta_descr")
    del raw["param"][0]["value"]["nUeGrps"]
    _bad(raw, r"missing \['nUeGrps'\]")
    raw = _raw("cfo_ta_descr")
    raw["param"][0]["value"]["ppEst"] = "nowhere"
    _bad(raw, r"pointer to 'nowhere', which is no buffer of the spec")
    raw = _raw("cfo_ta_descr")
    raw["buffer"][-1]["values"][0] = {"buffer": "cfo_est", "index": 33}
    _bad(raw, r"pointer cfo_est\[33\] is past the end of 'cfo_est' \(32 elements\)")
    raw = _raw("cfo_ta_descr")
    raw["type"][0]["fields"].append({"name": "self", "type": "TensorDescr4"})
    _bad(raw, r"type 'TensorDescr4' contains itself")
    raw = _raw("last_block_sum_zeros")
    raw["type"] = [{"name": f"T{i}", "fields": [{"name": "x", "type": f"T{i + 1}"}]} for i in range(999)]
    raw["type"].append({"name": "T999", "fields": [{"name": "x", "type": "int32"}]})
    _bad(raw, r"type 'T0' nests structs more than 16 deep")
    raw = _raw("cfo_ta_descr")
    raw["param"][0]["value"]["nUeGrps"] = 70000
    _bad(raw, r"nUeGrps: value 70000 does not fit uint16")
    raw = _raw("last_block_sum_zeros")
    raw["buffer"][2]["init"] = {"dist": "const", "value": 0}
    _bad(raw, r"a 'zeros' buffer takes no 'init'")
    raw = _raw("warp_select_tensor_k32")
    raw["param"][0]["value"]["stride_"] = [1]
    _bad(raw, r"an array of 2 int64 needs a list of 2 values")


def test_a_layout_that_disagrees_with_the_cubin_is_one_line(tmp_path):
    raw = _raw("warp_select_tensor_k32")
    raw["type"][0]["fields"][1]["count"] = 1  # a Tensor of 32 bytes
    for p in raw["param"][:3]:
        p["value"]["stride_"] = p["value"]["stride_"][0]
    bad = parse_spec(raw, source="bad.toml")
    with pytest.raises(
        SpecError,
        match=r"param 'in' \(#0\): spec says struct Tensor2 .* 32 bytes, align 8 = 32 "
        r"bytes, kernel parameter is 40 bytes at offset 0",
    ):
        checked_spec(bad, [CUBINS["kselect_tensor.cu"]])
    good = spec_of("warp_select_tensor_k32")
    with pytest.raises(
        SpecError,
        match=r"param 'initV' \(#4\): spec's layout puts scalar int64 at offset 128, "
        r"kernel parameter is at offset 124",
    ):
        check_against_params(good, [40, 40, 40, 4, 8, 4], [0, 40, 80, 120, 124, 136])


def test_the_cli_refuses_a_bad_struct_spec_with_exit_2(tmp_path, capsys):
    raw = (HERE / "specs" / "warp_select_tensor_k32.toml").read_text()
    spec = tmp_path / "bad.toml"
    spec.write_text(
        raw.replace('{ name = "size_", type = "int64", count = 2 }', '{ name = "size_", type = "int32", count = 2 }')
    )
    cubin = str(CUBINS["kselect_tensor.cu"])
    assert main(["check", cubin, cubin, "--launch", str(spec)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "kernel parameter is 40 bytes" in err[0] and "Traceback" not in err[0]


# ---------------------------------------------------------------- device side, on a fake cupy


def _device(spec, set_index: int = 0) -> DeviceSet:
    host = draw_inputs(spec, set_index)
    dev = DeviceSet({k: fake_device.array(v) if isinstance(v, np.ndarray) else v for k, v in host.items()})
    devicestructs.build_structs(fake_device, spec, dev)
    return dev


def test_descriptors_point_at_the_buffers_and_compare_symbolically():
    spec = spec_of("cfo_ta_descr")
    dev = _device(spec)
    dyn = dev["dynDescr"]
    assert dyn.shape == (1,) and dyn.dtype.itemsize == 24
    raw = dyn.tobytes()
    assert int.from_bytes(raw[0:8], "little") == dev["ue_grp_prms"].data.ptr
    assert int.from_bytes(raw[8:10], "little") == 8 and raw[10:16] == bytes(6)  # padding is zero
    assert int.from_bytes(raw[16:24], "little") == dev["est_ptrs"].data.ptr
    group3 = 3 * 80
    assert fake_device.read_u64(dev["ue_grp_prms"], group3) == dev["H"].data.ptr + 3 * 4 * 4 * 4 * 3264 * 2 * 4
    assert fake_device.read_u64(dev["est_ptrs"], 8 * 7) == dev["ta_est"].data.ptr + 3 * 4 * 4
    other = _device(spec)  # fresh buffers elsewhere: the symbolic bytes agree
    assert other["H"].data.ptr != dev["H"].data.ptr
    for name in ("ue_grp_prms", "est_ptrs"):
        assert np.array_equal(devicestructs.symbolic_bytes(dev, name), devicestructs.symbolic_bytes(other, name))
    dev["est_ptrs"].host[0:8] = 0  # a kernel that overwrote a pointer is noticed
    assert not np.array_equal(
        devicestructs.symbolic_bytes(dev, "est_ptrs"), devicestructs.symbolic_bytes(other, "est_ptrs")
    )


def test_zeros_get_one_cleared_copy_per_timed_launch():
    spec = spec_of("last_block_sum_zeros")
    dev = _device(spec)
    assert devicestructs.per_launch_names(spec) == {"ticket", "args"}
    copies = devicestructs.launch_copies(fake_device, spec, dev, 5)
    tickets = [int.from_bytes(args[0].tobytes()[16:24], "little") for args in copies.args]
    inputs = {int.from_bytes(args[0].tobytes()[0:8], "little") for args in copies.args}
    assert len(set(tickets)) == 5 and inputs == {dev["x"].data.ptr}  # own counter, shared input
    block = copies.keep[0]
    block.host[:] = 7  # as five launches would leave their tickets
    copies.clear(SimpleNamespace(ptr=0))
    assert not block.host.any()
    plain = spec_of("warp_select_tensor_k32")
    same = devicestructs.launch_copies(fake_device, plain, _device(plain), 3)
    assert len(same.args) == 3 and same.args[0] is same.args[2] and not same.keep  # no zeros: one set


def test_draw_inputs_of_struct_specs():
    spec = spec_of("last_block_sum_zeros")
    values = draw_inputs(spec, 0)
    assert set(values) == {"x", "partial", "ticket", "result"}
    assert not values["ticket"].any() and values["x"].dtype == np.float32
    cfo = draw_inputs(spec_of("cfo_ta_descr"), 1)
    assert cfo["H"].shape == (8, 4, 4, 4, 3264, 2) and np.isfinite(cfo["H"]).all()


def test_pointer_values_round_trip_through_toml():
    spec = spec_of("cfo_ta_descr")
    first = dict(spec.param("ue_grp_prms").values[1])
    assert dict(first["tInfoHEst"])["addr"] == Pointer("H", 4 * 4 * 4 * 3264 * 2)


def test_a_struct_launch_hands_cuLaunchKernel_the_packed_bytes(monkeypatch):
    """Struct arguments bypass cupy's conversion: each kernelParams entry points at the bytes
    the spec packed (read back here inside a fake cuLaunchKernel)."""
    import ctypes

    from timing import gpu

    seen = {}

    def launch_kernel(func, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        pointers = (ctypes.c_void_p * 6).from_address(params)
        sizes = (40, 40, 40, 4, 8, 4)
        seen.update(
            func=func,
            grid=(gx, gy, gz),
            block=(bx, by, bz),
            stream=stream,
            args=[ctypes.string_at(p, n) for p, n in zip(pointers, sizes)],
        )

    fake = SimpleNamespace(
        cuda=SimpleNamespace(
            driver=SimpleNamespace(launchKernel=launch_kernel), get_current_stream=lambda: SimpleNamespace(ptr=77)
        )
    )
    monkeypatch.setattr(gpu, "cupy_module", lambda: fake)
    spec = spec_of("warp_select_tensor_k32")
    dev = _device(spec)
    # shaped like what cupy.RawModule.get_function returns: a RawKernel, handle at .kernel.ptr
    kernel = gpu.Kernel("k.cubin", None, SimpleNamespace(kernel=SimpleNamespace(ptr=5)))
    gpu.launch(kernel, spec, gpu.launch_args(spec, dev))
    assert seen["func"] == 5 and seen["grid"] == (128, 1, 1) and seen["block"] == (128, 1, 1) and seen["stream"] == 77
    tensor_in = seen["args"][0]
    assert int.from_bytes(tensor_in[:8], "little") == dev["dist"].data.ptr
    assert np.frombuffer(tensor_in[8:], np.int64).tolist() == [32768, 1, 512, 32768]
    assert seen["args"][3:] == [
        np.float32(struct_specs.FLT_MAX).tobytes(),
        np.int64(-1).tobytes(),
        np.int32(32).tobytes(),
    ]


C_TYPES = {
    "int8": "signed char",
    "uint8": "unsigned char",
    "int16": "short",
    "uint16": "unsigned short",
    "int32": "int",
    "uint32": "unsigned int",
    "int64": "long long",
    "uint64": "unsigned long long",
    "float32": "float",
    "float64": "double",
    "bool": "bool",
    "ptr": "void*",
}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_mixed_alignment_layouts_agree_with_nvcc(tmp_path):
    """Padding before wider fields, tail padding, arrays, a nested 12-byte uint3-like struct
    (llama.cpp passes such packed fields), each declared in C from the spec's own types."""
    raw = {
        "kernel": {"name": "k", "grid": [1], "block": [1]},
        "type": [
            {
                "name": "U3",
                "fields": [
                    {"name": "x", "type": "uint32"},
                    {"name": "y", "type": "uint32"},
                    {"name": "z", "type": "uint32"},
                ],
            },
            {
                "name": "Mixed",
                "fields": [
                    {"name": "a", "type": "uint8"},
                    {"name": "d", "type": "float64"},
                    {"name": "u", "type": "U3"},
                    {"name": "s", "type": "int16"},
                    {"name": "c", "type": "uint8", "count": 3},
                    {"name": "p", "type": "ptr"},
                    {"name": "f", "type": "float32"},
                    {"name": "b", "type": "bool"},
                    {"name": "v", "type": "U3", "count": 2},
                    {"name": "t", "type": "int8"},
                ],
            },
        ],
        "param": [
            {
                "name": "m",
                "kind": "struct",
                "type": "Mixed",
                "value": {
                    "a": 1,
                    "d": 2.0,
                    "u": {"x": 1, "y": 2, "z": 3},
                    "s": 4,
                    "c": [5, 6, 7],
                    "p": 0,
                    "f": 1.5,
                    "b": True,
                    "v": [{"x": 1, "y": 2, "z": 3}, {"x": 4, "y": 5, "z": 6}],
                    "t": -1,
                },
            }
        ],
    }
    types = parse_spec(raw, source="mixed").type_map
    lines = ["#include <cstddef>"]
    for name in ("U3", "Mixed"):
        members = " ".join(
            f"{C_TYPES.get(f.type, f.type)} {f.name}" + (f"[{f.count}]" if f.count > 1 else "") + ";"
            for f in types[name].fields
        )
        lines.append(f"struct {name} {{ {members} }};")
        size, align = size_align(types, name)
        lines.append(f'static_assert(sizeof({name}) == {size} && alignof({name}) == {align}, "{name}");')
        lines += [
            f'static_assert(offsetof({name}, {p.field.name}) == {p.offset}, "{name}.{p.field.name}");'
            for p in placed_fields(types, name)
        ]
    lines.append("__global__ void k(Mixed m) { if (m.a == 7) *(int*)m.p = m.t; }")
    src = tmp_path / "mixed.cu"
    src.write_text("\n".join(lines) + "\n")
    done = subprocess.run(
        ["nvcc", "-arch=sm_90", "-cubin", str(src), "-o", str(tmp_path / "mixed.cubin")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert size_align(types, "Mixed") == (88, 8)  # 81 bytes of fields and padding, tail-padded to 8
    kernel = read_cubin(tmp_path / "mixed.cubin").kernel("k(Mixed)")
    check_against_params(
        parse_spec(raw, source="mixed"), [p.size for p in kernel.params], [p.offset for p in kernel.params]
    )
