"""Launch spec loading, validation, parameter cross-check and input drawing."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from reorder.base.errors import SpecError
from timing.inputs import draw_inputs
from timing.spec import BufferParam, LaunchSpec, ScalarParam, check_against_params, load_spec

GOOD = """
[kernel]
name = "rmsnorm_f32"
grid = [16, 1, 1]
block = [256]
shared = 0
seed = 1234

[[param]]
name = "x"
kind = "buffer"
dtype = "float32"
shape = [16, 64]
role = "in"
init = { dist = "normal", mean = 0.0, std = 1.0 }

[[param]]
name = "y"
kind = "buffer"
dtype = "float32"
shape = [16, 64]
role = "out"

[[param]]
name = "idx"
kind = "buffer"
dtype = "int32"
shape = [100]
role = "inout"
init = { dist = "index", high = 10 }

[[param]]
name = "n"
kind = "scalar"
dtype = "int32"
value = 64
"""


def write(tmp_path: Path, text: str, name: str = "spec.toml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def test_good_spec_loads(tmp_path: Path) -> None:
    spec = load_spec(write(tmp_path, GOOD))
    assert isinstance(spec, LaunchSpec)
    assert spec.name == "rmsnorm_f32"
    assert spec.grid == (16, 1, 1) and spec.block == (256, 1, 1)
    assert [p.name for p in spec.params] == ["x", "y", "idx", "n"]
    x, y, idx, n = spec.params
    assert isinstance(x, BufferParam) and x.shape == (16, 64) and x.init.dist == "normal"
    assert isinstance(y, BufferParam) and y.role == "out" and y.init is None
    assert idx.init.arg("low") == 0 and idx.init.arg("high") == 10
    assert isinstance(n, ScalarParam) and n.value == 64
    assert spec.source.endswith("spec.toml")


def test_spec_is_frozen(tmp_path: Path) -> None:
    spec = load_spec(write(tmp_path, GOOD))
    with pytest.raises(AttributeError):
        spec.name = "other"  # type: ignore[misc]


def mutate(old: str, new: str) -> str:
    assert old in GOOD, old
    return GOOD.replace(old, new, 1)


BAD_CASES = {
    "missing kernel name": (mutate('name = "rmsnorm_f32"\n', ""), "missing 'name'"),
    "zero grid": (mutate("grid = [16, 1, 1]", "grid = [0, 1, 1]"), "must be positive"),
    "four grid dims": (mutate("grid = [16, 1, 1]", "grid = [1, 1, 1, 1]"), "1 to 3 integers"),
    "block too big": (mutate("block = [256]", "block = [256, 8]"), "2048 threads"),
    "block z over 64": (mutate("block = [256]", "block = [1, 1, 65]"), "exceeds the limit"),
    "negative shared": (mutate("shared = 0", "shared = -1"), "'shared'"),
    "unknown kernel key": (mutate("seed = 1234", "seed = 1234\ngird = 3"), "unknown key"),
    "bad dtype": (mutate('dtype = "float32"', 'dtype = "float33"'), "unknown dtype"),
    "complex dtype": (mutate('dtype = "float32"', 'dtype = "complex64"'), "the ones CuPy draws"),
    "bad role": (mutate('role = "in"', 'role = "input"'), "role must be one of"),
    "bad kind": (mutate('kind = "scalar"', 'kind = "scaler"'), "kind must be one of"),
    "bad dist": (mutate('dist = "normal"', 'dist = "gauss"'), "dist must be one of"),
    "bad dist arg": (mutate("mean = 0.0", "mu = 0.0"), "takes"),
    "integers without high": (
        mutate('init = { dist = "index", high = 10 }', 'init = { dist = "integers" }'),
        "needs 'high'",
    ),
    "integers empty range": (mutate("high = 10", "low = 5, high = 5"), "low < high"),
    "int range overflow": (mutate("high = 10", "high = 3000000000"), "does not fit int32"),
    "non-positive shape": (mutate("shape = [16, 64]", "shape = [16, 0]"), "must be positive"),
    "missing shape": (mutate("shape = [100]\n", ""), "'shape'"),
    "out with init": (mutate('role = "out"', 'role = "out"\ninit = { dist = "arange" }'), "takes no 'init'"),
    "in without init": (mutate('init = { dist = "normal", mean = 0.0, std = 1.0 }\n', ""), "needs an 'init'"),
    "scalar without value": (mutate("value = 64\n", ""), "needs a 'value'"),
    "scalar overflow": (mutate("value = 64", "value = 4294967296"), "does not fit int32"),
    "scalar float to int": (mutate("value = 64", "value = 1.5"), "does not fit int32"),
    "duplicate name": (mutate('name = "y"', 'name = "x"'), "used twice"),
    "bad hook": (mutate("seed = 1234", 'seed = 1234\nhook = "nocolon"'), "'hook'"),
    "bool as int": (mutate("seed = 1234", "seed = true"), "'seed'"),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_malformed_specs_raise_one_clear_line(tmp_path: Path, case: str) -> None:
    text, needle = BAD_CASES[case]
    path = write(tmp_path, text)
    with pytest.raises(SpecError) as info:
        load_spec(path)
    msg = str(info.value)
    assert needle in msg, msg
    assert "\n" not in msg
    assert str(path) in msg


def test_error_names_the_param(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="param 'x'"):
        load_spec(write(tmp_path, mutate('dtype = "float32"', 'dtype = "nope"')))


def test_missing_file_and_bad_toml(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="not found"):
        load_spec(tmp_path / "absent.toml")
    with pytest.raises(SpecError, match="not valid TOML"):
        load_spec(write(tmp_path, "[kernel\nname="))
    with pytest.raises(SpecError, match=r"missing \[kernel\]"):
        load_spec(write(tmp_path, "[[param]]\nname='x'"))


def test_check_against_params(tmp_path: Path) -> None:
    spec = load_spec(write(tmp_path, GOOD))
    check_against_params(spec, [8, 8, 8, 4])  # no error
    with pytest.raises(SpecError, match="takes 3 parameter"):
        check_against_params(spec, [8, 8, 8])
    with pytest.raises(SpecError, match=r"param 'n' \(#3\).*4 bytes.*8 bytes"):
        check_against_params(spec, [8, 8, 8, 8])
    with pytest.raises(SpecError, match=r"param 'y' \(#1\).*pointer"):
        check_against_params(spec, [8, 4, 8, 4])


def test_draw_inputs_reproducible_and_typed(tmp_path: Path) -> None:
    spec = load_spec(write(tmp_path, GOOD))
    a, b = draw_inputs(spec, 0), draw_inputs(spec, 0)
    c = draw_inputs(spec, 1)
    assert list(a) == ["x", "y", "idx", "n"]
    for name in ("x", "y", "idx"):
        assert a[name].tobytes() == b[name].tobytes()
    assert a["x"].tobytes() != c["x"].tobytes()
    assert a["x"].dtype == np.float32 and a["x"].shape == (16, 64) and a["x"].flags.c_contiguous
    assert a["idx"].dtype == np.int32 and a["idx"].min() >= 0 and a["idx"].max() < 10
    assert isinstance(a["n"], np.int32) and a["n"] == 64
    # out buffers are all-0xFF poison
    assert set(a["y"].view(np.uint8).ravel().tolist()) == {0xFF}
    assert np.isnan(a["y"]).all()


def test_each_param_has_its_own_stream(tmp_path: Path) -> None:
    base = load_spec(write(tmp_path, GOOD))
    changed = load_spec(write(tmp_path, mutate("mean = 0.0", "mean = 5.0"), "b.toml"))
    assert draw_inputs(base, 0)["idx"].tobytes() == draw_inputs(changed, 0)["idx"].tobytes()


def test_all_distributions(tmp_path: Path) -> None:
    text = """
    [kernel]
    name = "k"
    grid = 1
    block = 32
    """
    dists = {
        "u": ("float64", '{ dist = "uniform", low = 2.0, high = 3.0 }'),
        "a": ("int16", '{ dist = "arange" }'),
        "p": ("uint32", '{ dist = "permutation" }'),
        "c": ("float16", '{ dist = "const", value = 1.5 }'),
        "i": ("uint64", '{ dist = "integers", low = 0, high = 18446744073709551615 }'),
    }
    for name, (dtype, init) in dists.items():
        text += f"""
    [[param]]
    name = "{name}"
    kind = "buffer"
    dtype = "{dtype}"
    shape = [10, 10]
    role = "in"
    init = {init}
    """
    v = draw_inputs(load_spec(write(tmp_path, text)), 3)
    assert ((v["u"] >= 2) & (v["u"] < 3)).all()
    assert v["a"].ravel().tolist() == list(range(100))
    assert sorted(v["p"].ravel().tolist()) == list(range(100)) and v["p"].ravel().tolist() != list(range(100))
    assert (v["c"] == np.float16(1.5)).all() and v["c"].dtype == np.float16
    assert v["i"].dtype == np.uint64


def test_arange_that_does_not_fit_is_refused(tmp_path: Path) -> None:
    text = """
    [kernel]
    name = "k"
    grid = 1
    block = 32
    [[param]]
    name = "a"
    kind = "buffer"
    dtype = "int8"
    shape = [1000]
    role = "in"
    init = { dist = "arange" }
    """
    with pytest.raises(SpecError, match="do not fit"):
        load_spec(write(tmp_path, text))


def hook_ok(spec: LaunchSpec, rng: np.random.Generator) -> dict:
    return {"x": rng.standard_normal((4,)).astype(np.float32), "n": 7}


def hook_bad_shape(spec: LaunchSpec, rng: np.random.Generator) -> dict:
    return {"x": np.zeros(5, np.float32)}


HOOK_SPEC = """
[kernel]
name = "k"
grid = 1
block = 32
hook = "{hook}"
[[param]]
name = "x"
kind = "buffer"
dtype = "float32"
shape = [4]
role = "in"
[[param]]
name = "n"
kind = "scalar"
dtype = "int64"
"""


def test_hook_supplies_values(tmp_path: Path) -> None:
    spec = load_spec(write(tmp_path, HOOK_SPEC.format(hook=f"{__name__}:hook_ok")))
    v = draw_inputs(spec, 0)
    assert v["x"].shape == (4,) and v["x"].dtype == np.float32
    assert isinstance(v["n"], np.int64) and v["n"] == 7
    assert v["x"].tobytes() == draw_inputs(spec, 0)["x"].tobytes()


def test_hook_errors(tmp_path: Path) -> None:
    spec = load_spec(write(tmp_path, HOOK_SPEC.format(hook=f"{__name__}:hook_bad_shape")))
    with pytest.raises(SpecError, match=r"param 'x'.*shape"):
        draw_inputs(spec, 0)
    with pytest.raises(SpecError, match="cannot be imported"):  # refused up front
        load_spec(write(tmp_path, HOOK_SPEC.format(hook="no_such_module_xyz:f")))


def test_a_json_spec_is_the_same_document(tmp_path: Path) -> None:
    """A Triton build's manifest entry, written out as JSON, launches like its TOML twin."""
    import json

    doc = {
        "kernel": {"name": "k", "grid": [4, 1, 1], "block": [64, 1, 1], "shared": 8},
        "param": [
            {"name": "x", "kind": "buffer", "dtype": "float32", "shape": [256], "role": "out"},
            {"name": "n", "kind": "scalar", "dtype": "int32", "value": 256},
        ],
    }
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(doc))
    spec = load_spec(path)
    assert spec.name == "k" and spec.grid == (4, 1, 1) and [p.name for p in spec.params] == ["x", "n"]
    for text, message in (("[1", "not valid JSON"), ("[1]", "an object"), ('{"kernel": 3}', "kernel")):
        path.write_text(text)
        with pytest.raises(SpecError, match=message):
            load_spec(path)
