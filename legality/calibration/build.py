"""Compile the calibration sources for every arch reorder reads and every ptxas -O level.

nvcc's own pipeline, split so the front end runs once per (source, arch): `nvcc -ptx`
then `ptxas -arch=<arch> -m64 -O<level>` (what `nvcc -cubin -Xptxas -O<level>` runs,
as `nvcc --dryrun` shows). sm_90a is compiled as well: its cubins say sm_90 and feed the
sm_90 table. Compiles run `jobs` at a time; a source that fails to compile is an error
(the generator must only write valid CUDA).
"""

from __future__ import annotations

import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from reorder.base.errors import ToolError

ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90", "sm_90a")  # reorder.binary.cubin.SUPPORTED_ARCHS, minus 75 and 87
# Blackwell, calibrated on its own (`python -m legality.calibration --archs sm_100a,sm_103,sm_120`):
# sm_100a cubins say sm_100; the project's sources and the generated ones alike.
BLACKWELL_ARCHS = ("sm_100a", "sm_103", "sm_120")
OPT_LEVELS = (1, 2, 3)
# For the generated kernels -O2 gave the same code as -O3 (0 of 800 sm_90 kernels differ)
# and sm_90a the same as sm_90: they are built for the project's sources only, and the
# time goes to more kernels (legality.calibration.__main__).
GENERATED_ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90")
GENERATED_LEVELS = (1, 3)


@dataclass(frozen=True)
class Job:
    """One source for one arch: its PTX, then one cubin per ptxas -O level."""

    source: Path
    arch: str
    out_dir: Path

    @property
    def ptx(self) -> Path:
        return self.out_dir / self.arch / "ptx" / f"{self.source.parent.name}_{self.source.stem}.ptx"

    def cubin(self, level: int) -> Path:
        return self.out_dir / self.arch / f"O{level}" / f"{self.source.parent.name}_{self.source.stem}.cubin"


def tool(name: str) -> str:
    """The path of a CUDA tool, or a ToolError naming it."""
    path = shutil.which(name)
    if path is None:
        raise ToolError(f"{name} not found on PATH", (name,))
    return path


def _run(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise ToolError(f"{Path(cmd[0]).name} failed (exit {proc.returncode}) on {cmd[-1]}", tuple(cmd), proc.stderr)


def compile_job(job: Job, levels: tuple[int, ...] = OPT_LEVELS) -> list[Path]:
    """PTX once, then a cubin per -O level; returns the cubins."""
    ptx = job.ptx
    ptx.parent.mkdir(parents=True, exist_ok=True)
    _run([tool("nvcc"), "-ptx", f"-arch={job.arch}", "-o", str(ptx), str(job.source)])
    out = []
    for level in levels:
        cubin = job.cubin(level)
        cubin.parent.mkdir(parents=True, exist_ok=True)
        _run([tool("ptxas"), f"-arch={job.arch}", "-m64", f"-O{level}", str(ptx), "-o", str(cubin)])
        out.append(cubin)
    return out


def build_all(
    sources: list[Path],
    out_dir: Path,
    archs: tuple[str, ...] = ARCHS,
    levels: tuple[int, ...] = OPT_LEVELS,
    jobs: int = 2,
) -> list[Path]:
    """Every source for every arch at every -O level, `jobs` compiles at a time (threads
    wait on nvcc/ptxas processes, so they run in parallel)."""
    work = [Job(src, arch, out_dir) for arch in archs for src in sources]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return sorted(p for cubins in pool.map(lambda job: compile_job(job, levels), work) for p in cubins)


def ptxas_version() -> str:
    """ptxas' version line, for the tables' provenance."""
    out = subprocess.run([tool("ptxas"), "--version"], capture_output=True, text=True, check=False).stdout
    return next((line.strip() for line in out.splitlines() if "release" in line), out.strip()[-80:])
