"""Messages that name the input the user gave, what is wrong with it, and what to do: before,
`verify <folder>` said "4: Is a directory", PTX without `.version` "not an ELF file", PTX or
.cu with no `.entry` blamed a corrupt section table of a file in the cache, REORDER_CACHE
pointing at a file said only "Not a directory", a path with a newline broke the one line,
and `ptx-hoist --list` / `ptx-loops --list` exited 0 on PTX that ptxas rejects."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from reorder.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
PTX = ROOT / "tests" / "corpus" / "ptx" / "sm_90" / "elementwise.ptx"
CUBIN = ROOT / "tests" / "corpus" / "cubin" / "sm_90" / "calls.cubin"
needs_ptxas = pytest.mark.skipif(not shutil.which("ptxas"), reason="needs ptxas")


def _line(capsys, argv: list[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    lines = [x for x in err.strip().splitlines() if "error" in x]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"reorder {argv[0]}: error: "), err
    return lines[0]


def test_a_folder_is_named_as_one(tmp_path: Path, capsys) -> None:
    line = _line(capsys, ["verify", str(tmp_path)])
    assert line.endswith(f"{tmp_path}: a folder, not a regular file; reorder reads only files")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (lambda ptx: ptx.replace(".version", "// version", 1), "PTX without its .version line"),
        (lambda ptx: ptx.replace(".target", "// target", 1), "PTX without its .target line"),
        (lambda ptx: "  \n\t\n", "holds only whitespace"),
        (lambda ptx: "hello\n", "a text file, not a cubin (nor PTX: no .version and .target lines)"),
        (lambda ptx: "__global__ void k() {}\n", "CUDA source: only `reorder optimize` compiles it"),
    ],
    ids=["no-version", "no-target", "whitespace", "text", "cuda"],
)
def test_text_that_is_not_a_cubin_is_said_to_be_what_it_is(tmp_path: Path, capsys, text, says: str) -> None:
    path = tmp_path / "k.ptx"
    path.write_text(text(PTX.read_text()))
    line = _line(capsys, ["verify", str(path)])
    assert f"{path}: {says}" in line and "not an ELF file" not in line


@needs_ptxas
def test_ptx_without_a_kernel_names_the_ptx_not_the_cache(tmp_path: Path, capsys) -> None:
    path = tmp_path / "lib.ptx"
    path.write_text(".version 8.0\n.target sm_90\n.address_size 64\n.visible .func f()\n{\nret;\n}\n")
    line = _line(capsys, ["disasm", str(path)])
    assert f"{path}: no kernel: the PTX has no .entry" in line and "cache" not in line


@pytest.mark.skipif(not shutil.which("nvcc"), reason="needs nvcc")
def test_cuda_source_without_a_kernel_names_the_source(tmp_path: Path, capsys) -> None:
    path = tmp_path / "lib.cu"
    path.write_text("__device__ int f(int x) { return x + 1; }\n")
    line = _line(capsys, ["optimize", str(path), "-o", str(tmp_path / "o.cubin"), "--device", "cpu"])
    assert f"{path}: no kernel: nvcc's PTX of it has no .entry" in line and ".cache" not in line


@needs_ptxas
def test_a_cache_variable_pointing_at_a_file_is_named(tmp_path: Path, capsys, monkeypatch) -> None:
    file = tmp_path / "not-a-folder"
    file.write_text("x")
    monkeypatch.setenv("REORDER_CACHE", str(file))
    ptx = tmp_path / "k.ptx"
    ptx.write_text(PTX.read_text().replace("elementwise", "elementwise_cache_test"))
    line = _line(capsys, ["disasm", str(ptx)])
    assert f"REORDER_CACHE={file}: cannot make" in line and "Not a directory" in line


def test_a_path_with_a_newline_stays_on_one_line(tmp_path: Path, capsys) -> None:
    odd = tmp_path / "a\nb.cubin"
    line = _line(capsys, ["verify", str(odd)])
    assert "a\\nb.cubin: cannot read" in line


def _rejected_by_ptxas(tmp_path: Path) -> tuple[Path, str]:
    """nvcc's PTX with one operand register ptxas never saw declared; reorder's parser takes it."""
    text = PTX.read_text()
    line = next(x for x in text.splitlines() if x.strip().startswith("mul.lo.s32"))
    bad = line.rsplit("%", 1)[0] + "%r999;"
    path = tmp_path / "bad.ptx"
    path.write_text(text.replace(line, bad, 1))
    kernel = next(x for x in text.splitlines() if ".entry" in x).split(".entry", 1)[1].split("(")[0].strip()
    return path, kernel


@needs_ptxas
@pytest.mark.parametrize("command", ["ptx-hoist", "ptx-loops"])
def test_listing_moves_of_ptx_that_ptxas_rejects_is_refused(tmp_path: Path, capsys, command: str) -> None:
    path, kernel = _rejected_by_ptxas(tmp_path)
    line = _line(capsys, [command, str(path), "--list", "--kernel", kernel])
    assert f"{path}: ptxas could not compile this PTX" in line
    assert main([command, str(PTX), "--list", "--kernel", kernel]) == 0  # the PTX as nvcc wrote it lists
