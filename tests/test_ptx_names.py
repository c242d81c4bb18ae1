"""`--ptx` beside a cubin finds the cubin's kernel in the PTX by name with nvcc's per-compile
anonymous-namespace suffix ignored (reorder.binary.anonymous, reorder.build.ptxnames), refuses
when that is ambiguous, and builds every PTX candidate under the cubin's symbol. The fixture is
an ATen-style kernel whose cubin and PTX come from two nvcc runs (tests/data/names/README.md)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from reorder.base.errors import InputError
from reorder.binary import anonymous
from reorder.binary.cubin import parse_cubin, read_cubin
from reorder.binary.tools import have_tool
from reorder.build.ptxcandidate import read_ptx
from reorder.build.ptxlevel import build, picks_of, ptx_level, seed_params
from reorder.build.ptxnames import kernel_in_ptx, renamed_entry
from reorder.cli.main import main
from reorder.ptx.model.model import parse_module

NAMES = Path(__file__).resolve().parent / "data" / "names"

CUBIN, PTX, SPEC = NAMES / "aten_style.cubin", NAMES / "aten_style.ptx", NAMES / "aten_style.toml"
needs_ptxas = pytest.mark.skipif(not have_tool("ptxas"), reason="needs ptxas")


def _symbols() -> tuple[str, str]:
    (kernel,) = read_cubin(CUBIN).kernels
    (function,) = read_ptx(PTX).kernels
    return kernel.name, function.name


def test_the_fixture_names_one_kernel_two_ways():
    in_cubin, in_ptx = _symbols()
    assert in_cubin != in_ptx and "_GLOBAL__N__" in in_cubin
    assert in_cubin.split("_GLOBAL__N__")[0] == in_ptx.split("_GLOBAL__N__")[0]


@pytest.mark.parametrize("demangler", [True, False])
def test_the_suffix_is_ignored_with_or_without_a_demangler(demangler, monkeypatch):
    in_cubin, in_ptx = _symbols()
    if not demangler:
        monkeypatch.setattr(anonymous, "demangle", lambda symbols: symbols)
    assert anonymous.same_kernel(in_cubin, [in_ptx, "_Z5otherPf"]) == [in_ptx]
    other = in_ptx.replace("16row_scale_kernel", "16row_shift_kernel")
    assert anonymous.same_kernel(in_cubin, [other]) == []  # another kernel of the namespace
    assert anonymous.same_kernel("_Z5otherPf", [in_ptx, "_Z5otherPf"]) == ["_Z5otherPf"]
    assert anonymous.same_kernel("_Z5otherPf", ["_Z5otherPi"]) == []  # no suffix: exact names only


def test_two_translation_units_of_one_signature_are_ambiguous():
    in_cubin, in_ptx = _symbols()
    text = PTX.read_text()
    twin = in_ptx.replace("7262a507_14537", "7262a507_99999")  # the same kernel from another file
    body = text[text.rindex("\n", 0, text.index(".entry")) :]
    both = parse_module(text + "\n" + body.replace(in_ptx, twin))
    assert len(both.kernels) == 2
    with pytest.raises(InputError, match=r"2 kernels match the cubin's .* once the anonymous-namespace suffix"):
        kernel_in_ptx(both, in_cubin, "--ptx x.ptx")


def test_a_kernel_the_ptx_lacks_is_one_line():
    with pytest.raises(InputError, match=r"--ptx x.ptx: no kernel .*rms_norm_f32.* in this PTX \(kernels: "):
        kernel_in_ptx(read_ptx(PTX), "_Z12rms_norm_f32ILi32EEvPKfPfif", "--ptx x.ptx")


def test_the_rename_touches_the_entry_and_its_parameters_only():
    in_cubin, in_ptx = _symbols()
    text = PTX.read_text()
    renamed = renamed_entry(text, in_ptx, in_cubin)
    assert in_ptx not in renamed and f"{in_cubin}_param_2" in renamed
    assert renamed.replace(in_cubin, in_ptx) == text


@needs_ptxas
def test_ptx_candidates_build_under_the_cubins_name():
    in_cubin, in_ptx = _symbols()
    level = ptx_level(PTX, in_cubin, True, 90)
    assert level.given == str(PTX.resolve()) and level.given_name == in_ptx
    assert "taken as the cubin's (anonymous-namespace suffix ignored)" in level.size_line()
    params = seed_params(level)[0]
    made = build(level, picks_of(params, level), "")
    assert made.data is not None, made.reason
    assert [k.name for k in parse_cubin(made.data).kernels] == [in_cubin]


@needs_ptxas
def test_optimize_with_a_separately_compiled_ptx(tmp_path):
    out = tmp_path / "fast.cubin"
    argv = ["optimize", str(CUBIN), "--ptx", str(PTX), "--launch", str(SPEC), "-o", str(out), "--device", "cpu"]
    assert main([*argv, "--budget", "3", "--jobs", "1", "--assume-noalias", "--no-contributions"]) == 0

    trials = pd.read_csv(tmp_path / "fast.reorder" / "trials.csv")
    moves = trials[next(c for c in trials.columns if c.endswith("moves"))]
    ptx_trials = trials[moves.str.startswith("PTX")]
    assert len(ptx_trials) and (ptx_trials["state"] == "COMPLETE").all()
