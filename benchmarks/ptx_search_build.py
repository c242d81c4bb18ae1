"""CPU side of the two-level search benchmark: every candidate built here, none on the GPU.

    python -m benchmarks.ptx_search_build [--out gpu_build/ptx_search] [--kernels K,...]
        [--ptx-cap 8] [--other-cap 3] [--jobs 1]

The GPU is scarce, so the search's candidate building is done ahead, on the CPU, and the
GPU only checks and times (benchmarks/ptx_search_gpu.py picks the best per launch shape by
measurement). Per suite kernel (reorder/suite/suite.toml), from its nvcc PTX
(benchmarks/kernels/ptx_candidates/source, `nvcc -ptx -O3 -arch=sm_90`) under the suite's
no-alias setting:

- PTX+SASS candidates: PTX variants (reorder.build.ptxlevel: the plan seeds first, then each
  decision of the registered kinds alone at each alternative, ranked barrier, top, store,
  near, other kinds; distinct PTX only, up to --ptx-cap for rmsnorm_triton_style and
  --other-cap for the rest), each compiled by ptxas -O3 and verified, with the SASS
  families 'none' and 'sc' on top (and 'sb+sc', 'lb+sc' on the first two): exactly what
  the search's build workers make of those picks (reorder.build.space.build_candidate);
- SASS-only candidates: the SASS search's seeds on the suite's cubin (slice batches, load
  batches, stall cuts, each grouping with stall cuts), as the SASS-only search starts.

OUT/manifest.json lists per kernel its original cubin (the suite's, copied), launch shapes
(rows 1, 16, 1024 for the RMSNorms, else the spec's own), the sweep points the winners are
re-checked at, and every candidate (name, level, moves, cubin, sha256, build seconds) or
why it could not be built. Identical binaries are kept once.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import time
from pathlib import Path

import tomllib

from benchmarks.kernels.build import CUBIN_DIR, KERNEL_DIR, all_kernels, cubin_name, source_for_kernel
from reorder.build.ptxlevel import PtxLevel, picks_of, seed_params
from reorder.build.space import Choice, build_candidate
from reorder.ptx.space.registry import OFF, Instance
from reorder.ptx.space.searchspace import walk
from reorder.suite.sweep import sweep_points

ROOT = Path(__file__).resolve().parent.parent
SOURCE_PTX = KERNEL_DIR / "ptx_candidates" / "source"
RMS = ("rmsnorm_triton_style", "rms_norm_f32")
RMS_ROWS = (1, 16, 1024)
SASS_SEEDS = ("sb", "lb", "sc", "sb+sc", "lb+sc")
RANK = {"barrier": 0, "top": 1, "store": 2, "near": 3}
# Kernels whose stall cuts take minutes per candidate to build and verify (warp_select_k32:
# 2000 SASS instructions in 107 blocks, each block's entry state walked over the kernel): built
# without the stall-cut family, at both levels alike, and the manifest says so.
NO_STALL_CUTS = ("warp_select_k32", "warp_select_k100")


def suite() -> list[dict]:
    return tomllib.loads((ROOT / "reorder" / "suite" / "suite.toml").read_text())["kernel"]


def shapes(kernel: str) -> list[dict]:
    """The launch shapes a winner is picked at: rows 1, 16, 1024 for the RMSNorms, else the spec's own."""
    return [{"rows": n} for n in RMS_ROWS] if kernel in RMS else [{}]


def sweep(kernel: str) -> list[dict]:
    spec = tomllib.loads((KERNEL_DIR / "specs" / f"{kernel}.toml").read_text())
    return sweep_points(spec)


def ptx_variants(level: PtxLevel, cap: int) -> list[tuple]:
    """Distinct PTX variants as pick tuples: the plan seeds, then single decisions (ranked)."""
    module, options = level.module(), level.options
    seeds = [picks_of(p, level) for p in seed_params(level) if p["sass"] == "none"]
    singles = []
    for peels in [()] + [tuple(p for p in s if p.kind == "peel") for s in seeds]:
        peeled = walk(module, options, lambda inst, peels=peels: _chosen(inst, peels))
        for inst in peeled.offered:
            if inst.kind == "peel":
                continue
            for alt in inst.choices[1:]:
                singles.append((RANK.get(alt, 4), (*peels, _pick(inst, alt))))
    ordered = seeds + [p for _, p in sorted(singles, key=lambda rp: rp[0])]
    out, texts = [], set()
    for picks in ordered:
        try:
            text = walk(module, options, lambda inst, picks=picks: _chosen(inst, picks)).module.text
        except Exception:  # noqa: BLE001 - a variant that cannot be made is not offered
            continue
        if text != module.text and text not in texts:
            texts.add(text)
            out.append(picks)
        if len(out) == cap:
            break
    return out


def _pick(inst: Instance, choice: str):
    from reorder.ptx.space.registry import Pick

    return Pick(inst.kind, inst.key, choice)


def _chosen(inst: Instance, picks: tuple) -> str:
    return next((p.choice for p in picks if (p.kind, p.key) == (inst.kind, inst.key)), OFF)


