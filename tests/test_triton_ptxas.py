"""The ptxas stand-in (reorder.triton.ptxas) against the real ptxas: its arguments, its version
text, its output with reorder off (byte-identical) and on (legal against the real cubin),
its fallbacks, and Triton compiling through it (TRITON_PTXAS_PATH) without the stages hook."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from reorder.binary.tools import find_tool, have_tool, triton_bin_dir
from reorder.triton import ptxas as standin
from reorder.triton.request import Request

ROOT = Path(__file__).resolve().parent.parent
NVCC_PTX = ROOT / "tests" / "corpus" / "ptx" / "sm_90" / "elementwise.ptx"
TRITON_PTX = ROOT / "tests" / "corpus" / "triton" / "sm_90" / "rmsnorm.ptx"  # Triton 3.9's, PTX 9.4
TRITON36_PTX = ROOT / "reorder" / "suite" / "triton_kernels" / "sm_90" / "softmax_fp16.ptx"  # Triton 3.6's, PTX 8.7
HAVE_TRITON = importlib.util.find_spec("triton") is not None
needs_ptxas = pytest.mark.skipif(not have_tool("ptxas"), reason="no ptxas here")
TRITON_FLAGS = ("-lineinfo", "-v", "--gpu-name=sm_90a")  # Triton 3.6's make_cubin, ptx_options before --gpu-name


def _accepting_ptxas(ptx: Path, tmp: Path) -> Path | None:
    """A ptxas here that compiles `ptx` (Triton 3.9's PTX is .version 9.4: CUDA 13.0's ptxas refuses it)."""
    found = [triton_bin_dir() / "ptxas-blackwell", triton_bin_dir() / "ptxas"]
    found += [find_tool("ptxas")] if have_tool("ptxas") else []
    for path in found:
        if (
            path.is_file()
            and subprocess.run(
                [str(path), *TRITON_FLAGS, str(ptx), "-o", str(tmp / "probe.o")], capture_output=True, check=False
            ).returncode
            == 0
        ):
            return path
    return None


def _run(monkeypatch, real: Path, mode: str, *argv: str) -> int:
    monkeypatch.setenv("REORDER_REAL_PTXAS", str(real))
    monkeypatch.setenv("REORDER_PTXAS", mode)
    return standin.main(list(argv))


def test_arguments_are_read_as_triton_passes_them():
    argv = ["-lineinfo", "-v", "--regAllocOptLevel=2", "--gpu-name=sm_90a", "k.ptx", "-o", "k.ptx.o"]
    assert standin.target_sm(argv) == 90 and standin.output_path(argv) == Path("k.ptx.o")
    assert standin.target_sm(["--gpu-name=sm_100a"]) == 100 and standin.output_path(["k.ptx"]) is None
    assert standin.chosen(None, "all") == Request() and standin.chosen(None, "marked") is None
    assert standin.chosen(Request("search", budget=2), "off") is None


def test_a_bad_mode_or_marker_is_one_line_and_exit_2(monkeypatch, capsys):
    monkeypatch.setenv("REORDER_PTXAS", "sometimes")
    assert standin.main(["--version"]) == 2
    assert "REORDER_PTXAS='sometimes'" in capsys.readouterr().err
    monkeypatch.setenv("REORDER_PTXAS", "all")
    assert standin.main(["--reorder=bogus", "--version"]) == 2


@needs_ptxas
def test_version_names_reorder_first_and_keeps_the_real_release_for_triton(monkeypatch, capsys):
    real = find_tool("ptxas")
    assert _run(monkeypatch, real, "all", "--version") == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0].startswith("reorder-ptxas ") and "mode all" in text
    real_text = subprocess.run([str(real), "--version"], capture_output=True, text=True, check=True).stdout
    wanted = re.search(r".*release (\d+\.\d+).*", real_text, flags=re.MULTILINE).group(1)
    assert re.search(r".*release (\d+\.\d+).*", text, flags=re.MULTILINE).group(1) == wanted  # Triton's own regex


@needs_ptxas
def test_with_reorder_off_the_output_is_the_real_ptxas_output_byte_for_byte(monkeypatch, tmp_path):
    real = find_tool("ptxas")
    ours, theirs = tmp_path / "ours.o", tmp_path / "theirs.o"
    assert _run(monkeypatch, real, "off", *TRITON_FLAGS, "--reorder", str(NVCC_PTX), "-o", str(ours)) == 0
    subprocess.run([str(real), *TRITON_FLAGS, str(NVCC_PTX), "-o", str(theirs)], check=True, capture_output=True)
    assert ours.read_bytes() == theirs.read_bytes()


@needs_ptxas
@pytest.mark.parametrize("ptx", [NVCC_PTX, TRITON36_PTX, TRITON_PTX], ids=["nvcc", "triton-3.6", "triton-3.9"])
def test_with_reorder_on_the_output_is_legal_against_the_real_cubin(monkeypatch, tmp_path, ptx):
    from legality.verify import verify_kernel
    from reorder.binary.cubin import read_cubin
    from reorder.sass.model import decode_kernel

    real = _accepting_ptxas(ptx, tmp_path)
    if real is None:
        pytest.skip(f"no ptxas here takes {ptx.name}'s PTX version")
    ours, theirs = tmp_path / "ours.o", tmp_path / "theirs.o"
    assert _run(monkeypatch, real, "marked", *TRITON_FLAGS, "--reorder", str(ptx), "-o", str(ours)) == 0
    subprocess.run([str(real), *TRITON_FLAGS, str(ptx), "-o", str(theirs)], check=True, capture_output=True)
    before, after = read_cubin(theirs), read_cubin(ours)
    for kernel in before.kernels:
        original = decode_kernel(before, kernel.name)
        assert verify_kernel(decode_kernel(after, kernel.name), original=original.instructions).ok


@needs_ptxas
def test_when_reorder_fails_the_real_cubin_stays_and_the_exit_code_is_zero(monkeypatch, tmp_path, capsys):
    def broken(cubin, request):
        raise RuntimeError("no luck")

    monkeypatch.setattr("reorder.triton.rewrite.rewrite", broken)
    real = find_tool("ptxas")
    ours, theirs = tmp_path / "ours.o", tmp_path / "theirs.o"
    assert _run(monkeypatch, real, "all", *TRITON_FLAGS, str(NVCC_PTX), "-o", str(ours)) == 0
    subprocess.run([str(real), *TRITON_FLAGS, str(NVCC_PTX), "-o", str(theirs)], check=True, capture_output=True)
    assert ours.read_bytes() == theirs.read_bytes()
    assert "reorder failed (RuntimeError: no luck): the compiler's cubin is kept" in capsys.readouterr().err


@needs_ptxas
def test_a_ptxas_error_is_passed_through_with_its_exit_code(monkeypatch, tmp_path):
    bad = tmp_path / "bad.ptx"
    bad.write_text(".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k() { nonsense; }\n")
    code = _run(monkeypatch, find_tool("ptxas"), "all", *TRITON_FLAGS, str(bad), "-o", str(tmp_path / "x.o"))
    assert code != 0 and not (tmp_path / "x.o").exists()


@needs_ptxas
def test_the_stand_in_refuses_to_call_itself(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "argv", [str(find_tool("ptxas"))])
    assert _run(monkeypatch, find_tool("ptxas"), "all", "--version") == 2


# ---------------------------------------------------------------- Triton through the stand-in


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    """Triton without the hook, with the stand-in written as a script; yields a function that
    points Triton at it (TRITON_PTXAS_PATH and the Blackwell twin)."""
    pytest.importorskip("triton")
    import triton

    from reorder.triton import hook

    wrapper = tmp_path / "reorder-ptxas"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -m reorder.triton.ptxas "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    monkeypatch.delenv("REORDER_REAL_PTXAS", raising=False)
    previous = triton.knobs.runtime.add_stages_inspection_hook
    hook.uninstall()

    def use() -> None:
        for name in ("TRITON_PTXAS_PATH", "TRITON_PTXAS_BLACKWELL_PATH"):
            monkeypatch.setenv(name, str(wrapper))

    yield use
    triton.knobs.runtime.add_stages_inspection_hook = previous


@pytest.mark.skipif(not HAVE_TRITON, reason="triton is not installed")
def test_triton_compiles_through_the_stand_in_without_the_hook(stand_in, monkeypatch):
    from legality.verify import verify_kernel
    from reorder.binary.cubin import parse_cubin
    from reorder.sass.model import decode_kernel
    from reorder.suite.triton_kernels import family, stand_in_args
    from reorder.triton.compile import compile_call

    case = family("softmax_fp16").case((512, 32000))

    def build(**extra):
        return compile_call(
            case.kernel, *stand_in_args(case), arch=90, **case.constexprs, num_warps=4, LOOP_STAGES=2, **extra
        ).cubin

    plain = build()
    stand_in()
    monkeypatch.setenv("REORDER_PTXAS", "marked")
    assert build() == plain  # unmarked, mode 'marked': a pass-through
    marked = build(ptx_options="--reorder")
    assert marked != plain
    before = decode_kernel(parse_cubin(plain))
    assert verify_kernel(decode_kernel(parse_cubin(marked)), original=before.instructions).ok


@pytest.mark.skipif(not HAVE_TRITON, reason="triton is not installed")
def test_the_stand_in_runs_the_wgmma_step_on_the_feed_forward(stand_in, tmp_path, monkeypatch):
    """Through the stand-in (no hook), a marked feed-forward config gets the `wgmma` PTX step:
    its K loop's eight waits of 0 after each HGMMA become one, after the loop."""
    from reorder.binary.cubin import parse_cubin
    from reorder.sass.model import decode_kernel
    from reorder.suite.triton_kernels import family, stand_in_args
    from reorder.triton.compile import compile_call

    monkeypatch.setenv("REORDER_CACHE", str(tmp_path / "reorder-cache"))
    case = family("ffn_swiglu_fp16").case((512, 512, 512))
    stand_in()
    monkeypatch.setenv("REORDER_PTXAS", "marked")
    marked = compile_call(
        case.kernel,
        *stand_in_args(case),
        arch=90,
        **case.constexprs,
        num_warps=4,
        num_stages=3,
        ptx_options="--reorder=moves,noalias",
    ).cubin
    code = decode_kernel(parse_cubin(marked))
    assert sum("WARPGROUP.DEPBAR.LE gsb0, 0x0" in i.text for i in code.instructions) == 1


def test_the_wgmma_step_swaps_input_and_output_as_paths(tmp_path):
    from reorder.triton.ptxas import _swapped

    ptx, out = Path("k.ptx"), Path("k.ptx.o")
    moved, cubin = tmp_path / "k.ptx", tmp_path / "moved.cubin"
    args = ["-lineinfo", "-v", "--gpu-name=sm_90a", "./k.ptx", "-o", "./k.ptx.o", "--output-file=k.ptx.o"]
    swapped = [_swapped(a, ptx, moved, out, cubin) for a in args]
    assert swapped == ["-lineinfo", "-v", "--gpu-name=sm_90a", str(moved), "-o", str(cubin), f"--output-file={cubin}"]
