"""Locate and run NVIDIA's binary tools (nvdisasm, cuobjdump, nvcc, ptxas).

nvdisasm and cuobjdump come from the PyPI packages `nvidia-cuda-nvdisasm` and
`nvidia-cuda-cuobjdump`, so a machine without a CUDA install still has them. We look
inside the installed `nvidia` namespace package first, then PATH, then CUDA_HOME, and for
ptxas last in Triton's bundled tools.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

from reorder.errors import ToolError

_PACKAGE_HINT = {
    "nvdisasm": "pip install nvidia-cuda-nvdisasm",
    "cuobjdump": "pip install nvidia-cuda-cuobjdump",
    "nvcc": "install the CUDA toolkit (nvcc)",
    "ptxas": "install the CUDA toolkit (ptxas)",
}


def _package_bin_dirs() -> list[Path]:
    """Binary folders of the installed `nvidia.*` wheels (cu13, cu12, cuda_nvdisasm ...)."""
    try:
        import nvidia  # namespace package from the nvidia-cuda-* wheels
    except ImportError:
        return []
    dirs: list[Path] = []
    for root in getattr(nvidia, "__path__", []):
        base = Path(root)
        dirs += sorted(base.glob("*/bin"))
    return dirs


def triton_bin_dir() -> Path:
    """Triton's bundled NVIDIA tools folder (found without importing Triton)."""
    import importlib.util

    spec = importlib.util.find_spec("triton")
    if spec is None or not spec.submodule_search_locations:
        return Path("/nonexistent")
    return Path(next(iter(spec.submodule_search_locations))) / "backends" / "nvidia" / "bin"


@functools.cache
def find_tool(name: str) -> Path:
    """Path of an NVIDIA tool, or ToolError naming the tool and how to get it."""
    for folder in _package_bin_dirs():
        candidate = folder / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    on_path = shutil.which(name)
    if on_path:
        return Path(on_path)
    cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if cuda_home:
        candidate = Path(cuda_home) / "bin" / name
        if candidate.is_file():
            return candidate
    bundled = triton_bin_dir() / name
    if name == "ptxas" and bundled.is_file() and os.access(bundled, os.X_OK):
        return bundled  # a GPU machine with Triton but no CUDA toolkit still has ptxas (probe templates)
    raise ToolError(f"{name} not found (looked in the nvidia wheels, PATH, CUDA_HOME); {_PACKAGE_HINT.get(name, '')}")


def have_tool(name: str) -> bool:
    """True when `find_tool(name)` would succeed."""
    try:
        find_tool(name)
    except ToolError:
        return False
    return True


def run_tool(name: str, *args: str, input_bytes: bytes | None = None, timeout: float = 120.0) -> str:
    """Run a tool and return its stdout; a failure becomes ToolError with the command and stderr."""
    command = (str(find_tool(name)), *args)
    try:
        done = subprocess.run(command, input=input_bytes, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise ToolError(f"{name} timed out after {timeout:.0f}s", command) from exc
    if done.returncode != 0:
        stderr = done.stderr.decode(errors="replace").strip()
        first = stderr.splitlines()[0] if stderr else f"exit code {done.returncode}"
        raise ToolError(f"{name} failed: {first}", command, stderr)
    return done.stdout.decode(errors="replace")


def tool_version(name: str) -> str:
    """The tool's path and version line: what a cached answer of the tool depends on."""
    return f"{find_tool(name)} {version_line(find_tool(name))}"


@functools.cache
def version_line(path: Path) -> str:
    """The last line of `path --version` (NVIDIA tools print their build there), asked once."""
    lines = run_binary(path, "--version").stdout.strip().splitlines()
    return lines[-1] if lines else "unknown version"


def run_binary(path: Path, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess:
    """Run one specific tool binary (not looked up by name); ToolError only when it cannot start
    or times out: the caller reads its exit code and stderr (ptxas' verdicts, say)."""
    try:
        return subprocess.run((str(path), *args), capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise ToolError(f"{path.name} timed out after {timeout:.0f}s", (str(path), *args)) from exc
    except OSError as exc:
        raise ToolError(f"{path}: cannot run: {exc.strerror or exc}", (str(path), *args)) from None
