"""CPU side of the loop-move benchmark (benchmarks/loops_gpu.py): every cubin and launch, built
without a GPU.

    python -m benchmarks.loops_build [--out gpu_build/loops] [--jobs 2]

Triton's looped RMSNorm (reorder/suite/triton_kernels/rmsnorm.py, fp32) for each BLOCK in {512,
1024} and num_warps in {4, 8}, compiled for sm_90 by Triton 3.6 (reorder.triton.compile: the
JIT's own binding and options):

- Triton's configs: kernel num_stages 1-4 (the `tl.range` loops at 1 stage), and `tl.range`
  num_stages 2-4 (kernel num_stages 1); identical cubins are kept once (`same_as`);
- reorder's candidates from the num_stages=1 PTX: Prefetch d = 1..4 and UnrollBatch k = 2, 4
  on both loops (x, w and y are distinct tensors: --assume-noalias), and Prefetch 1, 2 with
  the second pass's prologue loads hoisted above the block reduction's barrier; each
  compiled by Triton's ptxas with Triton's flags (reorder.ptx.toolchain.compile) and verified.

Launches: for every cell (N in {4096, 8192} x rows in {16, 1024}) the spec at that shape and
at a second shape (3 rows, N + BLOCK/2 + 16 columns: the last block partial, so the loop
bound and the masks are exercised), from Triton's metadata (reorder.triton.launch). With
--suite, the suite's loop kernels (find_index, normalize_weights, embedding_bag sum/mean,
spmv, rms_norm_f32, warp_select k32/k100, cfo_ta_est) get Prefetch 1, 2 and UnrollBatch 2, 4
candidates per movable loop from nvcc's PTX as well, under reorder/suite/suite.toml's no-alias
setting (normalize_weights with
--assume-noalias, as DESIGN.md's measured batch; find_index with --speculate). Everything lands
in OUT with OUT/manifest.json (what the GPU script reads) and OUT/summary.md (what was
built, verified, refused).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BLOCKS, WARPS, NS, ROWS = (512, 1024), (4, 8), (4096, 8192), (16, 1024)
KERNEL_STAGES, LOOP_STAGES = (1, 2, 3, 4), (2, 3, 4)
MOVES = tuple(f"prefetch{d}" for d in (1, 2, 3, 4)) + ("unroll2", "unroll4", "prefetch1+hoist", "prefetch2+hoist")
SUITE_LOOPS = {
    "find_index": ("particlefilter.ptx", False, True),
    "normalize_weights": ("particlefilter.ptx", True, False),  # as DESIGN.md's measured batch
    "embedding_bag_sum": ("embedding_bag.ptx", False, False),
    "embedding_bag_mean": ("embedding_bag.ptx", False, False),
    "spmv_csr_vector": ("spmv_csr.ptx", False, False),
    "rms_norm_f32": ("rmsnorm.ptx", True, False),
    "warp_select_k32": ("kselect.ptx", False, False),
    "warp_select_k100": ("kselect.ptx", False, False),
    "cfo_ta_est": ("cfo_ta_est.ptx", False, False),
}  # kernel: (source PTX, noalias, speculate)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _case(block: int, rows: int, n: int):
    import dataclasses

    from reorder.suite.triton_kernels import rmsnorm_looped_case

    return dataclasses.replace(rmsnorm_looped_case("float32", (rows, n)), constexprs={"BLOCK": block})


def _compile(block: int, warps: int, rows: int, n: int, kernel_stages: int, loop_stages: int):
    from reorder.suite.triton_kernels import stand_in_args
    from reorder.triton.compile import compile_call

    case = _case(block, rows, n)
    return case, compile_call(
        case.kernel,
        *stand_in_args(case),
        arch=90,
        BLOCK=block,
        LOOP_STAGES=loop_stages,
        num_warps=warps,
        num_stages=kernel_stages,
    )


def _spec_file(path: Path, block: int, warps: int, rows: int, n: int, kernel_stages: int, loop_stages: int) -> int:
    """Write the launch spec at (rows, n); returns the kernel's dynamic shared memory."""
    from reorder.triton.launch import launch_spec, spec_toml

    case, call = _compile(block, warps, rows, n, kernel_stages, loop_stages)
    spec = launch_spec(call.kernel, call.values, case.grid, outputs=case.outputs)
    path.write_text(spec_toml(spec))
    return spec.shared


