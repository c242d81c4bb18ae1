"""Build the PTX GlobalHoist candidates of the suite kernels, reproducibly, for GPU timing.

    python -m benchmarks.ptx_candidates [OUT_DIR] [--time]

For every suite source: `nvcc -ptx -O3 -arch=sm_90` (the suite's flags with -ptx for
-cubin), kept under OUT_DIR/source/ so the candidates rebuild without nvcc. For every
suite kernel: how many GlobalHoist instances it has, without and with --assume-noalias;
then one candidate where any move applies, with the first plan that moves something
(barrier, then store, then branch; reorder.ptx.space.plans), under the suite's own no-alias
setting (reorder/suite/suite.toml). RMSNorm (rmsnorm_triton_style) gets the 'barrier' plan,
the move DESIGN.md measured by hand (its normalise-pass loads above the block reduction),
and the 'top' plan beside it. Each candidate: OUT_DIR/<kernel>[.<mode>].ptx and .cubin,
compiled by reorder.ptx.toolchain.compile (ptxas -O3) and verified; OUT_DIR/manifest.json lists
kernel, moves, cubin sha256 and source PTX. The cubin holds every kernel of its source;
time the named one against benchmarks/kernels/cubin/<source>.cubin (the same SASS as the
source PTX compiled alone: `baseline_sass_equal` in the manifest says so per source).

--time: build the RMSNorm candidate 5 times and print the wall time of each (the target
"<= 2 s for a 500-instruction kernel"; not a test).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.kernels.build import CUBIN_DIR, KERNEL_DIR, SUITE, cubin_name
from reorder.base.errors import ReorderError
from reorder.base.files import write_atomic
from reorder.binary.cubin import read_cubin
from reorder.build.ptxcandidate import read_ptx, write_and_compile
from reorder.ptx.moves.hoist import GlobalHoist
from reorder.ptx.space.plans import plan
from reorder.ptx.toolchain.compile import compile_ptx
from reorder.sass.model import decode_kernel

OUT_DIR = KERNEL_DIR / "ptx_candidates"
NVCC_PTX_FLAGS = ("-ptx", "-O3", "-arch=sm_90")
FALLBACK_MODES = ("barrier", "store", "branch")
RMSNORM = "rmsnorm_triton_style"


def suite_noalias() -> dict[str, bool]:
    """kernel -> whether reorder/suite/suite.toml lets the search assume no aliasing."""
    import tomllib

    suite = tomllib.loads((KERNEL_DIR.parent.parent / "reorder" / "suite" / "suite.toml").read_text())
    return {k["name"]: bool(k.get("noalias", False)) for k in suite["kernel"]}


def source_ptx(source: str, out: Path, nvcc: str = "nvcc") -> Path:
    """The PTX of one suite source: kept in out/source/, made with nvcc when missing."""
    path = out / "source" / Path(source).with_suffix(".ptx").name
    if not path.is_file():
        cmd = (nvcc, *NVCC_PTX_FLAGS, str(KERNEL_DIR / source), "-o", str(path))
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(cmd, check=True, capture_output=True, text=True)
    return path


def instance_counts(ptx: Path, kernel: str) -> dict[str, int]:
    module = read_ptx(ptx)
    return {
        "alias": len(GlobalHoist.instances(module, kernel, False)),
        "noalias": len(GlobalHoist.instances(module, kernel, True)),
    }


def build_kernel(
    ptx: Path, kernel: str, noalias: bool, out: Path, modes=FALLBACK_MODES, suffix: str = ""
) -> dict | None:
    """One candidate: the first mode whose plan moves something; None when none does."""
    module = read_ptx(ptx)
    for mode in modes:
        moved, moves = plan(module, kernel, noalias, mode)
        if moves:
            target = out / f"{kernel}{suffix}.ptx"
            built = write_and_compile(ptx, kernel, moved, [m.describe() for m in moves], target)
            return {
                "kernel": kernel,
                "mode": mode,
                "noalias": noalias,
                "moves": list(built.moves),
                "ptx": _rel(built.ptx),
                "cubin": _rel(built.cubin),
                "cubin_sha256": built.sha256,
                "source_ptx": _rel(ptx),
                "source_ptx_sha256": _sha(ptx),
                "ptxas": built.recipe,
                "verify": "legal" if built.verdict.ok else list(built.verdict.violations),
                "pairs_tighter_than_tables": len(built.verdict.inherited),
                "build_seconds": round(built.seconds, 2),
            }
    return None


def build_rmsnorm(out: Path = OUT_DIR, mode: str = "barrier") -> dict:
    """The RMSNorm candidate DESIGN.md describes, from nvcc's PTX, under --assume-noalias."""
    ptx = source_ptx("rmsnorm.cu", out)
    suffix = "" if mode == "barrier" else f".{mode}"
    row = build_kernel(ptx, RMSNORM, True, out, modes=(mode,), suffix=suffix)
    if row is None:
        raise ReorderError(f"{RMSNORM}: the {mode} plan moved nothing")
    return row


