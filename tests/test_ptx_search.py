"""The search over both levels: PTX picks as conditional Optuna parameters,
rebuilt from a finished trial's parameters; every PTX candidate compiled by the producer's
ptxas and verified, SASS families on top; `reorder optimize` on .ptx, .cu and a cubin with
--ptx, and on a plain cubin the report says PTX moves were unavailable."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import optuna
import pandas as pd
import ptx_sources  # tests/ptx_sources.py
import pytest

from reorder.binary.tools import have_tool
from reorder.build.ptxlevel import PtxLevel, build, off_params, picks_of, seed_params
from reorder.build.space import Choice, SearchSpace
from reorder.cli.main import main
from reorder.ptx.space.registry import OFF, Pick
from reorder.search.study import choice_of, suggest

needs_ptxas = pytest.mark.skipif(not have_tool("ptxas"), reason="needs ptxas")

# x[tid+1] and x[tid+2] read after the block's barrier, in an `if`; the kernel writes only y:
# under no-alias both loads may rise above bar.sync (reorder.ptx.analyses.memory), predicated.
BODY = """
	ld.global.f32 	%f1, [%rd6];
	st.shared.f32 	[smem], %f1;
	bar.sync 	0;
	setp.ne.s32 	%p1, %r1, 0;
	@%p1 bra 	$L__BB0_2;
	ld.shared.f32 	%f2, [smem+4];
	ld.global.f32 	%f3, [%rd6+4];
	ld.global.f32 	%f5, [%rd6+8];
	add.f32 	%f4, %f2, %f3;
	add.f32 	%f6, %f4, %f5;
	st.global.f32 	[%rd7], %f6;
$L__BB0_2:
"""


@pytest.fixture
def ptx(tmp_path) -> Path:
    path = tmp_path / "k.ptx"
    path.write_text(ptx_sources.kernel(BODY))
    return path


def _level(path: Path, noalias: bool = True) -> PtxLevel:
    return PtxLevel(str(path), "k", noalias, "nvcc")


def test_choices_with_ptx_picks_label_and_prune():
    choice = Choice(ptx=(Pick("peel", "$L__BB0_3", "on"), Pick("hoist", "12p", "top")), sass="sc")
    assert choice.moves() == [("ptx", 0), ("ptx", 1), ("sass", 0)]
    assert choice.without("ptx", 0).ptx == (Pick("hoist", "12p", "top"),)
    assert choice.without("sass", 0).sass == ""
    assert "hoist:12p@top" in choice.label() and "SASS sc" in choice.label()


def test_a_trial_with_ptx_picks_rebuilds_from_its_parameters(ptx):
    level = _level(ptx)
    space = SearchSpace((), (), (), (), ptx=level)
    seeds = seed_params(level)
    assert seeds and all(s["sass"] in ("none", "sc") for s in seeds)
    for params in seeds:
        choice = suggest(optuna.trial.FixedTrial(params), space)
        assert choice.ptx and choice == choice_of(params, space)
    plain = suggest(optuna.trial.FixedTrial(off_params(level)), space)
    assert plain.ptx == () and plain.sass == ""  # every PTX decision off: the SASS-only search


def test_without_noalias_nothing_crosses_the_barrier(ptx):
    level = _level(ptx, noalias=False)
    assert not any("barrier" in name for name in off_params(level))


@needs_ptxas
def test_every_seed_builds_and_verifies(ptx):
    """Each seed: PTX moved, ptxas, verified; with 'sc' the stall cuts on ptxas's build too."""
    level = _level(ptx)
    for params in seed_params(level):
        made = build(level, picks_of(params, level), "" if params["sass"] == "none" else params["sass"])
        assert made.data is not None, made.reason
        assert any("barrier" in a for a in made.applied)


@needs_ptxas
def test_a_pick_that_changes_nothing_is_a_build_failure_not_a_crash(ptx):
    made = build(_level(ptx), (Pick("hoist", "999", "top"),), "")
    assert made.data is None and made.reason.startswith("ptx:")