def triton_configs(out: Path, block: int, warps: int) -> list[dict]:
    """Triton's configs of one (BLOCK, num_warps): cubin, PTX, shared memory, duplicates marked."""
    rows, seen = [], {}
    for ks, ls in [(k, 1) for k in KERNEL_STAGES] + [(1, s) for s in LOOP_STAGES]:
        _, call = _compile(block, warps, 16, NS[0], ks, ls)
        name = f"b{block}_w{warps}_ns{ks}_ls{ls}"
        digest = _sha(call.cubin)
        row = {
            "name": name,
            "kind": "triton",
            "num_stages": ks,
            "loop_stages": ls,
            "sha256": digest,
            "shared": int(call.kernel.metadata.shared),
            "same_as": seen.get(digest),
        }
        if row["same_as"] is None:
            seen[digest] = name
            (out / f"{name}.cubin").write_bytes(call.cubin)
            (out / f"{name}.ptx").write_text(call.kernel.asm["ptx"])
            row["cubin"] = f"{name}.cubin"
        rows.append(row)
    return rows


def reorder_candidates(out: Path, block: int, warps: int, original: dict) -> list[dict]:
    """reorder's candidates from the num_stages=1 PTX, built as the search builds them (a walk
    over the registered kinds, reorder.ptx.space.searchspace): each loop move on both loops, and
    with '+hoist' the second pass's prologue loads also above the block reduction's barrier
    (GlobalHoist 'barrier', the placement DESIGN.md measured by hand); compiled and verified."""
    from reorder.base.errors import ReorderError
    from reorder.build.ptxcandidate import read_ptx, write_and_compile
    from reorder.ptx.space.registry import OFF, MoveOptions
    from reorder.ptx.space.searchspace import walk

    source = out / f"{original['name']}.ptx"
    module = read_ptx(source)
    kernel = module.kernels[0].name
    options = MoveOptions(kernel, noalias=True)
    rows = []
    for choice in MOVES:
        name = f"b{block}_w{warps}_{choice.replace('+', '_')}"
        row = {"name": name, "kind": "reorder", "move": choice, "shared": original["shared"]}
        loop_choice, hoist = choice.split("+")[0], "+hoist" in choice

        def decide(inst, loop_choice=loop_choice, hoist=hoist) -> str:
            if inst.kind == "loop":
                return loop_choice
            return "barrier" if inst.kind == "hoist" and hoist and "barrier" in inst.choices else OFF

        try:
            done = walk(module, options, decide)
            built = write_and_compile(source, kernel, done.module, list(done.applied), out / f"{name}.ptx")
            row.update(
                {
                    "cubin": built.cubin.name,
                    "sha256": built.sha256,
                    "moves": list(done.applied),
                    "verify": "legal" if built.verdict.ok else f"{len(built.verdict.violations)} violations",
                    "build_s": round(built.seconds, 2),
                    "recipe": built.recipe,
                }
            )
            if not built.verdict.ok:
                row["cubin"] = None
        except ReorderError as exc:
            row.update({"cubin": None, "refused": str(exc)})
        rows.append(row)
    return rows


def cells(out: Path, block: int, warps: int, shared_by_loop_stages: dict[int, int]) -> list[dict]:
    """The launch specs of every cell of this (BLOCK, num_warps), at its shape and a second one."""
    found = []
    for n in NS:
        second = n + block // 2 + 16
        for rows in ROWS:
            stem = f"b{block}_w{warps}_n{n}_r{rows}"
            _spec_file(out / f"{stem}.toml", block, warps, rows, n, 1, 1)
            _spec_file(out / f"{stem}.second.toml", block, warps, 3, second, 1, 1)
            found.append(
                {
                    "block": block,
                    "warps": warps,
                    "n": n,
                    "rows": rows,
                    "spec": f"{stem}.toml",
                    "second": f"{stem}.second.toml",
                    "second_shape": [3, second],
                }
            )
    return found


def build_triton(out: Path) -> dict:
    configs, all_cells = [], []
    for block in BLOCKS:
        for warps in WARPS:
            started = time.monotonic()
            triton_rows = triton_configs(out, block, warps)
            original = triton_rows[0]
            reorder_rows = reorder_candidates(out, block, warps, original)
            configs.append(
                {
                    "block": block,
                    "warps": warps,
                    "original": original["cubin"],
                    "variants": triton_rows + reorder_rows,
                    "seconds": round(time.monotonic() - started, 1),
                }
            )
            all_cells += cells(out, block, warps, {})
            print(
                f"BLOCK {block} warps {warps}: {sum(r.get('cubin') is not None for r in triton_rows)} distinct "
                f"Triton cubins, {sum(r.get('cubin') is not None for r in reorder_rows)} reorder candidates "
                f"({time.monotonic() - started:.0f} s)",
                flush=True,
            )
    return {"configs": configs, "cells": all_cells}


