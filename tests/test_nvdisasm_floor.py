"""CUDA 13.0.85's nvdisasm writes malformed JSON for probe builds and lists
only part of some kernels; 13.5.37 (the nvidia-cuda-nvdisasm wheel) reads them. An older
nvdisasm is refused in one line naming its version and the fix; the wheel is preferred."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from reorder.base.errors import ToolError
from reorder.binary import tools

ROOT = Path(__file__).resolve().parent.parent
CUBIN = ROOT / "benchmarks" / "kernels" / "cubin" / "gather_histogram.cubin"


def _fake(folder: Path, release: str) -> Path:
    """An `nvdisasm` that only answers --version, as NVIDIA's tools do."""
    folder.mkdir(parents=True, exist_ok=True)
    major, minor, _ = release.split(".")
    path = folder / "nvdisasm"
    path.write_text(
        "#!/bin/sh\necho 'nvdisasm: NVIDIA (R) CUDA disassembler'\n"
        f"echo 'Cuda compilation tools, release {major}.{minor}, V{release}'\n"
        f"echo 'Build cuda_{major}.{minor}.r{major}.{minor}/compiler.0_0'\n"
    )
    path.chmod(0o755)
    return path


@pytest.fixture()
def fresh_lookup():
    tools.find_tool.cache_clear()
    yield
    tools.find_tool.cache_clear()


def test_old_nvdisasm_is_refused_in_one_line(tmp_path: Path) -> None:
    old = _fake(tmp_path / "cuda-13.0", "13.0.85")
    env = dict(os.environ, REORDER_NVDISASM=str(old), CUDA_VISIBLE_DEVICES="")
    done = subprocess.run(
        [sys.executable, "-m", "reorder", "disasm", str(CUBIN)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("reorder disasm: error: ") and "release 13.0.85" in line and str(old) in line
    assert "pip install 'nvidia-cuda-nvdisasm>=13.5.37'" in line


def test_the_wheel_is_preferred_to_path(tmp_path: Path, monkeypatch, fresh_lookup) -> None:
    wheel = _fake(tmp_path / "wheel" / "bin", "13.5.37")
    newer = _fake(tmp_path / "path", "99.0.0")
    monkeypatch.delenv("REORDER_NVDISASM", raising=False)
    monkeypatch.setattr(tools, "_package_bin_dirs", lambda: [wheel.parent])
    monkeypatch.setenv("PATH", f"{newer.parent}{os.pathsep}{os.environ['PATH']}")
    assert tools.find_tool("nvdisasm") == wheel


def test_an_old_wheel_gives_way_to_a_good_one_and_none_good_is_refused(
    tmp_path: Path, monkeypatch, fresh_lookup
) -> None:
    old = _fake(tmp_path / "wheel" / "bin", "13.4.92")
    good = _fake(tmp_path / "path", "13.5.37")
    monkeypatch.delenv("REORDER_NVDISASM", raising=False)
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(tools, "_package_bin_dirs", lambda: [old.parent])
    monkeypatch.setenv("PATH", f"{good.parent}{os.pathsep}/usr/bin")
    assert tools.find_tool("nvdisasm") == good
    tools.find_tool.cache_clear()
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ToolError, match=r"release 13\.4\.92, older than 13\.5\.37"):
        tools.find_tool("nvdisasm")


def test_pyproject_pins_the_same_floor() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    pin = re.search(r'"nvidia-cuda-nvdisasm>=([\d.]+)"', text)
    assert pin and tuple(map(int, pin[1].split("."))) == tools.MIN_RELEASE["nvdisasm"]


def test_the_installed_nvdisasm_meets_the_floor(fresh_lookup) -> None:
    found = tools.release_of(tools.find_tool("nvdisasm"))
    assert found is not None and found >= tools.MIN_RELEASE["nvdisasm"]
