"""Launch specs for the sm_90 test corpus (tests/corpus/specs/<kernel>.toml).

Each spec must load with timing.spec and pass the same CPU-side check that
`reorder check/time/optimize --launch` applies before a GPU worker starts
(timing.cli_support.validated_spec: parameter count and byte sizes against the
kernel's KPARAM_INFO in the cubin), and every launchable kernel of the corpus
must have exactly one spec.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest

from reorder.binary.cubin import read_cubin
from timing.cli_support import validated_spec
from timing.inputs import draw_inputs
from timing.spec import BufferParam, load_spec

CORPUS = Path(__file__).parent / "corpus"
CUBIN_DIR = CORPUS / "cubin" / "sm_90"
SPEC_DIR = CORPUS / "specs"
SPEC_PATHS = sorted(SPEC_DIR.glob("*.toml"))
NONDET_PREFIX = "# nondeterministic:"
MAX_SPEC_BYTES = 512 * 2**20  # host + device copies of every buffer stay small

# Minimum element counts (in the spec's dtype) of each buffer a kernel may touch, read
# off tests/corpus/src/*.cu: f(scalar values, threads = grid*block, blocks = grid.x).
# A spec that undersizes a buffer would fault on the GPU, where time is scarce.
EXTENTS = {
    "saxpy_grid_stride": lambda v, t, g: {"y": v["n"], "x": v["n"]},
    "copy_grid_stride": lambda v, t, g: {"dst": v["n"], "src": v["n"]},
    "scale_bias_float4": lambda v, t, g: {"out": 4 * min(t, v["n4"]), "in": 4 * min(t, v["n4"])},
    "xor_mix_int4": lambda v, t, g: dict.fromkeys(("out", "a", "b"), 4 * min(t, v["n4"])),
    "complex_mul_float2": lambda v, t, g: dict.fromkeys(("out", "a", "b"), 2 * min(t, v["n"])),
    "clamp_piecewise": lambda v, t, g: dict.fromkeys(("out", "in"), min(t, v["n"])),
    "collatz_steps": lambda v, t, g: dict.fromkeys(("steps", "start"), min(t, v["n"])),
    "predicated_select": lambda v, t, g: dict.fromkeys(("out", "a", "b"), min(t, v["n"])),
    "switch_interpreter": lambda v, t, g: dict.fromkeys(("out", "ops", "a", "b"), min(t, v["n"])),
    "block_reduce_sum": lambda v, t, g: {"partial": g, "in": min(t, v["n"])},
    "warp_reduce_atomic": lambda v, t, g: {"total": 1, "in": v["n"]},
    "warp_allreduce_max": lambda v, t, g: dict.fromkeys(("out", "in"), min(t, v["n"])),
    "dyn_shared_reduce": lambda v, t, g: {"partial": g, "in": v["n"]},
    "histogram256": lambda v, t, g: {"hist": 256, "data": v["n"]},
    "atomic_minmax_int": lambda v, t, g: {"gmax": 1, "gmin": 1, "old_out": min(t, v["n"]), "keys": min(t, v["n"])},
    "atomic_cas_fmax": lambda v, t, g: {"result": 1, "in": min(t, v["n"])},
    "ticket_compact": lambda v, t, g: {"out": min(t, v["n"]), "counter": 1, "in": min(t, v["n"])},
    "hash_u64": lambda v, t, g: dict.fromkeys(("out", "in"), min(t, v["n"])),
    "mulhi_accumulate": lambda v, t, g: dict.fromkeys(("acc", "a", "b"), min(t, v["n"])),
    "int_divmod": lambda v, t, g: dict.fromkeys(("q", "r", "q64", "a"), min(t, v["n"])),
    "bit_ops": lambda v, t, g: {"out": 4 * min(t, v["n"]), "in": min(t, v["n"])},
    "dpoly_horner": lambda v, t, g: {"out": min(t, v["n"]), "x": min(t, v["n"]), "coeffs": 8},
    "daxpy_double2": lambda v, t, g: dict.fromkeys(("y", "x"), 2 * min(t, v["n2"])),
    "ddot_partial": lambda v, t, g: {"partial": g, "a": v["n"], "b": v["n"]},
    "kahan_sum_f64": lambda v, t, g: {"out": min(t, -(-v["n"] // v["per_thread"])), "in": v["n"]},
    "haxpy_half2": lambda v, t, g: dict.fromkeys(("y", "x"), 2 * min(t, v["n2"])),
    "hadd_relu_half2": lambda v, t, g: dict.fromkeys(("out", "a", "b"), 2 * min(t, v["n2"])),
    "half_dot4_mixed": lambda v, t, g: {"out": min(t, v["n"]), "a": 4 * min(t, v["n"]), "b": 4 * min(t, v["n"])},
    "half2_horner": lambda v, t, g: {"y": 2 * min(t, v["n2"]), "x": 2 * min(t, v["n2"]), "coeffs": 2 * (v["deg"] + 1)},
    "softplus_sigmoid": lambda v, t, g: dict.fromkeys(("sp", "sg", "x"), min(t, v["n"])),
    "rotate_points": lambda v, t, g: {"pts": 2 * min(t, v["n"]), "angle": min(t, v["n"])},
    "normalize3": lambda v, t, g: {"xyz": 3 * min(t, v["n"])},
    "fdiv_ieee": lambda v, t, g: dict.fromkeys(("q", "a", "b"), min(t, v["n"])),
    "fast_intrinsics": lambda v, t, g: dict.fromkeys(("out", "x"), min(t, v["n"])),
    "call_poly": lambda v, t, g: {"out": min(t, v["n"]), "x": min(t, v["n"]), "coeffs": v["deg"] + 1},
    "call_gcd": lambda v, t, g: dict.fromkeys(("out", "a", "b"), min(t, v["n"])),
    "local_lut_gather": lambda v, t, g: {"out": min(t, v["n"]), "base": min(t, v["n"]), "idx": 4 * min(t, v["n"])},
    "local_sort8": lambda v, t, g: {"data": min(8 * t, v["n"])},
    "sgemm_tile16": lambda v, t, g: {"C": v["M"] * v["N"], "A": v["M"] * v["K"], "B": v["K"] * v["N"]},
    "batched_mat4": lambda v, t, g: dict.fromkeys(("C", "A", "B"), 16 * min(t, v["batch"])),
    "rmsnorm_rows": lambda v, t, g: {"y": g * v["cols"], "x": g * v["cols"], "w": v["cols"]},
    "softmax_rows": lambda v, t, g: {"y": g * v["cols"], "x": g * v["cols"]},
    "block_inclusive_scan": lambda v, t, g: {"out": min(t, v["n"]), "block_sums": g, "in": min(t, v["n"])},
    "hillis_steele_exclusive": lambda v, t, g: dict.fromkeys(("out", "in"), min(t, v["n"])),
    "last_block_sum": lambda v, t, g: {"result": 1, "partial": g, "ticket": 1, "in": v["n"]},
    "flag_handoff": lambda v, t, g: {"flag": 1, "mailbox": 1, "out": 1},
    "warp_vote_stats": lambda v, t, g: {"ballots": t // 32, "flags": t // 32, "x": min(t, v["n"])},
    "divergent_syncwarp": lambda v, t, g: dict.fromkeys(("out", "in"), min(t, v["n"])),
}


@cache
def corpus_kernels() -> dict[str, Path]:
    """Launchable kernel name -> the sm_90 cubin that defines it."""
    found: dict[str, Path] = {}
    for cubin in sorted(CUBIN_DIR.glob("*.cubin")):
        for kernel in read_cubin(cubin).kernels:
            if kernel.is_entry:
                assert kernel.name not in found, f"kernel {kernel.name} defined twice"
                found[kernel.name] = cubin
    return found


def test_corpus_has_kernels():
    assert len(corpus_kernels()) >= 40


def test_every_corpus_kernel_has_a_spec_and_every_spec_a_kernel():
    assert sorted(p.stem for p in SPEC_PATHS) == sorted(corpus_kernels())


@pytest.mark.parametrize("path", SPEC_PATHS, ids=[p.stem for p in SPEC_PATHS])
def test_spec_parses_and_matches_its_kernel(path: Path):
    cubin = corpus_kernels().get(path.stem)
    assert cubin is not None, f"{path.name}: no kernel '{path.stem}' in {CUBIN_DIR}"
    spec = validated_spec(path, [cubin])  # raises SpecError / InputError on any mismatch
    assert spec.name == path.stem
    assert spec == load_spec(path)
    assert sum(b.nbytes for b in spec.buffers) <= MAX_SPEC_BYTES


@pytest.mark.parametrize("path", SPEC_PATHS, ids=[p.stem for p in SPEC_PATHS])
def test_spec_header_comment(path: Path):
    """A spec opens with a comment describing the workload; a nondeterminism marker, if any, comes first."""
    lines = path.read_text(encoding="utf-8").splitlines()
    header = []
    for line in lines:
        if not line.startswith("#"):
            break
        header.append(line)
    assert header, f"{path.name}: no leading comment describing the workload"
    description = [h for h in header if not h.startswith(NONDET_PREFIX)]
    assert description, f"{path.name}: leading comment has only the nondeterminism marker"
    marked = [i for i, h in enumerate(lines) if h.startswith(NONDET_PREFIX)]
    assert marked in ([], [0]), f"{path.name}: '{NONDET_PREFIX}' must be the first line, at most once"
    if marked:
        assert lines[0][len(NONDET_PREFIX) :].strip(), f"{path.name}: nondeterminism marker without a reason"


@pytest.mark.parametrize("path", SPEC_PATHS, ids=[p.stem for p in SPEC_PATHS])
def test_spec_inputs_draw(path: Path):
    """Input set 0 can be drawn: every buffer has its declared shape and dtype, inputs are finite."""
    spec = load_spec(path)
    values = draw_inputs(spec, 0)
    assert list(values) == [p.name for p in spec.params]
    for p in spec.buffers:
        arr = values[p.name]
        assert arr.shape == p.shape and arr.dtype == np.dtype(p.dtype)
        if p.role != "out" and arr.dtype.kind == "f":
            assert np.isfinite(arr).all(), f"{path.name}: input '{p.name}' has non-finite values"
    for p in spec.params:
        if not isinstance(p, BufferParam):
            assert values[p.name].dtype == np.dtype(p.dtype)


def _pow2(x: int) -> bool:
    return x > 0 and x & (x - 1) == 0


def _whole_warps(bx: int, by: int, gx: int, sh: int) -> bool:
    return bx % 32 == 0


# Launch-shape assumptions the sources make (shared array sizes, warp-wide shuffles).
# f(block.x, block.y, grid.x, dynamic shared bytes) -> True when the launch is valid.
LAUNCH_RULES = {
    "block_reduce_sum": lambda bx, by, gx, sh: _pow2(bx) and bx <= 1024,  # smem[1024] tree
    "dyn_shared_reduce": lambda bx, by, gx, sh: _pow2(bx) and bx >= 64 and sh >= 4 * bx,  # dsm[blockDim]
    "ddot_partial": lambda bx, by, gx, sh: _pow2(bx) and bx <= 256,  # sm[256] tree
    "last_block_sum": lambda bx, by, gx, sh: _pow2(bx) and bx <= 256,  # sm[256] tree
    "hillis_steele_exclusive": lambda bx, by, gx, sh: bx <= 512,  # buf[2][512]
    "sgemm_tile16": lambda bx, by, gx, sh: (bx, by) == (16, 16),  # TILE = 16
    "flag_handoff": lambda bx, by, gx, sh: gx >= 2,  # block 1 waits for block 0
    "rmsnorm_rows": _whole_warps,
    "softmax_rows": _whole_warps,
    "block_inclusive_scan": _whole_warps,
    "warp_reduce_atomic": _whole_warps,
    "warp_allreduce_max": _whole_warps,
    "warp_vote_stats": _whole_warps,
    "divergent_syncwarp": _whole_warps,
}


@pytest.mark.parametrize("path", SPEC_PATHS, ids=[p.stem for p in SPEC_PATHS])
def test_spec_launch_shape_fits_kernel_assumptions(path: Path):
    spec = load_spec(path)
    if spec.name != "sgemm_tile16":
        assert spec.block[1:] == (1, 1) and spec.grid[1:] == (1, 1), f"{path.name}: 1-D kernel, 1-D launch expected"
    rule = LAUNCH_RULES.get(spec.name)
    if rule is not None:
        assert rule(spec.block[0], spec.block[1], spec.grid[0], spec.shared), (
            f"{path.name}: launch shape breaks the kernel"
        )


def test_every_spec_has_an_extent_rule():
    assert sorted(EXTENTS) == sorted(p.stem for p in SPEC_PATHS)


@pytest.mark.parametrize("path", SPEC_PATHS, ids=[p.stem for p in SPEC_PATHS])
def test_spec_buffers_cover_what_the_kernel_touches(path: Path):
    """No buffer is smaller than what the kernel's indexing reaches for this launch (no GPU fault)."""
    spec = load_spec(path)
    scalars = {p.name: p.value for p in spec.params if not isinstance(p, BufferParam)}
    threads = int(np.prod(spec.grid)) * int(np.prod(spec.block))
    need = EXTENTS[spec.name](scalars, threads, spec.grid[0])
    assert set(need) == {b.name for b in spec.buffers}
    for b in spec.buffers:
        assert b.size >= need[b.name], (
            f"{path.name}: buffer '{b.name}' has {b.size} elements, kernel reaches {need[b.name]}"
        )
