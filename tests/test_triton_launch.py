"""Launches from Triton metadata (reorder.triton.launch): parameters, scratch pointers, block,
shared memory and inputs, first on hand-built metadata (no Triton needed), then on the
project's Triton kernels compiled for sm_90 without a GPU, against each cubin's own
parameter list (KPARAM_INFO)."""

from __future__ import annotations

import importlib.util
from collections import namedtuple

import numpy as np
import pytest

from reorder.base.errors import SpecError
from reorder.triton.launch import (
    GLOBAL_SCRATCH,
    PROFILE_SCRATCH,
    bf16_bits,
    grid_of,
    launch_spec,
    spec_dict,
    spec_toml,
    tensor_extent,
)
from timing.inputs import draw_inputs
from timing.spec import BufferParam, ScalarParam, parse_spec

HAVE_TRITON = importlib.util.find_spec("triton") is not None
needs_triton = pytest.mark.skipif(not HAVE_TRITON, reason="triton is not installed")

Meta = namedtuple(
    "Meta",
    "name num_warps num_ctas shared global_scratch_size global_scratch_align "
    "profile_scratch_size profile_scratch_align launch_cooperative_grid launch_pdl",
)


class Src:
    def __init__(self, signature):
        self.signature = signature


class Compiled:
    def __init__(self, signature, **meta):
        fields = {
            "name": "k",
            "num_warps": 4,
            "num_ctas": 1,
            "shared": 0,
            "global_scratch_size": 0,
            "global_scratch_align": 1,
            "profile_scratch_size": 0,
            "profile_scratch_align": 1,
            "launch_cooperative_grid": False,
            "launch_pdl": False,
        }
        self.metadata = Meta(**{**fields, **meta})
        self.src = Src(signature)


class Tensor:
    """A torch-like tensor: shape, stride(), min()/max() (for integer ranges)."""

    def __init__(self, shape, strides=None, values=None):
        self.shape = shape
        self._strides = strides
        self._values = values

    def stride(self):
        if self._strides is not None:
            return self._strides
        return tuple(int(np.prod(self.shape[i + 1 :])) for i in range(len(self.shape)))

    def min(self):
        return min(self._values)

    def max(self):
        return max(self._values)


SIG = {"x": "*fp32", "idx": "*i32", "y": "*fp16", "n": "i32", "one": "constexpr", "eps": "fp32", "BLOCK": "constexpr"}


def _values():
    return {
        "x": Tensor((16, 64)),
        "idx": Tensor((16,), values=[3, 9, 40]),
        "y": Tensor((16, 64)),
        "n": 64,
        "one": 1,
        "eps": 1e-5,
        "BLOCK": 64,
    }


def test_parameters_follow_the_signature_then_two_null_scratch_pointers():
    spec = launch_spec(Compiled(SIG, num_warps=8, shared=4096), _values(), (16,), outputs=["y"])
    assert [p.name for p in spec.params] == ["x", "idx", "y", "n", "eps", GLOBAL_SCRATCH, PROFILE_SCRATCH]
    assert spec.block == (256, 1, 1) and spec.grid == (16, 1, 1) and spec.shared == 4096
    x, idx, y, n, eps, gs, ps = spec.params
    assert (x.dtype, x.shape, x.role, x.init.dist) == ("float32", (16, 64), "inout", "normal")
    assert (idx.dtype, idx.init.dist, idx.init.arg("low"), idx.init.arg("high")) == ("int32", "integers", 3, 41)
    assert (y.dtype, y.role, y.init) == ("float16", "out", None)
    assert n == ScalarParam("n", "int32", 64) and eps == ScalarParam("eps", "float32", 1e-5)
    assert gs == ScalarParam(GLOBAL_SCRATCH, "uint64", 0) and ps == ScalarParam(PROFILE_SCRATCH, "uint64", 0)


def test_scratch_that_a_kernel_uses_is_a_buffer_of_grid_times_its_size_and_old_tritons_have_none():
    spec = launch_spec(Compiled(SIG, global_scratch_size=128, global_scratch_align=16), _values(), (4, 2))
    assert spec.param(GLOBAL_SCRATCH) == BufferParam(GLOBAL_SCRATCH, "uint8", (4 * 2 * 128,), "out")
    Old = namedtuple("Old", "name num_warps num_ctas shared")
    old = Compiled(SIG)
    old.metadata = Old("k", 4, 1, 0)  # Triton 3.2: no scratch parameters at all
    assert [p.name for p in launch_spec(old, _values(), (1,)).params][-1] == "eps"


