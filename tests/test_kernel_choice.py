"""The spec's kernel is the kernel (reorder.binary.kernelchoice): --kernel and the launch spec
must name the same kernel, a spec naming a kernel the cubin lacks is refused whatever --kernel
says, a cubin of several kernels with neither is refused with their names, and a part of a
name is taken only when unique, with the full name said. Fixtures: tests/data/names/README.md."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from reorder.base.errors import InputError
from reorder.binary.cubin import read_cubin
from reorder.binary.kernelchoice import choose_kernel
from reorder.cli.main import main
from timing.cli_support import validated_spec

NAMES = Path(__file__).resolve().parent / "data" / "names"
TWO = NAMES / "rms_norm_two.cubin"  # rms_norm_f32<1024> first, rms_norm_f32<32> second
SPEC_32 = NAMES / "rms_norm_32.toml"
SPEC_1024 = NAMES / "rms_norm_1024.toml"
K32, K1024 = "_Z12rms_norm_f32ILi32EEvPKfPfif", "_Z12rms_norm_f32ILi1024EEvPKfPfif"


def test_the_fixture_names_the_second_kernel():
    assert [k.name for k in read_cubin(TWO).kernels] == [K1024, K32]


def test_the_spec_names_the_kernel():
    assert choose_kernel(read_cubin(TWO), None, "rms_norm_f32<32>").name == K32
    assert validated_spec(SPEC_32, [TWO]).name == K32


def test_kernel_and_spec_must_agree():
    cubin = read_cubin(TWO)
    assert choose_kernel(cubin, K32, "rms_norm_f32<32>").name == K32
    with pytest.raises(InputError, match=r"--kernel 'rms_norm_f32<1024>' names .* but .* names "):
        choose_kernel(cubin, "rms_norm_f32<1024>", "rms_norm_f32<32>")
    with pytest.raises(InputError, match="make the two agree"):
        validated_spec(SPEC_32, [TWO], K1024)


def test_a_spec_naming_a_missing_kernel_is_refused_whatever_kernel_says(tmp_path):
    spec = tmp_path / "gone.toml"
    spec.write_text(SPEC_32.read_text().replace('"rms_norm_f32<32>"', '"rms_norm_f32<64>"'))
    for given in (None, K32, "rms_norm_f32<1024>"):
        with pytest.raises(InputError, match=r"gone.toml \(kernel 'rms_norm_f32<64>'\).*no kernel named"):
            validated_spec(spec, [TWO], given)


def test_neither_on_several_kernels_refuses_and_lists_them():
    with pytest.raises(InputError, match=r"holds 2 kernels .*rms_norm_f32<1024>.*rms_norm_f32<32>.*--kernel"):
        choose_kernel(read_cubin(TWO), None)


def test_a_part_of_a_name_is_taken_when_unique_and_said():
    choice = choose_kernel(read_cubin(TWO), "f32<32")
    assert choice.name == K32 and "rms_norm_f32<32>" in choice.note and K32 in choice.note
    with pytest.raises(InputError, match="ambiguous, 2 kernels match"):
        choose_kernel(read_cubin(TWO), "rms_norm")
    assert choose_kernel(read_cubin(TWO), K32).note == ""  # the exact symbol needs no word


def test_optimize_works_on_the_kernel_the_spec_names(tmp_path, capsys):
    out = tmp_path / "fast.cubin"
    argv = ["optimize", str(TWO), "--launch", str(SPEC_32), "-o", str(out), "--device", "cpu"]
    assert main([*argv, "--budget", "1", "--jobs", "1", "--no-contributions"]) == 0
    report = (tmp_path / "fast.reorder" / "report.md").read_text()
    assert report.startswith(f"# reorder optimize: {K32} ")
    assert capsys.readouterr().err.startswith(f"{K32} (sm_90")


@pytest.mark.parametrize(
    "extra, why",
    [
        ([], r"holds 2 kernels"),
        (["--launch", str(SPEC_32), "--kernel", "rms_norm_f32<1024>"], "make the two agree"),
        (["--kernel", "rms_norm"], "ambiguous"),
    ],
)
def test_optimize_refuses_in_one_line(tmp_path, capsys, extra, why):
    assert main(["optimize", str(TWO), "-o", str(tmp_path / "o.cubin"), "--device", "cpu", *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and why in err[0], err
    assert not (tmp_path / "o.cubin").exists()


@pytest.mark.parametrize("command", ["check", "time"])
def test_check_and_time_refuse_a_disagreeing_kernel_before_the_gpu(command, capsys):
    argv = [command, str(TWO), str(TWO), "--launch", str(SPEC_1024), "--kernel", K32]
    assert main(argv) == 2
    assert "make the two agree" in capsys.readouterr().err


def test_probe_takes_the_spec_kernel(tmp_path, capsys):
    assert main(["probe", str(TWO), "--launch", str(SPEC_32), "--build-only", str(tmp_path), "--range", "0-40"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith(f"{K32}: ")


def test_stalls_and_batch_loads_refuse_a_cubin_of_several_without_kernel(tmp_path, capsys):
    for command in ("stalls", "batch-loads"):
        assert main([command, str(TWO), "-o", str(tmp_path / f"{command}.cubin")]) == 2
        assert "holds 2 kernels" in capsys.readouterr().err
    copy = tmp_path / "two.cubin"
    shutil.copy(TWO, copy)
    assert main(["stalls", str(copy), "--kernel", "f32<32", "-o", str(tmp_path / "s.cubin")]) == 0
    err = capsys.readouterr().err
    assert "kernel 'f32<32' is " in err and f"rms_norm_f32<32>(float const*, float*, int, float) [{K32}]" in err
