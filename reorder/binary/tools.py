"""Locate and run NVIDIA's binary tools (nvdisasm, cuobjdump, nvcc, ptxas).

nvdisasm and cuobjdump come from the PyPI packages `nvidia-cuda-nvdisasm` and
`nvidia-cuda-cuobjdump`, so a machine without a CUDA install still has them. We look
inside the installed `nvidia` namespace package first, then PATH, then CUDA_HOME, and for
ptxas last in Triton's bundled tools; `REORDER_NVDISASM` (and so on) names one binary
explicitly. An nvdisasm older than MIN_RELEASE is refused: older releases misread cubins.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

from reorder.base.errors import ToolError, ToolTimeout

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


def triton_release() -> tuple[int, int]:
    """The installed Triton's (major, minor), (0, 0) when there is none (read without importing it)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        major, minor = version("triton").split(".")[:2]
        return int(major), int(re.match(r"\d+", minor).group(0))  # type: ignore[union-attr]
    except (PackageNotFoundError, ValueError, AttributeError):
        return (0, 0)


def triton_ptxas_recipe(sm: int) -> tuple[Path, tuple[str, ...]]:
    """(the bundled ptxas, the flags before ptx_options) the installed Triton's make_cubin uses
    for sm_NN (read from Triton 3.6-3.9's NVIDIA backend): `ptxas-blackwell` for sm >= 100 in
    3.6-3.8 and for sm >= 90 from 3.9, else `ptxas`; `--regAllocOptLevel=2` from 3.7."""
    release = triton_release()
    blackwell = sm >= 100 or (sm >= 90 and release >= (3, 9))
    flags = ("-lineinfo", "-v", *(("--regAllocOptLevel=2",) if release >= (3, 7) else ()))
    return triton_bin_dir() / ("ptxas-blackwell" if blackwell else "ptxas"), flags


# The oldest releases reorder accepts. CUDA 13.0.85's nvdisasm writes malformed JSON for probe
# builds (an instruction list before its function record) and lists 321 of the 464
# instructions of Rodinia's normalize_weights_kernel (nvcc -O3, sm_90); 13.5.37, the
# nvidia-cuda-nvdisasm wheel, reads both. pyproject.toml pins the same floor.
MIN_RELEASE: dict[str, tuple[int, int, int]] = {"nvdisasm": (13, 5, 37)}
_RELEASE = re.compile(r"\bV(\d+)\.(\d+)\.(\d+)\b")


@functools.cache
def find_tool(name: str) -> Path:
    """Path of an NVIDIA tool, or ToolError naming the tool and how to get it.

    `REORDER_<NAME>` (e.g. REORDER_NVDISASM) names one binary explicitly; otherwise the
    nvidia wheels come first, then PATH, CUDA_HOME and (ptxas) Triton's bundled tools. A tool
    with a release floor (MIN_RELEASE) must meet it: the first candidate that does is used,
    and when none does the first one found is refused in one line."""
    override = os.environ.get(f"REORDER_{name.upper()}")
    candidates = [Path(override)] if override else _candidates(name)
    if not candidates:
        raise ToolError(
            f"{name} not found (looked in the nvidia wheels, PATH, CUDA_HOME); {_PACKAGE_HINT.get(name, '')}"
        )
    floor = MIN_RELEASE.get(name)
    if floor is None:
        return candidates[0]
    for candidate in candidates:
        if (release_of(candidate) or (0,)) >= floor:
            return candidate
    found = release_of(candidates[0])
    what = "an unreadable version" if found is None else "release " + ".".join(map(str, found))
    want = ".".join(map(str, floor))
    raise ToolError(
        f"{candidates[0]} is {name} {what}, older than {want}, the oldest that lists every cubin "
        f"correctly; get a good one: pip install 'nvidia-cuda-{name}>={want}'"
    )


def _candidates(name: str) -> list[Path]:
    """Every executable `name` reorder may use, in order of preference (the wheels first)."""
    found = [folder / name for folder in _package_bin_dirs()]
    on_path = shutil.which(name)
    found += [Path(on_path)] if on_path else []
    cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    found += [Path(cuda_home) / "bin" / name] if cuda_home else []
    if name == "ptxas":  # a GPU machine with Triton but no CUDA toolkit still has ptxas (probe templates)
        found.append(triton_bin_dir() / name)
    return list(dict.fromkeys(p for p in found if p.is_file() and os.access(p, os.X_OK)))


@functools.cache
def release_of(path: Path) -> tuple[int, int, int] | None:
    """(13, 5, 37) from `path --version` ("Cuda compilation tools, release 13.5, V13.5.37"),
    None when the tool does not say or cannot run."""
    try:
        match = _RELEASE.search(run_binary(path, "--version", timeout=30.0).stdout)
    except ToolError:
        return None
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


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
        raise ToolTimeout(f"{name} timed out after {timeout:.0f}s", command) from exc
    if done.returncode != 0:
        stderr = done.stderr.decode(errors="replace").strip()
        first = stderr.splitlines()[0] if stderr else _exit_text(done.returncode)
        raise ToolError(f"{name} failed: {first}", command, stderr)
    return done.stdout.decode(errors="replace")


def _exit_text(code: int) -> str:
    """'exit code 3', or 'killed by SIGSEGV' (nvdisasm crashes on some corrupt cubins)."""
    if code >= 0:
        return f"exit code {code}"
    try:
        return f"killed by {signal.Signals(-code).name}"
    except ValueError:
        return f"killed by signal {-code}"


def tool_version(name: str) -> str:
    """The tool's path and version line: which tool answered, for a message."""
    return f"{find_tool(name)} {version_line(find_tool(name))}"


def tool_identity(name: str) -> str:
    """The tool's name and version line: what a cached answer of the tool depends on. Not its
    path: the same release installed elsewhere (another venv, a clean clone's) lists the same
    bytes the same way, so its listings are one cache's entries."""
    return f"{name} {version_line(find_tool(name))}"


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
        raise ToolTimeout(f"{path.name} timed out after {timeout:.0f}s", (str(path), *args)) from exc
    except OSError as exc:
        raise ToolError(f"{path}: cannot run: {exc.strerror or exc}", (str(path), *args)) from None