def baseline_sass_equal(ptx: Path, source: str) -> bool:
    """The source PTX compiled by ptxas -O3 gives the checked-in cubin's SASS (nvcc -cubin)."""
    compiled = compile_ptx(ptx)
    a, b = read_cubin(compiled.cubin), read_cubin(CUBIN_DIR / cubin_name(source))
    return all(
        [i.word for i in decode_kernel(a, k.name).instructions]
        == [i.word for i in decode_kernel(b, k.name).instructions]
        for k in b.kernels
    )


def build_all(out: Path = OUT_DIR) -> dict:
    noalias = suite_noalias()
    manifest: dict = {"nvcc_ptx_flags": list(NVCC_PTX_FLAGS), "sources": {}, "kernels": {}, "candidates": []}
    for source, kernels in SUITE.items():
        ptx = source_ptx(source, out)
        manifest["sources"][source] = {
            "ptx": _rel(ptx),
            "sha256": _sha(ptx),
            "baseline_sass_equal": baseline_sass_equal(ptx, source),
        }
        for kernel in kernels:
            manifest["kernels"][kernel] = {
                "source": source,
                "noalias": noalias.get(kernel, False),
                "instances": instance_counts(ptx, kernel),
            }
            if kernel == RMSNORM:
                rows = [build_rmsnorm(out, "barrier"), build_rmsnorm(out, "top")]
            else:
                row = build_kernel(ptx, kernel, noalias.get(kernel, False), out)
                rows = [row] if row else []
            manifest["kernels"][kernel]["candidates"] = [r["ptx"] for r in rows]
            manifest["candidates"] += rows
    write_atomic(out / "manifest.json", (json.dumps(manifest, indent=1) + "\n").encode())
    return manifest


def time_rmsnorm(out: Path, repeats: int = 5) -> list[float]:
    """Wall seconds per RMSNorm candidate build (parse, peel, hoists, print, ptxas, verify)."""
    ptx = source_ptx("rmsnorm.cu", out)
    scratch = out / "timing"
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        moved, moves = plan(read_ptx(ptx), RMSNORM, True, "barrier")
        target = scratch / f"{RMSNORM}.{len(times)}.ptx"
        write_and_compile(ptx, RMSNORM, moved, [m.describe() for m in moves], target)
        times.append(time.perf_counter() - start)
    return times


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(KERNEL_DIR.parent.parent))
    except ValueError:
        return str(path)


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    out = Path(args[0]) if args else OUT_DIR
    if "--time" in argv:
        import tempfile

        with tempfile.TemporaryDirectory() as scratch:
            for seconds in time_rmsnorm(Path(scratch)):
                print(f"{RMSNORM} candidate built in {seconds:.2f} s")
        return 0
    manifest = build_all(out)
    for kernel, info in manifest["kernels"].items():
        built = ", ".join(info["candidates"]) or "no candidate"
        counts = info["instances"]
        print(f"{kernel:<22} instances {counts['alias']:>3} (noalias {counts['noalias']:>3}): {built}")
    for row in manifest["candidates"]:
        print(f"{row['cubin']} {row['cubin_sha256']} {row['mode']} {len(row['moves'])} moves, verify {row['verify']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
