"""CPU tier for the benchmark kernel suite (benchmarks/kernels).

Checks that the sources build, the checked-in cubins exist, every launch spec
parses and matches its kernel's parameter table in the cubin, sweeps keep specs
self-consistent, hooks produce valid structure, and each NumPy reference gives
the hand-computed answer on tiny inputs.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import tomllib

from benchmarks.kernels import build, reference
from benchmarks.kernels.verify import verify
from reorder.base.errors import SpecError
from reorder.suite import sweep
from reorder.suite.inputs import embedding_bag_inputs, find_index_inputs, make_inputs, spmv_inputs

SPEC_PATHS = sorted(build.SPEC_DIR.glob("*.toml"))
POINTER_BYTES = 8


def load(path: Path) -> dict:
    return tomllib.loads(path.read_text(encoding="utf-8"))


def spec_for(kernel: str) -> dict:
    return load(build.SPEC_DIR / f"{kernel}.toml")


# ------------------------------------------------------------------ build and cubins


def test_every_kernel_has_one_spec_and_every_spec_a_kernel():
    assert sorted(p.stem for p in SPEC_PATHS) == sorted(build.all_kernels())
    for path in SPEC_PATHS:
        assert load(path)["kernel"]["name"] == path.stem


def test_checked_in_cubins_exist():
    for source in build.SUITE:
        cubin = build.CUBIN_DIR / build.cubin_name(source)
        assert cubin.is_file(), f"missing checked-in {cubin}"
        assert cubin.read_bytes()[:4] == b"\x7fELF"


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_every_source_builds(tmp_path):
    built = build.build_suite(tmp_path)
    assert set(built) == set(build.SUITE)
    for path in built.values():
        assert path.stat().st_size > 0


def test_nvcc_command_uses_suite_flags():
    cmd = build.nvcc_command("nvcc", Path("a.cu"), Path("a.cubin"))
    assert cmd == ("nvcc", "-cubin", "-O3", "-arch=sm_90", "a.cu", "-o", "a.cubin")


def test_parse_kparam_info_reads_ordinals_and_sizes():
    dump = """.nv.info.k
\t<0x1>
\tAttribute:\tEIATTR_KPARAM_INFO
\tFormat:\tEIFMT_SVAL
\tValue:\tIndex : 0x0\tOrdinal : 0x1\tOffset  : 0x8\tSize    : 0x4
\t<0x2>
\tAttribute:\tEIATTR_KPARAM_INFO
\tFormat:\tEIFMT_SVAL
\tValue:\tIndex : 0x0\tOrdinal : 0x0\tOffset  : 0x0\tSize    : 0x8
.nv.info.other
\tAttribute:\tEIATTR_CUDA_API_VERSION
"""
    assert build.parse_kparam_info(dump) == {"k": [(0, 0, 8), (1, 8, 4)], "other": []}


@pytest.fixture(scope="module")
def kparams() -> dict[str, list[tuple[int, int, int]]]:
    tool = build.find_cuobjdump()
    if tool is None:
        pytest.skip("cuobjdump not found (nvidia package or PATH)")
    table: dict[str, list[tuple[int, int, int]]] = {}
    for source in build.SUITE:
        table.update(build.kparam_info(build.CUBIN_DIR / build.cubin_name(source), tool))
    return table


@pytest.mark.parametrize("path", SPEC_PATHS, ids=lambda p: p.stem)
def test_spec_params_match_cubin(path, kparams):
    spec = load(path)
    params = spec["param"]
    entries = kparams[spec["kernel"]["name"]]
    assert len(params) == len(entries)
    for param, (_, _, size) in zip(params, entries):
        want = POINTER_BYTES if param["kind"] == "buffer" else np.dtype(param["dtype"]).itemsize
        assert size == want, param["name"]


# ------------------------------------------------------------------ spec contents


@pytest.mark.parametrize("path", SPEC_PATHS, ids=lambda p: p.stem)
def test_spec_is_well_formed(path):
    spec = load(path)
    kernel = spec["kernel"]
    assert len(kernel["grid"]) == 3 and len(kernel["block"]) == 3
    assert math.prod(kernel["block"]) <= 1024
    assert kernel["shared"] >= 0 and isinstance(kernel["seed"], int)
    for param in spec["param"]:
        assert param["kind"] in ("buffer", "scalar")
        np.dtype(param["dtype"])
        if param["kind"] == "buffer":
            assert param["role"] in ("in", "out", "inout")
            assert all(d > 0 for d in param["shape"])
            assert param["role"] != "out" or "init" not in param
        else:
            assert "value" in param
    table = spec["grid_sweep"]
    assert table and all(isinstance(v, list) and v and all(x > 0 for x in v) for v in table.values())
    assert set(table) <= set(sweep.RULES[kernel["name"]])


@pytest.mark.parametrize("path", SPEC_PATHS, ids=lambda p: p.stem)
def test_spec_loads_with_timing_loader(path):
    timing_spec = pytest.importorskip("timing.spec")
    raw = load(path)
    raw.pop("grid_sweep")  # the sweep table is read by reorder.suite.sweep only
    assert timing_spec.parse_spec(raw, str(path)).name == path.stem


@pytest.mark.parametrize("path", SPEC_PATHS, ids=lambda p: p.stem)
def test_smallest_sweep_point_is_consistent(path):
    """Inputs built from the swept spec have the spec's shapes and the reference fills every output."""
    spec = sweep.apply_sweep(load(path), sweep.smallest_point(load(path)))
    inputs = make_inputs(spec)
    for param in spec["param"]:
        if param["kind"] == "buffer":
            assert inputs[param["name"]].shape == tuple(param["shape"])
            assert inputs[param["name"]].dtype == np.dtype(param["dtype"])
    expected = reference.REFERENCES[spec["kernel"]["name"]](inputs)
    outs = {p["name"] for p in spec["param"] if p["kind"] == "buffer" and p["role"] == "out"}
    assert set(expected) == outs
    for name, value in expected.items():
        assert value.shape == inputs[name].shape and value.dtype == inputs[name].dtype
    assert verify(spec["kernel"]["name"], inputs, expected) == []