def test_grid_may_be_a_callable_of_the_bound_arguments():
    assert grid_of(lambda meta: (meta["n"] // meta["BLOCK"],), _values()) == (1, 1, 1)
    assert grid_of((3, 2), {}) == (3, 2, 1)
    with pytest.raises(SpecError, match="1 to 3 positive ints"):
        grid_of((1, 1, 1, 1), {})
    assert grid_of((np.int64(3),), {}) == (3, 1, 1) and grid_of(5, {}) == (5, 1, 1)  # any integer type, or one int
    for bad in ("x", (0,), (1.5,), (True,)):
        with pytest.raises(SpecError, match="1 to 3 positive ints"):
            grid_of(bad, {})


@pytest.mark.parametrize(
    "meta,words",
    [
        ({"num_ctas": 2}, "cluster launch"),
        ({"launch_pdl": True}, "launch_pdl"),
        ({"shared": 300 * 1024}, "shared memory"),
    ],
)
def test_launches_reorder_cannot_make_are_refused_in_one_line(meta, words):
    with pytest.raises(SpecError, match=words):
        launch_spec(Compiled(SIG, **meta), _values(), (1,))


def test_outputs_and_inits_must_name_buffers():
    with pytest.raises(SpecError, match="name no parameter"):
        launch_spec(Compiled(SIG), _values(), (1,), outputs=["z"])
    with pytest.raises(SpecError, match="is a scalar"):
        launch_spec(Compiled(SIG), _values(), (1,), outputs=["n"])
    spec = launch_spec(Compiled(SIG), _values(), (1,), inits={"x": {"dist": "uniform", "low": 0.5, "high": 2.0}})
    assert spec.param("x").init.dist == "uniform"
    with pytest.raises(SpecError, match="inits\\['x'\\]"):
        launch_spec(Compiled(SIG), _values(), (1,), inits={"x": {"dist": "poisson"}})


def test_a_table_of_device_addresses_is_refused_unless_inits_say_how_to_draw_it():
    """Triton's grouped GEMM reads its matrices' addresses from an int64 tensor: values drawn
    between two addresses would point anywhere, so the spec refuses it in one line; 64-bit
    indices and offsets below 2**32, and values past 2**48, are drawn as integers."""
    sig = {"ptrs": "*i64", "offsets": "*i64", "n": "i32"}

    def values(ptrs, offsets=(0, 4096, 2**31)):
        return {"ptrs": Tensor((len(ptrs),), values=list(ptrs)), "offsets": Tensor((3,), values=list(offsets)), "n": 3}

    table = (0x7F3A_2000_0000, 0x7F3A_2000_4000, 0x7F3A_2100_0000)
    with pytest.raises(SpecError, match=r"^argument 'ptrs': its values \(0x7f3a20000000 to 0x7f3a21000000\) look like"):
        launch_spec(Compiled(sig), values(table), (1,))
    given = launch_spec(Compiled(sig), values(table), (1,), inits={"ptrs": {"dist": "const", "value": 0}})
    assert given.param("ptrs").init.dist == "const"
    spec = launch_spec(Compiled(sig), values((5, 2**40 + 1, 2**62)), (1,))  # past 2**48: not addresses
    assert spec.param("ptrs").init.args == (("low", 5), ("high", 2**62 + 1))
    assert spec.param("offsets").init.args == (("low", 0), ("high", 2**31 + 1))


def test_a_strided_view_gets_the_extent_it_spans():
    assert tensor_extent(Tensor((4, 8))) == ((4, 8), True)
    assert tensor_extent(Tensor((4, 8), strides=(16, 1))) == ((3 * 16 + 8,), False)  # rows of a wider tensor
    assert tensor_extent(Tensor((4, 8), strides=(1, 4))) == ((3 + 7 * 4 + 1,), False)  # a transpose
    assert tensor_extent(Tensor((0, 8))) == ((1,), True)
    with pytest.raises(SpecError, match="negative strides"):
        tensor_extent(Tensor((4,), strides=(-1,)))


def test_bf16_scalars_round_to_nearest_even():
    assert bf16_bits(1.0) == 0x3F80 and bf16_bits(-2.0) == 0xC000
    assert bf16_bits(1.0 + 2**-8) == 0x3F80  # a tie rounds to the even pattern
    assert bf16_bits(1.0 + 3 * 2**-9) == 0x3F81


def test_the_toml_form_reads_back_as_the_same_spec_and_draws_the_same_inputs(tmp_path):
    import tomllib

    spec = launch_spec(Compiled(SIG, shared=64), _values(), (16,), outputs=["y"], seed=7)
    again = parse_spec(tomllib.loads(spec_toml(spec)), source=spec.source)
    assert again == spec and spec_dict(again) == spec_dict(spec)
    a, b = draw_inputs(spec, 1), draw_inputs(again, 1)
    assert all(np.asarray(a[k]).tobytes() == np.asarray(b[k]).tobytes() for k in a)  # NaN poison too
    assert np.asarray(a["y"]).view(np.uint8).min() == 0xFF  # outputs poisoned


# ---------------------------------------------------------------- with Triton


@pytest.fixture(scope="module")
def triton_cache(tmp_path_factory):
    import os

    old = os.environ.get("TRITON_CACHE_DIR")
    os.environ["TRITON_CACHE_DIR"] = str(tmp_path_factory.mktemp("triton-cache"))
    yield
    if old is None:
        os.environ.pop("TRITON_CACHE_DIR", None)
    else:
        os.environ["TRITON_CACHE_DIR"] = old


@needs_triton
def test_every_project_kernel_compiles_without_a_gpu_and_its_spec_matches_the_cubin(triton_cache):
    from reorder.binary.cubin import parse_cubin
    from reorder.suite.triton_kernels import FAMILIES, stand_in_args
    from reorder.triton.compile import compile_call
    from timing.cli_support import param_sizes
    from timing.spec import check_against_params

    for family in FAMILIES:
        case = family.case(family.tune_shape)
        call = compile_call(case.kernel, *stand_in_args(case), arch=90, **case.constexprs, **family.configs[-1])
        spec = launch_spec(call.kernel, call.values, case.grid, outputs=case.outputs)
        check_against_params(spec, param_sizes(parse_cubin(call.cubin).kernel(call.name)))
        assert spec.block == (32 * family.configs[-1]["num_warps"], 1, 1)
        assert spec.shared == call.kernel.metadata.shared and spec.grid == (case.grid + (1, 1))[:3]
        assert [p.name for p in spec.params if isinstance(p, BufferParam) and p.role == "out"] == list(case.outputs)


@needs_triton
def test_ints_equal_to_one_and_none_become_constexprs_and_leave_the_parameter_list(triton_cache):
    from reorder.suite.triton_kernels import family, stand_in_args
    from reorder.triton.compile import compile_call

    case = family("matmul_leaky_fp16").case((512, 512, 512))
    call = compile_call(case.kernel, *stand_in_args(case), arch=90, **case.constexprs, num_warps=4, num_stages=3)
    spec = launch_spec(call.kernel, call.values, case.grid)
    names = [p.name for p in spec.params]
    assert "a_col_stride" not in names and "b_col_stride" not in names and "c_col_stride" not in names
    assert names[:6] == ["a_ptr", "b_ptr", "c_ptr", "M", "N", "K"] and spec.shared > 48 * 1024
    # the same stride != 1 is an argument again
    args = list(stand_in_args(case))
    args[9] = 16  # b_col_stride
    call = compile_call(case.kernel, *args, arch=90, **case.constexprs, num_warps=4, num_stages=3)
    assert "b_col_stride" in [p.name for p in launch_spec(call.kernel, call.values, case.grid).params]


@pytest.mark.parametrize(
    "ty,words", [(("i32", "i32"), "is a tuple"), ("tensordesc<fp16[64, 64]>", "tensordesc"), ("nvTmaDesc", "nvTmaDesc")]
)
def test_tuple_and_descriptor_arguments_are_refused_in_one_line(ty, words):
    with pytest.raises(SpecError, match=words):
        launch_spec(Compiled({**SIG, "t": ty}), {**_values(), "t": None}, (1,))


@needs_triton
def test_a_none_argument_becomes_a_constexpr_and_leaves_the_parameter_list(triton_cache):
    from triton_optional import add_optional  # tests/triton_optional.py

    from reorder.binary.cubin import parse_cubin
    from reorder.suite.triton_kernels import StandInTensor, TensorArg
    from reorder.triton.compile import compile_call
    from timing.cli_support import param_sizes
    from timing.spec import check_against_params

    x, b, y = (StandInTensor(TensorArg((256,), "float32"), 0x10000 * i) for i in (1, 2, 3))
    without = compile_call(add_optional, x, None, y, 256, arch=90, BLOCK=256, num_warps=2)
    spec = launch_spec(without.kernel, without.values, (1,), outputs=["y_ptr"])
    assert [p.name for p in spec.params] == ["x_ptr", "y_ptr", "n", GLOBAL_SCRATCH, PROFILE_SCRATCH]
    check_against_params(spec, param_sizes(parse_cubin(without.cubin).kernel(without.name)))
    with_b = compile_call(add_optional, x, b, y, 256, arch=90, BLOCK=256, num_warps=2)
    assert [p.name for p in launch_spec(with_b.kernel, with_b.values, (1,)).params][:4] == [
        "x_ptr",
        "b_ptr",
        "y_ptr",
        "n",
    ]
