"""tune and verify (reorder.triton.tune) end to end on the CPU: a Triton kernel compiled for
sm_90 from stand-in tensors, its launch built from metadata and validated by `optimize`
against the cubin, the static search, the winner stored by content, the marked config
compiled through the hook into exactly that winner, and verify's static half."""

from __future__ import annotations

import pytest

from reorder.triton.request import Request, split_options
from reorder.triton.tune import label_of, marked_config, with_reorder

triton = pytest.importorskip("triton")


@pytest.fixture
def triton_env(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    previous = triton.knobs.runtime.add_stages_inspection_hook
    yield tmp_path
    triton.knobs.runtime.add_stages_inspection_hook = previous


def test_with_reorder_adds_a_marked_twin_of_each_config_for_the_autotuner():
    configs = [
        triton.Config({"BLOCK": 1024}, num_warps=4),
        triton.Config({"BLOCK": 2048, "ptx_options": "-O3"}, num_warps=8),
    ]
    from reorder.triton.digest import code_digest

    axis = with_reorder(configs, Request("search", budget=4))
    assert axis[:2] == configs and len(axis) == 4
    rev = code_digest()[:12]  # Triton 3.6 keys its cache by ptx_options, not by the hook: the marker names reorder
    assert axis[3].kwargs == {"BLOCK": 2048, "ptx_options": f"-O3 --reorder=search:4,rev:{rev}"}
    assert axis[3].num_warps == 8
    assert configs[1].kwargs["ptx_options"] == "-O3"  # the originals are not touched
    assert marked_config({"num_warps": 4}, Request()) == {"num_warps": 4, "ptx_options": "--reorder"}
    assert label_of(axis[3].all_kwargs()) == "BLOCK2048-num_ctas1-num_stages3-num_warps8"


def test_tune_runs_the_search_on_a_launch_from_metadata_and_the_hook_serves_its_winner(triton_env):
    from reorder.suite.triton_kernels import family, stand_in_args
    from reorder.triton import install
    from reorder.triton.compile import compile_call
    from reorder.triton.prove import verify
    from reorder.triton.rewrite import tuned_binary
    from reorder.triton.tune import tune

    fam = family("rmsnorm_row_fp16")
    case = fam.case((16, 4096))
    args = stand_in_args(case)
    result = tune(
        case.kernel,
        *args,
        grid=case.grid,
        configs=[{"num_warps": 4}],
        budget=1,
        seconds=300,
        arch=90,
        device="cpu",
        outputs=case.outputs,
        folder=triton_env / "tune",
        **case.constexprs,
    )
    (row,) = result.rows
    assert not row.measured and "predicted" in row.score
    assert (row.folder / "launch.toml").is_file() and (row.folder / "reorder.reorder" / "report.md").is_file()
    request, _ = split_options(row.marked["ptx_options"])
    assert request == Request("tuned", key=row.key)
    assert result.configs == [{"num_warps": 4}, row.marked]
    original = compile_call(case.kernel, *args, arch=90, **case.constexprs, num_warps=4).cubin
    install(say=None)
    served = compile_call(case.kernel, *args, arch=90, **case.constexprs, **row.marked).cubin
    assert served == tuned_binary(original, row.key) and (served != original) == row.changed
    (checked,) = verify(
        case.kernel, *args, grid=case.grid, arch=90, outputs=case.outputs, **case.constexprs, **row.marked
    )
    assert checked.same_binary == (not row.changed)
    assert checked.ok if checked.same_binary else (checked.legal and checked.check.startswith("not checked: no GPU"))
    assert "Triton's PTX, compiled as the config is" in row.ptx  # the search spanned the PTX moves


def test_verify_needs_a_marked_config(triton_env):
    from reorder.base.errors import InputError
    from reorder.suite.triton_kernels import family, stand_in_args
    from reorder.triton.prove import verify

    case = family("rmsnorm_row_fp32").case((16, 4096))
    with pytest.raises(InputError, match="no reorder marker"):
        verify(case.kernel, *stand_in_args(case), grid=case.grid, arch=90, **case.constexprs, num_warps=4)


def test_verify_checks_every_twin_the_autotuner_may_pick_and_names_its_plain_pick(triton_env):
    """The autotuner chose the plain config: every twin is still a build it may pick at another
    key, so each is checked (here: kept the compiler's cubin, or not checked without a GPU)."""
    from reorder.suite.triton_kernels import family, stand_in_args
    from reorder.triton.prove import verify

    case = family("rmsnorm_row_fp32").case((16, 4096))
    tuner = triton.autotune(configs=with_reorder([triton.Config({}, num_warps=4)], twins=0), key=[])(case.kernel)
    tuner.best_config = tuner.configs[0]  # what a run leaves: the autotuner chose the plain config
    checked = verify(tuner, *stand_in_args(case), grid=case.grid, arch=90, **case.constexprs)
    assert len(checked) == 1 and checked[0].request == "moves" and not checked[0].chosen
    assert "Triton's own build" in checked.chosen
