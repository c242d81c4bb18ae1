"""GPU tests of the Triton benchmark's device side: Triton's JIT against reorder's launch from
metadata (the checked-in builds with more than 48 KiB of dynamic shared memory), the many-way
byte check and the many-build timing on two num_warps configs that cannot share one spec."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

pytest.importorskip("triton")

from timing.multi import Build  # noqa: E402 - after the skip: no Triton, nothing to import
from timing.spec import load_spec  # noqa: E402

BUILT = Path(__file__).resolve().parents[2] / "reorder" / "suite" / "triton_kernels" / "sm_90"


def _hooked(tmp_path, monkeypatch) -> None:
    """Private Triton and reorder caches, and reorder's stages hook installed (the hook slot
    restored after the test)."""
    import triton

    import reorder.triton as rt

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    monkeypatch.setenv("REORDER_CACHE", str(tmp_path / "reorder-cache"))
    from triton.runtime.autotuner import Autotuner

    runtime = triton.knobs.runtime
    monkeypatch.setattr(runtime, "add_stages_inspection_hook", runtime.add_stages_inspection_hook)
    monkeypatch.setattr(Autotuner, "_bench", Autotuner._bench)
    rt.install(say=None)


def test_tritons_jit_and_reorders_launch_from_metadata_give_the_same_bytes():
    """Every checked-in build that needs more than 48 KiB of dynamic shared memory (the opt-in
    attribute path), at the family's tune shape and the config it was built with."""
    from reorder.suite.triton_jobs import jit_job
    from reorder.suite.triton_kernels import FAMILIES
    from reorder.suite.triton_kernels.build import CONFIG_INDEX

    large = [f for f in FAMILIES if load_spec(BUILT / f"{f.name}.toml").shared > 48 * 1024]
    assert large  # the matmul (65,536 bytes at 4 stages) at least
    for fam in large:
        cubin = BUILT / f"{fam.name}.cubin"
        build = Build(fam.name, str(cubin), load_spec(cubin.with_suffix(".toml")))
        row = jit_job(fam.name, fam.tune_shape, fam.configs[CONFIG_INDEX], build)
        assert row["launch_outputs"] == "identical" and row["math_ok"] and row["jit_same_code"] in (True, "True"), (
            fam.name
        )


def test_two_num_warps_builds_are_checked_and_timed_in_the_same_rounds(tmp_path):
    from reorder.suite.triton_kernels import family, stand_in_args
    from reorder.triton.compile import compile_call
    from reorder.triton.launch import launch_spec
    from timing.inputs import draw_inputs
    from timing.multi import time_builds
    from timing.multi_check import check_builds

    fam = family("rmsnorm_row_fp16")
    case = fam.case((1024, 4096))
    builds = []
    for warps in (2, 8):
        call = compile_call(case.kernel, *stand_in_args(case), **case.constexprs, num_warps=warps)
        path = tmp_path / f"w{warps}.cubin"
        path.write_bytes(call.cubin)
        builds.append(
            Build(f"w{warps}", str(path), launch_spec(call.kernel, call.values, case.grid, outputs=case.outputs))
        )
    assert builds[0].spec.block != builds[1].spec.block
    twin = tmp_path / "twin.cubin"
    twin.write_bytes(Path(builds[0].cubin).read_bytes())
    checked = check_builds(builds[0], [Build("twin", str(twin), builds[0].spec)], sets=2)
    assert checked["twin"]["check"] == "identical"
    for l2 in ("warm", "cold"):
        timed = time_builds(builds, draw_inputs(builds[0].spec, 0), l2=l2, budget_s=0.3)
        assert timed["times"].shape[1] == 2 and timed["rounds"] >= 10 and (timed["times"] > 0).all()


