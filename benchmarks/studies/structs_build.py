"""CPU half of the struct-kernel benchmark: candidates for the struct kernels and their flat twins.

    python -m benchmarks.studies structs --prepare [--out gpu_build/structs] [--budget 12]
    (or python -m benchmarks.structs_build ...; this module: benchmarks/studies/structs_build.py)

Each pair stands for one library kernel written twice: flat (the suite's pointer-and-scalar
version, benchmarks/kernels/) and as its library writes it (benchmarks/kernels/structs/:
FAISS Tensor structs by value, a cuPHY descriptor array in device memory). Both get the same
candidates, built here so the GPU only checks and times them (benchmarks/studies/structs.py):

- `stalls`: every stall count the scheduler can cut (StallCut over the whole kernel);
- `batch`:  loads hoisted with their address slices and grouped (SliceBatch), no aliasing
  assumed (the suite does not assume it for these kernels);
- `search`: `reorder optimize --device cpu` with a small budget (the static model's best).

Every candidate passed the verifier when it was built. Launch specs are written resolved (the
kernel's symbol, checked against the cubin's parameter table) so the GPU host needs no
demangler. OUT/manifest.json lists everything.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from pathlib import Path

from benchmarks.studies.runner import commit, optimize_command

ROOT = Path(__file__).resolve().parent.parent.parent
FLAT = ROOT / "benchmarks" / "kernels"
STRUCTS = FLAT / "structs"
PAIRS = (  # (label, flat kernel, struct spec name, struct cubin)
    ("warp_select_k32", "warp_select_k32", "warp_select_tensor_k32", "kselect_tensor.cubin"),
    ("warp_select_k100", "warp_select_k100", "warp_select_tensor_k100", "kselect_tensor.cubin"),
    ("cfo_ta_est", "cfo_ta_est", "cfo_ta_descr", "cfo_ta_descr.cubin"),
)
ZEROS = ("last_block_sum_zeros", "last_block.cubin")  # checked and timed A/A: the zeros form on silicon
CANDIDATES = ("stalls", "batch", "search")


def sides(label: str, flat: str, struct: str, struct_cubin: str) -> list[dict]:
    """The flat and the struct kernel of one pair: cubin, spec, kernel name as given."""
    from benchmarks.kernels.build import checked_in_cubin

    return [
        {
            "pair": label,
            "form": "flat",
            "cubin": checked_in_cubin(flat),
            "spec": FLAT / "specs" / f"{flat}.toml",
            "kernel": flat,
        },
        {
            "pair": label,
            "form": "struct",
            "cubin": STRUCTS / "cubin" / struct_cubin,
            "spec": STRUCTS / "specs" / f"{struct}.toml",
            "kernel": None,
        },
    ]


def resolved_spec(side: dict, out: Path) -> tuple[Path, str]:
    """The side's spec checked against its cubin and written with the kernel's symbol."""
    import tomllib

    from timing.cli_support import validated_spec
    from timing.spec import parse_spec
    from timing.spectoml import spec_toml

    raw = tomllib.loads(side["spec"].read_text())
    raw.pop("grid_sweep", None)
    spec = parse_spec(raw, source=str(side["spec"]))
    path = out / "specs" / f"{side['pair']}_{side['form']}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(spec_toml(spec))
    checked = validated_spec(path, [side["cubin"]])
    path.write_text(
        spec_toml(
            checked,
            header=f"{side['form']} {side['pair']}: {side['spec'].relative_to(ROOT)}, "
            "kernel resolved to its symbol by benchmarks.structs_build",
        )
    )
    return path, checked.name


def build_one(which: str, cubin: Path, kernel: str, target: Path, budget: int) -> dict:
    """One candidate; its row for the manifest (built False when nothing changed)."""
    from reorder.base.files import write_atomic
    from reorder.binary.cubin import read_cubin
    from reorder.build.pipeline import batch_loads, cut_stalls
    from reorder.sass.model import decode_kernel

    t0 = time.time()
    if which == "search":
        cmd = optimize_command(cubin, kernel, target, "--no-contributions", device="cpu", budget=budget, jobs=1)
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)  # report in <target>.reorder/
        built = done.returncode == 0 and target.exists() and target.read_bytes() != cubin.read_bytes()
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
        return {"built": built, "budget": budget, "note": tail[0][:200], "seconds": round(time.time() - t0, 1)}
    code = decode_kernel(read_cubin(cubin), kernel)
    out = cut_stalls(code) if which == "stalls" else batch_loads(code, noalias=False)
    built = out.data != cubin.read_bytes()
    if built:
        write_atomic(target, out.data)
    return {
        "built": built,
        "applied": len(out.applied),
        "moved": out.moved,
        "registers": out.after.kernel.regcount,
        "seconds": round(time.time() - t0, 1),
        "note": "" if built else "nothing applied",
    }


def build(out: Path, budget: int, only: set[str] | None = None, assemble: bool = False) -> dict:
    """Every candidate of every side (or of `only`); the manifest is rewritten after each, and
    a candidate already built (its row beside it, <candidate>.json) is kept, so an interrupted
    build resumes where it stopped. `assemble`: only list what is built already."""
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    manifest = {"commit": commit(), "candidates": rows, "zeros": _zeros(out)}
    for pair in PAIRS:
        for side in sides(*pair):
            name = f"{side['pair']}_{side['form']}"
            if only and name not in only:
                continue
            spec, symbol = resolved_spec(side, out)
            for which in CANDIDATES:
                target = out / f"{name}_{which}.cubin"
                done = target.with_suffix(".json")
                if done.exists():
                    rows.append(json.loads(done.read_text()))
                    continue
                if assemble:
                    continue
                row = {
                    "pair": side["pair"],
                    "form": side["form"],
                    "kernel": symbol,
                    "move": which,
                    "original": str(side["cubin"].relative_to(ROOT)),
                    "spec": str(spec.relative_to(out)),
                    "candidate": target.name,
                    **build_one(which, side["cubin"], symbol, target, budget),
                }
                done.write_text(json.dumps(row))
                rows.append(row)
                print(json.dumps(row), flush=True)
                (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def _zeros(out: Path) -> dict:
    """The last-block kernel's entry: its spec resolved, checked and timed A/A on the GPU."""
    name, cubin = ZEROS
    side = {
        "pair": "last_block_sum",
        "form": "zeros",
        "cubin": STRUCTS / "cubin" / cubin,
        "spec": STRUCTS / "specs" / f"{name}.toml",
    }
    spec, symbol = resolved_spec(side, out)
    return {"kernel": symbol, "original": str(side["cubin"].relative_to(ROOT)), "spec": str(spec.relative_to(out))}


def main(argv: list[str] | None = None) -> int:
    """The CPU side's command line (`python -m benchmarks.studies structs --prepare ...`)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "gpu_build" / "structs")
    parser.add_argument("--budget", type=int, default=12, help="trials of the static-model search (default 12)")
    parser.add_argument("--only", default="", help="comma list of PAIR_FORM names (default: all)")
    parser.add_argument("--assemble", action="store_true", help="write the manifest of what is built; build nothing")
    args = parser.parse_args(argv)
    build(args.out, args.budget, set(filter(None, args.only.split(","))) or None, args.assemble)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