def build_suite(
    out: Path,
    distances: tuple[int, ...] = (1, 2),
    factors: tuple[int, ...] = (2, 4),
    only: frozenset[str] = frozenset(),
) -> list[dict]:
    """Prefetch/UnrollBatch candidates of the suite's loop kernels from nvcc's PTX (the suite's
    checked-in source PTX), each loop separately, with the suite's noalias setting: Prefetch
    at each of `distances`, UnrollBatch by each of `factors`; `only` names the kernels (all)."""
    from reorder.base.errors import ReorderError
    from reorder.build.ptxcandidate import read_ptx, write_and_compile
    from reorder.ptx.moves.prefetch import Prefetch, movable_loops
    from reorder.ptx.moves.unroll import UnrollBatch
    from reorder.ptx.toolchain.compile import compile_ptx

    source_dir = ROOT / "benchmarks/kernels/ptx_candidates/source"
    rows = []
    for kernel, (source, noalias, speculate) in SUITE_LOOPS.items():
        if only and kernel not in only:
            continue
        module = read_ptx(source_dir / source)
        original = out / "suite" / f"{Path(source).stem}.original.cubin"
        if not original.is_file():  # the source PTX compiled alone, with the candidates' recipe
            original.write_bytes(compile_ptx(source_dir / source).cubin.read_bytes())
        for label in movable_loops(module.function(kernel), noalias, speculate):
            for move in (
                *(Prefetch(kernel, label, d, noalias, speculate) for d in distances),
                *(UnrollBatch(kernel, label, k, noalias, speculate) for k in factors),
            ):
                name = f"{kernel}_{move.describe().replace(':', '_').replace('@', '_').replace('$', '')}"
                row = {
                    "kernel": kernel,
                    "source": source,
                    "move": move.describe(),
                    "noalias": noalias,
                    "speculate": speculate,
                    "original": f"suite/{original.name}",
                }
                try:
                    built = write_and_compile(
                        source_dir / source,
                        kernel,
                        move.apply(module),
                        [move.describe()],
                        out / "suite" / f"{name}.ptx",
                    )
                    row.update(
                        {
                            "cubin": f"suite/{built.cubin.name}",
                            "sha256": built.sha256,
                            "verify": "legal" if built.verdict.ok else "violations",
                        }
                    )
                    if not built.verdict.ok:
                        row["cubin"] = None
                except ReorderError as exc:
                    row.update({"cubin": None, "refused": str(exc)})
                rows.append(row)
                print(f"{kernel} {move.describe()}: {row.get('verify') or row.get('refused')}", flush=True)
    return rows


def summary_md(manifest: dict) -> str:
    built = (
        f"Triton {manifest['triton']}; built {manifest['date']} in {manifest['seconds']:.0f} s; "
        f"commit {manifest['commit']}"
    )
    lines = [
        "# Loop-move candidates built on the CPU (benchmarks/loops_build.py)",
        "",
        built,
        "",
        "| BLOCK | warps | variant | kind | sha256 | shared | verify / note |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in manifest["configs"]:
        for v in c["variants"]:
            note = v.get("verify") or (f"same cubin as {v['same_as']}" if v.get("same_as") else v.get("refused", ""))
            lines.append(
                f"| {c['block']} | {c['warps']} | {v['name']} | {v['kind']} | {str(v.get('sha256'))[:12]} | "
                f"{v['shared']} | {note} |"
            )
    lines += ["", f"{len(manifest['cells'])} cells (launch specs at the cell's shape and a second shape).", ""]
    if manifest.get("suite"):
        lines += ["| suite kernel | move | verify / refused |", "|---|---|---|"]
        lines += [f"| {r['kernel']} | {r['move']} | {r.get('verify') or r.get('refused')} |" for r in manifest["suite"]]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=ROOT / "gpu_build/loops")
    p.add_argument("--suite", action="store_true", help="also the suite's loop kernels (nvcc PTX)")
    p.add_argument("--suite-kernels", default="", help="comma list of suite loop kernels (default: all)")
    p.add_argument("--prefetch", default="1,2", help="Prefetch distances for the suite kernels (default 1,2)")
    p.add_argument("--unroll", default="2,4", help="UnrollBatch factors for the suite kernels (default 2,4)")
    args = p.parse_args(argv)
    os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="triton-cache-"))
    import triton

    from reorder.base import provenance

    started = time.monotonic()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "suite").mkdir(exist_ok=True)
    manifest = {
        "triton": triton.__version__,
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "commit": provenance.commit(),
        **build_triton(args.out),
    }
    numbers = lambda text: tuple(int(x) for x in text.split(",") if x)  # noqa: E731
    only = frozenset(filter(None, args.suite_kernels.split(",")))
    manifest["suite"] = build_suite(args.out, numbers(args.prefetch), numbers(args.unroll), only) if args.suite else []
    manifest["seconds"] = time.monotonic() - started
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    (args.out / "summary.md").write_text(summary_md(manifest))
    print(f"wrote {args.out / 'manifest.json'} and summary.md in {manifest['seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