# ------------------------------------------------------------------ sweeps


def test_apply_sweep_resizes_kselect_and_leaves_input_alone():
    base = spec_for("warp_select_k32")
    out = sweep.apply_sweep(base, {"rows": 10, "n": 100})
    assert out["kernel"]["grid"] == [3, 1, 1]  # 4 rows per CTA
    shapes = {p["name"]: p.get("shape", p.get("value")) for p in out["param"]}
    assert shapes["in"] == [10, 100] and shapes["out_val"] == [10, 32] and shapes["rows"] == 10
    assert base["kernel"]["grid"] == [128, 1, 1]


def test_apply_sweep_embedding_keeps_pooling_factor():
    out = sweep.apply_sweep(spec_for("embedding_bag_sum"), {"bags": 64})
    values = {p["name"]: p.get("value") for p in out["param"]}
    assert values["num_bags"] == 64 and values["num_indices"] == 64 * 40
    assert out["kernel"]["grid"] == [1024, 1, 1]


def test_apply_sweep_spmv_and_cfo():
    spmv = sweep.apply_sweep(spec_for("spmv_csr_vector"), {"rows": 1024})
    shapes = {p["name"]: p.get("shape") for p in spmv["param"]}
    assert spmv["kernel"]["grid"] == [128, 1, 1] and shapes["row_ptr"] == [1025] and shapes["col_idx"] == [32768]
    cfo = sweep.apply_sweep(spec_for("cfo_ta_est"), {"groups": 2, "prbs": 8})
    shapes = {p["name"]: p.get("shape", p.get("value")) for p in cfo["param"]}
    assert cfo["kernel"]["grid"] == [4, 2, 1] and shapes["H"] == [2, 4, 4, 4, 96, 2] and shapes["n_sc"] == 96


def test_apply_sweep_rejects_unknown_key_and_bad_value():
    with pytest.raises(SpecError):
        sweep.apply_sweep(spec_for("rms_norm_f32"), {"cols": 3})
    with pytest.raises(SpecError):
        sweep.apply_sweep(spec_for("rms_norm_f32"), {"rows": 0})