@pytest.mark.parametrize("shape", [(128, 512, 64), (512, 512, 1024)])
def test_the_hooks_feed_forward_twin_is_byte_identical(shape, tmp_path, monkeypatch):
    """The `moves` path on the kernel ptxas serializes: the wgmma PTX step, then the SASS
    moves; rt.verify rebuilds the twin and the plain build and byte-checks them on fresh
    inputs (K = 64: the loop runs once, the exit right after the first iteration)."""
    import torch
    import triton

    import reorder.triton as rt
    from reorder.suite.triton_kernels.ffn import ffn_swiglu

    _hooked(tmp_path, monkeypatch)
    m, n, k = shape
    config = triton.Config({"BM": 64, "BN": 64, "BK": 64}, num_warps=4, num_stages=3)
    marked = rt.with_reorder([config], rt.Request(noalias=True))[1]  # the config's twin
    half = {"device": "cuda", "dtype": torch.float16}
    args = (
        torch.randn(m, k, **half),
        torch.randn(k, **half),
        torch.randn(k, n, **half) * k**-0.5,
        torch.randn(k, n, **half) * k**-0.5,
        torch.empty(m, n, **half),
        m,
        n,
        k,
        k,
        n,
        n,
        1e-5,
    )
    kernel = triton.autotune([marked], key=["M", "N", "K"])(ffn_swiglu)
    grid = ((m // 64) * (n // 64),)
    kernel[grid](*args)
    (checked,) = rt.verify(kernel, *args, grid=grid, outputs=["out_ptr"])
    assert not checked.same_binary and checked.legal and checked.check == "identical", checked


def test_the_one_line_under_heuristics_verifies_every_twin_on_the_gpu(tmp_path, monkeypatch):
    """autotune(rt.with_reorder(configs))(heuristics(jit)) runs, and rt.verify byte-checks
    every twin against its plain config on fresh inputs: ok means each one was the compiler's
    binary or identical on the GPU."""
    import torch
    import triton

    import reorder.triton as rt
    from tests.triton_twin_kernels import row_sums

    _hooked(tmp_path, monkeypatch)
    configs = [triton.Config({"BLOCK": 256}, num_warps=w) for w in (1, 4)]
    kernel = triton.autotune(rt.with_reorder(configs, rt.Request(noalias=True)), key=["n"])(row_sums)
    x = torch.randn(64, 4096, device="cuda")
    y = torch.empty(64, device="cuda")
    kernel[(64,)](x, y, 4096)
    torch.testing.assert_close(y, x.sum(dim=1), rtol=1e-4, atol=1e-3)
    checked = rt.verify(kernel, x, y, 4096, grid=(64,), outputs=["y_ptr"])
    assert len(checked) == 6 and checked.ok, checked.table()
    assert any(v.check == "identical" and "fresh input set" in v.detail for v in checked)


def test_a_noalias_twin_refuses_an_in_place_launch(tmp_path, monkeypatch):
    """The one line with noalias on a launch whose output is a view of its input: the twins'
    guard stops it in one line (reorder.triton.aliasing) before any twin runs on the aliased
    buffers; the same autotuner on separate buffers runs."""
    import torch
    import triton

    import reorder.triton as rt
    from reorder.base.errors import InputError
    from tests.triton_twin_kernels import row_sums

    _hooked(tmp_path, monkeypatch)
    configs = [triton.Config({"BLOCK": 256}, num_warps=4)]
    kernel = triton.autotune(rt.with_reorder(configs, rt.Request(noalias=True)), key=["n"])(row_sums)
    x = torch.randn(64, 4096, device="cuda")
    with pytest.raises(InputError, match="x_ptr and y_ptr share memory"):
        kernel[(64,)](x, x[:, 0], 4096)  # y is the first column of x
    y = torch.empty(64, device="cuda")
    kernel[(64,)](x, y, 4096)
    torch.testing.assert_close(y, x.sum(dim=1), rtol=1e-4, atol=1e-3)


def test_read_only_arguments_may_share_a_tensor_under_noalias(tmp_path, monkeypatch):
    """Two inputs given the same tensor break no promise a move relies on (the kernel writes
    neither: reorder.triton.written reads its source through the autotuner calling the
    guard); the output given an input's tensor does, and is refused."""
    import torch
    import triton

    import reorder.triton as rt
    from reorder.base.errors import InputError
    from tests.triton_twin_kernels import add_rows

    _hooked(tmp_path, monkeypatch)
    configs = [triton.Config({"BLOCK": 256}, num_warps=4)]

    def tuned():  # a fresh autotuner: its first launch times (and so guards) every twin
        return triton.autotune(rt.with_reorder(configs, rt.Request(noalias=True)), key=["n"])(add_rows)

    x, out = torch.randn(64, 4096, device="cuda"), torch.empty(64, 4096, device="cuda")
    tuned()[(64,)](x, x, out, 4096)
    torch.testing.assert_close(out, 2 * x)
    with pytest.raises(InputError, match="y_ptr and out_ptr share memory"):
        tuned()[(64,)](torch.randn_like(x), x, x, 4096)


def test_an_in_place_loop_moved_is_byte_identical(tmp_path):
    """A kernel that overwrites its rows chunk by chunk: Prefetch 2 and UnrollBatch 4 on its
    loop (loads run rounds early past stores to the same pointer, by the affine address
    proof), compiled by the config's own cubin stage, give the plain build's bytes."""
    import torch

    from reorder.ptx.model.model import parse_module
    from reorder.ptx.moves.prefetch import Prefetch, in_place_loops
    from reorder.ptx.moves.unroll import UnrollBatch
    from reorder.triton.compile import compile_call, cubin_stage
    from reorder.triton.launch import launch_spec
    from tests.triton_twin_kernels import scale_in_place
    from timing.multi_check import check_builds

    x = torch.randn(64, 5000, device="cuda")
    options = {"BLOCK": 512, "num_warps": 4}
    call = compile_call(scale_in_place, x, 5000, **options)
    module = parse_module(call.kernel.asm["ptx"])
    kernel = module.kernels[0]
    (loop,) = in_place_loops(kernel, True)
    spec = launch_spec(call.kernel, call.values, (64,), outputs=[])
    plain = tmp_path / "plain.cubin"
    plain.write_bytes(call.cubin)
    builds = []
    for k, move in enumerate((Prefetch(kernel.name, loop, 2, True), UnrollBatch(kernel.name, loop, 4, True))):
        path = tmp_path / f"moved{k}.cubin"
        path.write_bytes(cubin_stage(move.apply(module).text, {"num_warps": 4}, 90))
        builds.append(Build(move.describe(), str(path), spec))
    checked = check_builds(Build("plain", str(plain), spec), builds, sets=3)
    assert all(v["check"] == "identical" for v in checked.values()), checked


def test_paired_rounds_tell_a_launch_four_times_the_work_from_the_other():
    """The confirmation's rounds on the GPU (reorder.triton.confirm): the same kernel over N
    and over 4N elements, each as the other's twin."""
    import torch

    from reorder.triton import confirm
    from tests.triton_twin_kernels import add_rows

    small = [torch.randn(256, 4096, device="cuda") for _ in range(3)]
    large = [torch.randn(1024, 4096, device="cuda") for _ in range(3)]

    def launch(t):
        return lambda: add_rows[(t[0].shape[0],)](t[0], t[1], t[2], 4096, BLOCK=1024)

    rounds = confirm.paired_rounds(launch(large), launch(small))
    assert len(rounds) >= confirm.MIN_ROUNDS and all(t > 0 for r in rounds for t in r)
    assert confirm.judge(rounds).keeps  # the twin (N) beats its config (4N)
    assert not confirm.judge(confirm.paired_rounds(launch(small), launch(large))).keeps


def test_the_autotuner_confirms_a_twin_that_beats_its_config(tmp_path, monkeypatch):
    """Under rt.install, a twin whose do_bench time beats its config's is timed against it in
    paired rounds before the autotuner compares: a do_bench that favours every later config
    makes each twin beat its config, and the autotuner still runs and computes the sums."""
    import torch
    import triton

    import reorder.triton as rt
    from reorder.triton import confirm
    from tests.triton_twin_kernels import row_sums

    _hooked(tmp_path, monkeypatch)
    asked = []
    real = confirm.paired_rounds

    def spy(config_call, twin_call):
        asked.append(1)
        return real(config_call, twin_call)

    monkeypatch.setattr(confirm, "paired_rounds", spy)
    clock = iter(range(100, 0, -1))

    def later_is_faster(fn, quantiles=None):
        fn()
        t = float(next(clock))
        return [t, t, t]

    configs = [triton.Config({"BLOCK": 256}, num_warps=4)]
    kernel = triton.autotune(rt.with_reorder(configs, rt.Request(noalias=True)), key=["n"], do_bench=later_is_faster)(
        row_sums
    )
    x = torch.randn(64, 4096, device="cuda")
    y = torch.empty(64, device="cuda")
    kernel[(64,)](x, y, 4096)
    torch.testing.assert_close(y, x.sum(dim=1), rtol=1e-4, atol=1e-3)
    assert len(asked) == 3  # each of the three twins beat its config and was judged
