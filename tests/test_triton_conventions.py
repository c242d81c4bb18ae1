"""Triton's autotuning conventions through the one line (`rt.with_reorder`, the stages hook,
`rt.verify`): each is either respected or refused in one line. Through Triton's own compile
for sm_90 without a GPU, on the small `tl.range` row sum under `@triton.heuristics`
(tests.triton_twin_kernels), its twin list built from one loop menu.

Covered elsewhere: `@triton.heuristics` values (test_triton_twins, the hook's test and the
failing-heuristic line), `prune_configs_by` through `rt.pruned` and `num_ctas` (a cluster
config gets no twin, one line) in test_triton_twins."""

from __future__ import annotations

import pytest

from reorder.triton import twins
from reorder.triton.tune import _unmarked, twin_of, with_reorder

triton = pytest.importorskip("triton")


@pytest.fixture
def triton_env(tmp_path, monkeypatch):
    """Private Triton and reorder caches, the hook slot restored, one loop menu (the whole
    space takes a minute per config)."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    monkeypatch.setenv("REORDER_CACHE", str(tmp_path / "reorder-cache"))
    monkeypatch.setattr(twins, "MENUS", (twins.Menu("loop:unroll2", (("loop", "unroll2"),)),))
    previous = triton.knobs.runtime.add_stages_inspection_hook
    yield tmp_path
    triton.knobs.runtime.add_stages_inspection_hook = previous


def _args(n: int = 4096):
    from reorder.suite.triton_kernels import StandInTensor, TensorArg

    return StandInTensor(TensorArg((64, n), "float32"), 0x10000), StandInTensor(TensorArg((64,), "float32"), 0x20000), n


def _pending(monkeypatch) -> list:
    """Capture what rt.verify would send to the GPU (its launch specs) instead of sending it."""
    import reorder.triton.prove as prove

    seen: list = []

    def capture(rows, pending, sets, pool=None):
        seen.extend(pending)
        return rows

    monkeypatch.setattr(prove, "_checked", capture)
    return seen


def test_a_twin_keeps_every_setting_of_its_config_but_the_marker():
    """num_warps, num_stages, num_ctas, maxnreg, the kwargs and the config's own pre_hook are the
    original's, so Triton's key, its pruning and its hooks treat the twin as the config it is."""

    def hook(nargs):
        return None

    config = triton.Config({"BLOCK": 256}, num_warps=8, num_stages=2, maxnreg=128, pre_hook=hook)
    original, *marked = with_reorder([config])
    assert original is config and marked and all(twin_of(t) for t in marked)
    for twin in marked:
        assert twin.pre_hook is hook
        assert (twin.num_warps, twin.num_stages, twin.num_ctas, twin.maxnreg) == (8, 2, 1, 128)
        assert _unmarked(twin.all_kwargs()) == config.all_kwargs()
    assert "ptx_options" not in config.all_kwargs()  # the user's config is not touched


def test_rt_verify_clears_reset_to_zero_buffers_and_names_python_hooks_it_cannot_replay(triton_env, monkeypatch):
    """reset_to_zero buffers are cleared before every launch of both builds (their role in the
    launch spec); an autotuner's pre_hook, or a config's own, leaves the build "not checked" with
    the reason, and the verification not ok."""
    import reorder.triton as rt
    from tests.triton_twin_kernels import row_sums

    rt.install(say=None)
    configs = [triton.Config({"BLOCK": 256}, num_warps=1)]
    axis = rt.with_reorder(configs, rt.Request(noalias=True), twins=1)
    pending = _pending(monkeypatch)
    zeroed = triton.autotune(axis, key=["n"], reset_to_zero=["y_ptr"], restore_value=["x_ptr"])(row_sums)
    (row,) = rt.verify(zeroed, *_args(), grid=(64,), arch=90)
    assert not row.same_binary and row.legal
    ((_, _, _, spec),) = pending
    assert [b.name for b in spec.zeros] == ["y_ptr"]

    hooked = triton.autotune(axis, key=["n"], pre_hook=lambda args, reset_only=False: None)(row_sums)
    checked = rt.verify(hooked, *_args(), grid=(64,), arch=90)
    assert checked[0].check.startswith("not checked: the autotuner has a pre_hook or post_hook")
    assert not checked.ok

    own = [triton.Config({"BLOCK": 256}, num_warps=1, pre_hook=lambda nargs: None)]
    mine = triton.autotune(rt.with_reorder(own, rt.Request(noalias=True), twins=1), key=["n"])(row_sums)
    assert rt.verify(mine, *_args(), grid=(64,), arch=90)[0].check.startswith("not checked: the config has a pre_hook")


def test_each_specialization_of_a_config_gets_the_twin_made_from_its_own_cubin(triton_env):
    """Triton specializes a config on its ints (equal to 1: a constexpr the cubin does not take;
    divisible by 16) and on its heuristics' values; the twin list is keyed by the cubin, so each
    specialization's twin is built from, and verified against, that specialization's own cubin,
    and the launch spec leaves out the int Triton made a constant."""
    import reorder.triton as rt
    from reorder.triton.compile import compile_call
    from reorder.triton.launch import launch_spec
    from tests.triton_twin_kernels import row_sums

    rt.install(say=None)
    plain_cfg, twin_cfg = rt.with_reorder(
        [triton.Config({"BLOCK": 256}, num_warps=1)], rt.Request(noalias=True), twins=1
    )
    calls = {}
    for n in (4096, 4104):  # 4104: not a multiple of 16, nor of BLOCK
        plain = compile_call(row_sums, *_args(n), arch=90, **plain_cfg.all_kwargs())
        twin = compile_call(row_sums, *_args(n), arch=90, **twin_cfg.all_kwargs())
        calls[n] = (plain, twin)
        (first,) = twins.ranked(plain.cubin, plain.kernel.asm["ptx"], None, True)[:1]
        assert twin.cubin == first.data != plain.cubin  # made from this specialization's cubin
    assert calls[4096][0].cubin != calls[4104][0].cubin and calls[4096][1].cubin != calls[4104][1].cubin
    assert calls[4096][0].values["EVEN_N"] is True and calls[4104][0].values["EVEN_N"] is False
    one = compile_call(row_sums, *_args(1), arch=90, **plain_cfg.all_kwargs())
    assert "n" not in [p.name for p in launch_spec(one.kernel, one.values, (64,)).params]
    assert "n" in [p.name for p in launch_spec(calls[4104][0].kernel, calls[4104][0].values, (64,)).params]


def test_rt_verify_runs_each_configs_pre_hook_before_compiling_it(triton_env):
    """Host TMA descriptors take their block shape from a config's pre_hook; rt.verify runs
    the hook before compiling each config, as the autotuner does before its launches, so each
    build is compiled with its own shapes (before, every config was compiled with the last
    hook's descriptors: a shape mismatch in Triton's front end). A descriptor's base is a
    torch tensor: without torch (the CI host) this is skipped."""
    torch = pytest.importorskip("torch")
    from triton.tools.tensor_descriptor import TensorDescriptor

    import reorder.triton as rt
    from tests.triton_twin_kernels import copy_tiles

    def shape_tiles(nargs):
        for name in ("src_desc", "dst_desc"):
            nargs[name].block_shape = [nargs["BLOCK"], 64]

    rt.install(say=None)
    configs = [triton.Config({"BLOCK": b}, num_warps=4, pre_hook=shape_tiles) for b in (32, 64)]
    kernel = triton.autotune(rt.with_reorder(configs, rt.Request(noalias=True), twins=1), key=[])(copy_tiles)
    src, dst = torch.zeros(256, 64), torch.zeros(256, 64)
    descs = [TensorDescriptor(t, list(t.shape), list(t.stride()), [64, 64]) for t in (src, dst)]
    checked = rt.verify(kernel, *descs, grid=(4,), arch=90)
    assert len(checked) == 2 and all(v.legal for v in checked), checked.table()
    assert descs[0].block_shape == [64, 64]  # the last config's hook ran last