def test_sweep_points_is_the_cartesian_product():
    spec = spec_for("warp_select_k100")
    points = sweep.sweep_points(spec)
    assert len(points) == len(spec["grid_sweep"]["rows"]) * len(spec["grid_sweep"]["n"])
    assert sweep.smallest_point(spec) == {"rows": 16, "n": 1024}


# ------------------------------------------------------------------ hooks


def test_embedding_hook_gives_valid_bags():
    spec = sweep.apply_sweep(spec_for("embedding_bag_mean"), {"bags": 64})
    got = embedding_bag_inputs(spec, np.random.default_rng(0))
    offsets, indices = got["offsets"], got["indices"]
    assert offsets[0] == 0 and np.all(np.diff(offsets) >= 0) and offsets[-1] <= indices.size
    assert indices.min() >= 0 and indices.max() < 200000 and indices.dtype == np.int64


def test_spmv_hook_gives_valid_csr():
    spec = sweep.apply_sweep(spec_for("spmv_csr_vector"), {"rows": 1024})
    got = spmv_inputs(spec, np.random.default_rng(0))
    row_ptr, cols = got["row_ptr"], got["col_idx"]
    assert row_ptr[0] == 0 and row_ptr[-1] == cols.size and np.all(np.diff(row_ptr) >= 0)
    for r in range(0, 1024, 97):
        assert np.all(np.diff(cols[row_ptr[r] : row_ptr[r + 1]]) >= 0)
    assert cols.min() >= 0 and cols.max() < 1024


def test_find_index_hook_gives_monotone_cdf():
    got = find_index_inputs(spec_for("find_index"), np.random.default_rng(0))
    assert np.all(np.diff(got["CDF"]) >= 0) and abs(float(got["CDF"][-1]) - 1.0) < 1e-4
    assert np.all(np.diff(got["u"]) > 0) and got["u"][0] < 1.0 / got["u"].size


# ------------------------------------------------------------------ references, hand-checked


def test_warp_select_reference_sorted_k_smallest():
    x = np.array([[5, 3, 9, 1, 7, 2], [0, -1, 4, 4, 8, -6]], np.float32)
    got = reference.warp_select({"in": x, "k": 3})
    assert got["out_val"].tolist() == [[1, 2, 3], [-6, -1, 0]]
    assert got["out_idx"].tolist() == [[3, 5, 1], [5, 1, 0]]


def test_normalize_weights_reference():
    inputs = {
        "weights": np.array([1, 1, 2], np.float32),
        "N": 3,
        "partial_sums": np.array([4], np.float32),
        "seed": np.array([1], np.int32),
    }
    got = reference.normalize_weights(inputs)
    assert got["norm_weights"].tolist() == [0.25, 0.25, 0.5]
    assert got["CDF"].tolist() == [0.25, 0.5, 1.0]
    u1 = 1103527590 / 2147483648 / 3  # LCG(1) = 1103515245 + 12345; float32(2^31 - 1) = 2^31
    np.testing.assert_allclose(got["u"], [u1, u1 + 1 / 3, u1 + 2 / 3], rtol=1e-6)


def test_find_index_reference():
    inputs = {
        "CDF": np.array([0.2, 0.5, 1.0], np.float32),
        "u": np.array([0.1, 0.5, 1.5], np.float32),
        "arrayX": np.array([10, 11, 12], np.float32),
        "arrayY": np.array([20, 21, 22], np.float32),
        "N": 3,
    }
    got = reference.find_index(inputs)
    assert got["xj"].tolist() == [10, 11, 12]  # u > CDF[-1] falls back to N-1
    assert got["yj"].tolist() == [20, 21, 22]
    np.testing.assert_allclose(got["weights"], 1 / 3)


def test_cfo_ta_reference_recovers_pure_rotations():
    a, b = 0.3, -0.05  # radians per DMRS step, per subcarrier
    t = np.arange(3)[:, None]
    s = np.arange(24)[None, :]
    h = np.broadcast_to(np.exp(1j * (a * t + b * s)), (1, 2, 1, 3, 24))
    pairs = np.stack([h.real, h.imag], axis=-1).astype(np.float32)
    got = reference.cfo_ta_est({"H": pairs, "n_sc": 24, "n_dmrs": 3, "cfo_scale": 2.0, "ta_scale": -1.0})
    np.testing.assert_allclose(got["cfo_est"], [[2 * a]], rtol=1e-5)
    np.testing.assert_allclose(got["ta_est"], [[-b]], rtol=1e-5)
    assert got["cfo_rot"].shape == (1, 1, 2)
    np.testing.assert_allclose(got["cfo_rot"][0, 0, 0], 2 * 2 * 24 * np.cos(a), rtol=1e-5)


