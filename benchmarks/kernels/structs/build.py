"""Build the struct kernels into cubins (sm_90, the suite's nvcc flags).

`python -m benchmarks.kernels.structs.build [OUT_DIR]` (default: cubin/, checked in so the
CPU tier and the GPU script need no nvcc).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from benchmarks.kernels.build import nvcc_command
from reorder.base.errors import ToolError

HERE = Path(__file__).resolve().parent
CUBIN_DIR = HERE / "cubin"
SOURCES = ("kselect_tensor.cu", "cfo_ta_descr.cu", "last_block.cu")


def cubin_of(source: str, folder: Path = CUBIN_DIR) -> Path:
    return folder / Path(source).with_suffix(".cubin").name


def build(out_dir: Path = CUBIN_DIR, nvcc: str = "nvcc") -> dict[str, Path]:
    """Compile every source into out_dir; ToolError with nvcc's stderr when one fails."""
    exe = shutil.which(nvcc)
    if exe is None:
        raise ToolError(f"{nvcc} not found on PATH", (nvcc,))
    out_dir.mkdir(parents=True, exist_ok=True)
    built = {}
    for source in SOURCES:
        cmd = nvcc_command(exe, HERE / source, cubin_of(source, out_dir))
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise ToolError(f"nvcc failed on {source}", cmd, proc.stderr)
        built[source] = cubin_of(source, out_dir)
    return built


if __name__ == "__main__":
    for src, path in build(Path(sys.argv[1]) if len(sys.argv) > 1 else CUBIN_DIR).items():
        print(f"{src} -> {path}")