def candidates(kernel: str, noalias: bool, cap: int) -> list[tuple[str, str, Choice]]:
    """(name, level, choice) of every candidate to build for one kernel."""
    ptx = SOURCE_PTX / Path(source_for_kernel(kernel)).with_suffix(".ptx").name
    level = PtxLevel(str(ptx), kernel, noalias, "nvcc")
    out = []
    for k, picks in enumerate(ptx_variants(level, cap)):
        combos = ("none", "sc") + (("sb+sc", "lb+sc") if k < 2 else ())
        if kernel in NO_STALL_CUTS:
            combos = ("none",) + (("sb", "lb") if k < 2 else ())
        for combo in combos:
            out.append((f"ptx{k}-{combo}", "ptx+sass", Choice(ptx=picks, sass="" if combo == "none" else combo)))
    return out


def sass_candidates(cubin: Path, kernel: str, noalias: bool) -> list[tuple[str, str, Choice]]:
    from reorder.binary.cubin import read_cubin
    from reorder.build.space import search_space
    from reorder.sass.model import decode_kernel

    space = search_space(decode_kernel(read_cubin(cubin), kernel), noalias)
    sizes = {"sb": len(space.slice_batches), "lb": len(space.load_batches), "sc": len(space.stall_cuts)}
    out = []
    for combo in SASS_SEEDS:
        fams = combo.split("+")
        if kernel in NO_STALL_CUTS and "sc" in fams:
            continue
        if all(sizes[f] for f in fams):
            pick = {f: tuple(range(sizes[f])) if f in fams else () for f in sizes}
            out.append((f"sass-{combo}", "sass", Choice(pick["lb"], pick["sc"], (), pick["sb"])))
    return out


def build_kernel(entry: dict, out: Path, cap: int) -> dict:
    kernel, noalias = entry["name"], bool(entry.get("noalias", False))
    source = source_for_kernel(kernel)
    original = out / cubin_name(source)
    if not original.is_file():
        shutil.copyfile(CUBIN_DIR / cubin_name(source), original)
    ptx = SOURCE_PTX / Path(source).with_suffix(".ptx").name
    level = PtxLevel(str(ptx), kernel, noalias, "nvcc")
    record = {
        "kernel": kernel,
        "noalias": noalias,
        "original": original.name,
        "ptx": str(ptx.relative_to(ROOT)),
        "shapes": shapes(kernel),
        "sweep": sweep(kernel),
        "candidates": [],
        "refused": [],
        "note": "stall cuts not built (minutes per candidate here)" if kernel in NO_STALL_CUTS else "",
    }
    seen: set[str] = set()
    for name, kind, choice in candidates(kernel, noalias, cap) + sass_candidates(original, kernel, noalias):
        start = time.perf_counter()
        built = build_candidate(str(original), kernel, noalias, choice, level if choice.ptx else None)
        seconds = round(time.perf_counter() - start, 2)
        if built.data is None:
            record["refused"].append({"name": name, "reason": built.reason})
        elif built.sha256 not in seen:
            seen.add(built.sha256)
            path = out / kernel / f"{name}.cubin"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(built.data)
            record["candidates"].append(
                {
                    "name": name,
                    "level": kind,
                    "moves": choice.label(),
                    "cubin": str(path.relative_to(out)),
                    "sha256": built.sha256,
                    "build_s": seconds,
                }
            )
        print(
            f"{kernel} {name}: {'refused: ' + built.reason if built.data is None else 'built'} ({seconds} s)",
            flush=True,
        )
    return record


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=ROOT / "gpu_build" / "ptx_search")
    p.add_argument("--kernels", help="comma list (default: the whole suite)")
    p.add_argument("--ptx-cap", type=int, default=8, help="PTX variants for rmsnorm_triton_style (default 8)")
    p.add_argument("--other-cap", type=int, default=3, help="PTX variants for the other kernels (default 3)")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    wanted = set(args.kernels.split(",")) if args.kernels else None
    manifest_path = args.out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {"kernels": []}
    done = {k["kernel"]: k for k in manifest["kernels"]}
    own = set(all_kernels())
    for entry in suite():
        if entry["name"] not in own:  # a struct-parameter twin (benchmarks/kernels/structs): no suite PTX
            print(f"{entry['name']}: skipped (its source is not one of the suite's nvcc PTX files)", flush=True)
            continue
        if wanted is None or entry["name"] in wanted:
            cap = args.ptx_cap if entry["name"] == "rmsnorm_triton_style" else args.other_cap
            done[entry["name"]] = build_kernel(entry, args.out, cap)
            manifest = {"commit": _commit(), "kernels": [done[e["name"]] for e in suite() if e["name"] in done]}
            manifest_path.write_text(json.dumps(manifest, indent=1))
    print(f"wrote {manifest_path}: {sum(len(k['candidates']) for k in manifest['kernels'])} candidates")
    return 0


def _commit() -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT, check=False
    )
    return done.stdout.strip() or "unknown"


if __name__ == "__main__":
    raise SystemExit(main())
