"""PTX input: every command that takes a cubin takes PTX, compiled the way its producer
would have compiled it (reorder.ptx.toolchain.compile)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from shared_listings import private_cache  # tests/shared_listings.py

from reorder.base.errors import InputError
from reorder.binary.cubin import read_cubin
from reorder.binary.tools import have_tool, triton_bin_dir
from reorder.cli.main import main
from reorder.ptx.toolchain.compile import compile_ptx, read_head
from reorder.sass.model import decode_kernel

CORPUS = Path(__file__).resolve().parent / "corpus"
NVCC_PTX = CORPUS / "ptx" / "sm_90" / "elementwise.ptx"
TRITON = CORPUS / "triton" / "sm_90"


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("REORDER_CACHE", str(private_cache(tmp_path / "cache")))


def _sass(path: Path) -> list[tuple[str, list[int]]]:
    cubin = read_cubin(path)
    return sorted((k.name, [i.word for i in decode_kernel(cubin, k.name).instructions]) for k in cubin.kernels)


def test_heads_name_target_version_and_producer():
    nvcc = read_head(NVCC_PTX.read_bytes())
    assert (nvcc.target, nvcc.sm, nvcc.version, nvcc.producer) == ("sm_90", 90, "9.0", "nvcc")
    triton = read_head((TRITON / "rmsnorm.ptx").read_bytes())
    assert (triton.target, triton.producer) == ("sm_90a", "triton")
    assert read_head((TRITON / "rmsnorm.cubin").read_bytes()) is None
    assert read_head(b"int main() { return 0; }\n") is None


@pytest.mark.skipif(not have_tool("ptxas"), reason="no ptxas here")
def test_nvcc_ptx_gives_the_sass_nvcc_gives(tmp_path):
    compiled = compile_ptx(NVCC_PTX)
    assert compiled is not None and not compiled.cached and "-O3" in compiled.recipe.flags
    assert _sass(compiled.cubin) == _sass(CORPUS / "cubin" / "sm_90" / "elementwise.cubin")  # nvcc -cubin's
    again = compile_ptx(NVCC_PTX)
    assert again.cached and again.cubin == compiled.cubin


def _triton_release() -> tuple[int, ...]:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return tuple(int(x) for x in version("triton").split(".")[:2])
    except (PackageNotFoundError, ValueError):
        return ()


# the corpus PTX and cubin were made by Triton 3.9 (PTX 9.4): an older Triton's ptxas refuses that PTX
@pytest.mark.skipif(
    not (triton_bin_dir() / "ptxas-blackwell").is_file() or _triton_release() < (3, 9),
    reason="Triton >= 3.9 is not installed",
)
def test_triton_ptx_gives_the_cubin_triton_gives():
    compiled = compile_ptx(TRITON / "rmsnorm.ptx")
    assert compiled.recipe.ptxas == (triton_bin_dir() / "ptxas-blackwell").resolve()
    assert "--regAllocOptLevel=2" in compiled.recipe.flags and "-lineinfo" in compiled.recipe.flags
    assert compiled.cubin.read_bytes() == (TRITON / "rmsnorm.cubin").read_bytes()


# Triton 3.6 (the GPU machine's) compiles sm_90 with its bundled `ptxas` (12.8) and no
# --regAllocOptLevel; 3.9's recipe (ptxas-blackwell, that flag) gave other machine code for this
# matmul (3 of the benchmark's 62 Triton configs). Bytes may differ in .debug_line: ptxas records
# the Triton source file's modification time.
@pytest.mark.skipif(_triton_release() != (3, 6), reason="Triton 3.6 is not installed")
def test_triton_36_ptx_gives_the_machine_code_triton_36_gives(tmp_path, monkeypatch):
    monkeypatch.setenv("REORDER_CACHE", str(tmp_path))
    made = (
        Path(__file__).resolve().parents[1] / "reorder" / "suite" / "triton_kernels" / "sm_90" / "matmul_leaky_fp16.ptx"
    )
    compiled = compile_ptx(made)
    assert compiled.recipe.ptxas == (triton_bin_dir() / "ptxas").resolve()
    assert "--regAllocOptLevel=2" not in compiled.recipe.flags and "-lineinfo" in compiled.recipe.flags
    ours, theirs = read_cubin(compiled.cubin), read_cubin(made.with_suffix(".cubin"))
    assert ours.kernel("matmul_leaky").text == theirs.kernel("matmul_leaky").text


@pytest.mark.skipif(not have_tool("ptxas"), reason="no ptxas here")
def test_ptx_newer_than_every_ptxas_is_refused_in_one_line(monkeypatch, tmp_path):
    monkeypatch.setattr("reorder.ptx.toolchain.compile.triton_bin_dir", lambda: tmp_path / "no-triton")
    newer = tmp_path / "newer.ptx"
    newer.write_text(NVCC_PTX.read_text().replace(".version 9.0", ".version 99.9"))
    with pytest.raises(InputError, match=r"PTX \.version 99\.9 is newer than every ptxas here"):
        compile_ptx(newer)


@pytest.mark.skipif(not have_tool("ptxas"), reason="no ptxas here")
def test_commands_take_ptx_and_never_write_over_it(tmp_path, capsys):
    ptx = tmp_path / "k.ptx"
    shutil.copy(NVCC_PTX, ptx)
    assert main(["verify", str(ptx)]) == 0
    err = capsys.readouterr().err
    assert "nvcc PTX for sm_90, compiled" in err
    assert main(["stalls", str(ptx), "-o", str(tmp_path / "cut.cubin")]) == 2  # five kernels: name one
    assert f"{ptx} holds 5 kernels" in capsys.readouterr().err
    assert main(["stalls", str(ptx), "-o", str(tmp_path / "cut.cubin"), "--kernel", "saxpy_grid_stride"]) == 0
    assert read_cubin(tmp_path / "cut.cubin").kernels
    assert main(["stalls", str(ptx), "-o", str(ptx)]) == 2
    assert "refusing to overwrite the input" in capsys.readouterr().err
    assert ptx.read_bytes() == NVCC_PTX.read_bytes()
    fast = tmp_path / "fast.cubin"
    assert (
        main(
            ["optimize", str(ptx), "-o", str(fast), "--kernel", "saxpy_grid_stride", "--budget", "2", "--device", "cpu"]
        )
        == 0
    )
    report = (tmp_path / "fast.reorder" / "report.md").read_text()
    assert f"compiled from {ptx} by " in report and "-O3 -arch=sm_90" in report


@pytest.mark.skipif(not have_tool("ptxas"), reason="no ptxas here")
def test_bad_ptx_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.ptx"
    bad.write_text(".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k() { nonsense; }\n")
    assert main(["disasm", str(bad)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("reorder disasm: error: ") and "ptxas could not compile this PTX for sm_90" in line


def test_ptx_for_an_unsupported_arch_is_refused_before_compiling(tmp_path, capsys):
    other = tmp_path / "k.ptx"
    other.write_text(NVCC_PTX.read_text().replace(".target sm_90", ".target sm_110"))
    assert main(["verify", str(other)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"{other}: PTX for unsupported arch sm_110" in line
