"""Build the benchmark kernel suite into cubins and read their parameter tables.

The suite is a fixed list of CUDA sources, each holding one or more `extern "C"`
kernels; SUITE records which kernels live in which source so a launch spec (which
names only a kernel) can be mapped to the cubin that holds it. Cubins are checked
in under cubin/ so the CPU tier and the GPU harness do not need nvcc.

Run `python -m benchmarks.kernels.build [OUT_DIR]` to rebuild (default: cubin/).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from reorder.base.errors import ToolError

KERNEL_DIR = Path(__file__).resolve().parent
CUBIN_DIR = KERNEL_DIR / "cubin"
SPEC_DIR = KERNEL_DIR / "specs"
NVCC_FLAGS: tuple[str, ...] = ("-cubin", "-O3", "-arch=sm_90")

SUITE: dict[str, tuple[str, ...]] = {
    "kselect.cu": ("warp_select_k32", "warp_select_k100"),
    "particlefilter.cu": ("normalize_weights", "find_index"),
    "cfo_ta_est.cu": ("cfo_ta_est",),
    "embedding_bag.cu": ("embedding_bag_sum", "embedding_bag_mean"),
    "rmsnorm.cu": ("rms_norm_f32", "rmsnorm_triton_style"),
    "spmv_csr.cu": ("spmv_csr_vector",),
    "gather_histogram.cu": ("gather_histogram",),
}


def all_kernels() -> tuple[str, ...]:
    """Every kernel name in the suite, in SUITE order."""
    return tuple(k for names in SUITE.values() for k in names)


def source_for_kernel(kernel: str) -> str:
    """The .cu file that defines `kernel`; specs name kernels, not files."""
    for source, names in SUITE.items():
        if kernel in names:
            return source
    raise KeyError(f"kernel {kernel!r} is not in the suite")


def cubin_name(source: str) -> str:
    """Cubin file name for a source: same stem, .cubin suffix."""
    return Path(source).with_suffix(".cubin").name


def checked_in_cubin(kernel: str) -> Path:
    """Path of the checked-in cubin that holds `kernel`."""
    return CUBIN_DIR / cubin_name(source_for_kernel(kernel))


def nvcc_command(nvcc: str, source: Path, out: Path) -> tuple[str, ...]:
    """The exact nvcc invocation used for the suite, kept in one place so rebuilds match."""
    return (nvcc, *NVCC_FLAGS, str(source), "-o", str(out))


def build_suite(out_dir: str | os.PathLike[str], nvcc: str = "nvcc") -> dict[str, Path]:
    """Compile every suite source into out_dir; returns {source file name: cubin path}.

    Raises ToolError when nvcc is missing or a compile fails, with nvcc's stderr.
    """
    exe = shutil.which(nvcc)
    if exe is None:
        raise ToolError(f"{nvcc} not found on PATH", (nvcc,))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    built: dict[str, Path] = {}
    for source in SUITE:
        target = out / cubin_name(source)
        cmd = nvcc_command(exe, KERNEL_DIR / source, target)
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise ToolError(f"nvcc failed on {source}", cmd, proc.stderr)
        built[source] = target
    return built


_SECTION_RE = re.compile(r"^\.nv\.info\.(\S+)\s*$")
_KPARAM_RE = re.compile(r"Ordinal\s*:\s*0x([0-9a-fA-F]+)\s+Offset\s*:\s*0x([0-9a-fA-F]+)\s+Size\s*:\s*0x([0-9a-fA-F]+)")


def parse_kparam_info(elf_dump: str) -> dict[str, list[tuple[int, int, int]]]:
    """Parse `cuobjdump -elf` text into {function: [(ordinal, offset, size)]}, sorted by ordinal.

    Each kernel's `.nv.info.<name>` section carries one EIATTR_KPARAM_INFO per
    parameter, which is the ground truth a launch spec's [[param]] list must match.
    """
    table: dict[str, list[tuple[int, int, int]]] = {}
    current: str | None = None
    pending = False
    for line in elf_dump.splitlines():
        section = _SECTION_RE.match(line.strip())
        if section:
            current = section.group(1)
            table.setdefault(current, [])
            continue
        if line.strip().startswith(".") and not line.strip().startswith(".nv.info."):
            current = None
        if current is None:
            continue
        if "EIATTR_KPARAM_INFO" in line:
            pending = True
            continue
        match = _KPARAM_RE.search(line)
        if pending and match:
            ordinal, offset, size = (int(g, 16) for g in match.groups())
            table[current].append((ordinal, offset, size))
            pending = False
    return {name: sorted(params) for name, params in table.items()}


def find_cuobjdump() -> str | None:
    """cuobjdump from the `nvidia` pip package (cu13) if installed, else from PATH."""
    try:
        import nvidia  # type: ignore[import-not-found]

        for base in nvidia.__path__:
            for candidate in sorted(Path(base).glob("cu*/bin/cuobjdump")):
                if os.access(candidate, os.X_OK):
                    return str(candidate)
    except ImportError:
        pass
    return shutil.which("cuobjdump")


def kparam_info(cubin: str | os.PathLike[str], cuobjdump: str) -> dict[str, list[tuple[int, int, int]]]:
    """Parameter tables of every kernel in a cubin, via `cuobjdump -elf`."""
    cmd = (cuobjdump, "-elf", str(cubin))
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise ToolError(f"cuobjdump failed on {cubin}", cmd, proc.stderr)
    return parse_kparam_info(proc.stdout)


def main(argv: list[str]) -> int:
    """CLI: build into argv[0] (default: the checked-in cubin/ folder)."""
    out_dir = Path(argv[0]) if argv else CUBIN_DIR
    for source, path in build_suite(out_dir).items():
        print(f"{source} -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