def test_embedding_bag_references():
    weight = np.arange(12, dtype=np.float32).reshape(4, 3)  # row r = [3r, 3r+1, 3r+2]
    inputs = {
        "indices": np.array([0, 2, 3, 3, 1], np.int64),
        "offsets": np.array([0, 2, 2], np.int64),
        "weight": weight,
        "num_indices": 5,
        "num_bags": 3,
        "dim": 3,
        "padding_idx": 3,
    }
    total = reference.embedding_bag_sum(inputs)["output"]
    mean = reference.embedding_bag_mean(inputs)["output"]
    assert total.tolist() == [[6, 8, 10], [0, 0, 0], [3, 4, 5]]  # padding rows (3) skipped
    assert mean.tolist() == [[3, 4, 5], [0, 0, 0], [3, 4, 5]]  # empty bag -> zeros


def test_rmsnorm_references_on_constant_row():
    x = np.full((2, 8), 3.0, np.float32)
    x[1] = -2.0
    w = np.linspace(0.5, 1.2, 8).astype(np.float32)
    a = reference.rms_norm_f32({"x": x, "w": w, "ncols": 8, "eps": 0.0})["dst"]
    b = reference.rmsnorm_triton_style({"x": x, "w": w, "n_cols": 8, "eps": 0.0})["out"]
    np.testing.assert_allclose(a, np.stack([w, -w]), rtol=1e-6)
    assert np.array_equal(a, b)


def test_spmv_reference_matches_dense():
    dense = np.array([[1, 0, 2], [0, 0, 0], [0, 3, 4]], np.float32)
    inputs = {
        "row_ptr": np.array([0, 2, 2, 4], np.int32),
        "col_idx": np.array([0, 2, 1, 2], np.int32),
        "vals": np.array([1, 2, 3, 4], np.float32),
        "x": np.array([1, 2, 3], np.float32),
        "n_rows": 3,
    }
    assert reference.spmv_csr_vector(inputs)["y"].tolist() == (dense @ [1, 2, 3]).tolist()


def test_gather_histogram_reference_splits_tiles():
    keys = np.array([0, 1, 2, 3, 4], np.uint32)
    perm = np.array([4, 0, 0, 1, 2], np.int32)
    partial = np.zeros((2, 4), np.uint32)
    got = reference.gather_histogram({"perm": perm, "keys": keys, "partial": partial, "n": 5, "n_bins": 4})["partial"]
    bins = (reference.mix_key(keys[perm]) & 3).astype(int)
    want = np.zeros((2, 4), int)
    for i, b in enumerate(bins):
        want[i // 3, b] += 1  # tile = ceil(5 / 2) = 3
    assert got.tolist() == want.tolist()
    assert int(reference.mix_key(np.array([0], np.uint32))[0]) == 0


def test_lcg_matches_32bit_wraparound():
    assert reference.lcg_next(1) == 1103527590
    assert reference.lcg_next(2**31 - 1) == (1103515245 * (2**31 - 1) + 12345) % 2**32 & 0x7FFFFFFF


def test_verify_flags_wrong_outputs():
    spec = sweep.apply_sweep(spec_for("rms_norm_f32"), {"rows": 2})
    inputs = make_inputs(spec)
    good = reference.rms_norm_f32(inputs)
    assert verify("rms_norm_f32", inputs, good) == []
    bad = {"dst": good["dst"] * 1.01}
    assert verify("rms_norm_f32", inputs, bad)
    ks = sweep.apply_sweep(spec_for("warp_select_k32"), {"rows": 4, "n": 64})
    kin = make_inputs(ks)
    kout = reference.warp_select(kin)
    assert verify("warp_select_k32", kin, kout) == []
    kout["out_idx"] = kout["out_idx"][:, ::-1].copy()
    assert verify("warp_select_k32", kin, kout)