def _optimize(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "reorder", "optimize", *args, "--device", "cpu", "--jobs", "1", "--no-contributions"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@needs_ptxas
def test_optimize_on_ptx_searches_both_levels(ptx, tmp_path):
    out = tmp_path / "fast.cubin"
    done = _optimize(str(ptx), "-o", str(out), "--budget", "3", "--assume-noalias")
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "fast.reorder"
    report = (folder / "report.md").read_text()
    assert "PTX moves (nvcc PTX" in report
    trials = pd.read_csv(folder / "trials.csv")
    ptx_trials = trials[trials["moves"].str.startswith("PTX")]
    assert (ptx_trials["state"] == "COMPLETE").any()  # the first seed: the loads above the barrier
    if "PTX moves of the winner" in report:
        assert "bar.sync" in (folder / "ptx.diff").read_text()


@needs_ptxas
def test_optimize_on_a_cubin_with_its_ptx(ptx, tmp_path):
    cubin = tmp_path / "k.cubin"
    subprocess.run(["ptxas", "-O3", "-arch=sm_90", str(ptx), "-o", str(cubin)], check=True)
    done = _optimize(
        str(cubin), "--ptx", str(ptx), "-o", str(tmp_path / "o.cubin"), "--budget", "1", "--assume-noalias"
    )
    assert done.returncode == 0, done.stderr
    assert "PTX moves (nvcc PTX" in (tmp_path / "o.reorder" / "report.md").read_text()


@needs_ptxas
def test_without_ptx_the_report_says_ptx_moves_were_unavailable(ptx, tmp_path):
    cubin = tmp_path / "k.cubin"
    subprocess.run(["ptxas", "-O3", "-arch=sm_90", str(ptx), "-o", str(cubin)], check=True)
    done = _optimize(str(cubin), "-o", str(tmp_path / "o.cubin"), "--budget", "1")
    assert done.returncode == 0, done.stderr
    report = (tmp_path / "o.reorder" / "report.md").read_text()
    assert "PTX moves: unavailable" in report
    assert "loops seen in the SASS" in report or "loops: none in the SASS" in report


@pytest.mark.skipif(not have_tool("nvcc"), reason="needs nvcc")
def test_optimize_takes_cuda_source_with_nvcc_flags(tmp_path):
    source = tmp_path / "k.cu"
    source.write_text(
        'extern "C" __global__ void scale(float* y, const float* x, int n) {\n'
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = 2.0f * x[i];\n}\n"
    )
    done = _optimize(
        str(source), "--nvcc-flags", "-O3 -arch=sm_90 -lineinfo", "-o", str(tmp_path / "o.cubin"), "--budget", "1"
    )
    assert done.returncode == 0, done.stderr
    assert "nvcc -ptx -O3 -arch=sm_90 -lineinfo" in done.stderr
    report = (tmp_path / "o.reorder" / "report.md").read_text()
    assert "compiled from" in report and "k.cu" in report


def test_bad_ptx_inputs_get_one_line(ptx, tmp_path, capsys):
    cubin = Path(__file__).resolve().parent / "corpus" / "cubin" / "sm_90" / "elementwise.cubin"
    junk = tmp_path / "junk.ptx"
    junk.write_text("not ptx at all\n")
    optimize_saxpy = ["optimize", str(cubin), "--kernel", "saxpy_grid_stride", "-o", str(tmp_path / "o.cubin")]
    optimize_saxpy += ["--device", "cpu", "--budget", "1"]
    assert main([*optimize_saxpy, "--ptx", str(junk)]) == 2
    assert "not a PTX file" in capsys.readouterr().err
    assert main([*optimize_saxpy, "--ptx", str(ptx)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "saxpy_grid_stride" in err  # the PTX has no such kernel
    bad = tmp_path / "bad.cu"
    bad.write_text("__global__ void k( {\n")
    assert main(["optimize", str(bad), "-o", str(tmp_path / "o.cubin"), "--device", "cpu"]) == 2
    assert "nvcc -ptx" in capsys.readouterr().err


def test_off_is_never_a_pick(ptx):
    level = _level(ptx)
    for params in seed_params(level):
        assert all(p.choice != OFF for p in picks_of(params, level))


@needs_ptxas
def test_a_triton_ptx_candidate_is_compiled_the_way_triton_compiles(tmp_path):
    """Triton's PTX: the seed's moves, then Triton's ptxas and flags (reorder.ptx.toolchain.compile), verified."""
    from reorder.binary.tools import triton_bin_dir
    from reorder.ptx.toolchain.compile import read_head, recipes

    source = Path(__file__).resolve().parent.parent / "reorder/suite/triton_kernels/sm_90/rmsnorm_looped_fp32.ptx"
    head = read_head(source.read_bytes())
    if not triton_bin_dir().is_dir():
        pytest.skip("Triton's ptxas is not installed")
    assert head.producer == "triton" and triton_bin_dir().resolve() in recipes(head)[0].ptxas.parents
    level = PtxLevel(str(source), "rmsnorm_looped", True, "triton")
    seeds = seed_params(level)
    assert seeds
    made = build(level, picks_of(seeds[0], level), "")
    assert made.data is not None, made.reason
    assert made.applied
