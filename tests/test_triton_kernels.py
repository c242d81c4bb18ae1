"""The project's Triton kernels as Triton 3.6 compiles them for sm_90 (checked in by
reorder/suite/triton_kernels/build.py): their launch specs from metadata agree with the
cubins, reorder's moves on them are legal against the compiler's schedule, and the search
runs on them with the launch validated. No Triton needed; with Triton 3.6 the checked-in
files are also rebuilt and compared."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from reorder.cli.main import main

FOLDER = Path(__file__).resolve().parent.parent / "reorder" / "suite" / "triton_kernels" / "sm_90"
CUBINS = sorted(FOLDER.glob("*.cubin"))


def test_every_family_is_checked_in():
    from reorder.suite.triton_kernels import FAMILIES

    assert [p.stem for p in CUBINS] == sorted(f.name for f in FAMILIES)
    assert all(p.with_suffix(".ptx").is_file() and p.with_suffix(".toml").is_file() for p in CUBINS)


@pytest.mark.parametrize("cubin", CUBINS, ids=lambda p: p.stem)
def test_each_launch_from_metadata_agrees_with_its_cubin(cubin):
    from timing.cli_support import validated_spec

    spec = validated_spec(cubin.with_suffix(".toml"), [cubin])
    assert spec.block[0] % 32 == 0 and [p.name for p in spec.params][-2:] == [
        "triton_global_scratch",
        "triton_profile_scratch",
    ]


@pytest.mark.parametrize("name", ["rmsnorm_looped_fp16", "layernorm_fp16"])
def test_moves_on_tritons_own_cubins_are_legal_against_the_compilers_schedule(name, tmp_path, capsys):
    from reorder.triton.request import Request
    from reorder.triton.rewrite import rewrite

    original = FOLDER / f"{name}.cubin"
    result = rewrite(original.read_bytes(), Request(noalias=True))
    out = tmp_path / "moved.cubin"
    out.write_bytes(result.data)
    assert result.changed
    assert main(["verify", str(out), "--against", str(original)]) == 0


def test_the_search_runs_with_the_launch_built_from_metadata(tmp_path, capsys):
    cubin = FOLDER / "rmsnorm_row_fp16.cubin"
    out = tmp_path / "fast.cubin"
    assert (
        main(
            [
                "optimize",
                str(cubin),
                "-o",
                str(out),
                "--launch",
                str(cubin.with_suffix(".toml")),
                "--budget",
                "1",
                "--device",
                "cpu",
            ]
        )
        == 0
    )
    assert out.is_file() and "PREDICTED" in (tmp_path / "fast.reorder" / "report.md").read_text()


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")
def test_the_checked_in_files_are_what_this_triton_builds(tmp_path, monkeypatch):
    import triton

    wanted = (FOLDER / "VERSION").read_text().split(";")[0].split()[1]
    if triton.__version__ != wanted:
        pytest.skip(f"checked in by Triton {wanted}, this is {triton.__version__}")
    from reorder.suite.triton_kernels.build import build

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    for path in build(tmp_path / "sm_90"):
        if path.suffix == ".cubin":  # -lineinfo embeds the source's absolute path: compare the machine code
            assert _machine_code(path) == _machine_code(FOLDER / path.name), path.name
        elif path.suffix != ".ptx":  # the PTX names the source file too
            assert path.read_bytes() == (FOLDER / path.name).read_bytes(), path.name


def _machine_code(path: Path) -> dict[str, tuple[int, ...]]:
    """Each kernel's instruction words (opcodes, operands and control codes), nothing else."""
    from reorder.binary.cubin import read_cubin
    from reorder.sass.model import decode_kernel

    cubin = read_cubin(path)
    return {k.name: tuple(i.word for i in decode_kernel(cubin, k.name).instructions) for k in cubin.kernels}
