"""Everything the Triton benchmark needs from a compiler, built on the CPU for the H200 run.

    python -m reorder.suite.triton_build --out gpu_build/triton [--families a,b] [--jobs 2]

For each kernel family of reorder.suite.triton_kernels and each of its configs (num_warps x
num_stages, or x the `tl.range` stages of a load-only loop), Triton compiles the kernel for
sm_90 with no GPU (reorder.triton.compile: the JIT's own binder on stand-in tensors, so the
cubin is the one `kernel[grid](...)` would launch); the cubin is the config's **original**.
reorder's candidates for it:

- `sass`: SliceBatch/LoadBatch then stall cuts on Triton's cubin (reorder.triton.rewrite.
  moves_binary), verified against the compiler's schedule; left out when the static model
  predicts no gain (the original would be timed twice);
- `ptx-<mode>`: GlobalHoist plans on Triton's PTX (reorder.ptx.space.plans: barrier, top, store,
  branch), the moved PTX compiled by **Triton's own cubin stage** (the backend's make_cubin
  with the config's options: the same ptxas, flags and PTX options as the original) and
  verified as a compiler's cubin is (reorder.build.ptxcandidate.verdict); identical cubins once;
- `ptx-loop-<choice>`, `ptx-reuse-on`: the registered PTX move kinds beyond the hoists
  (reorder.ptx.space.registry; KIND_CHOICES): Prefetch at distance 1 to 4 or UnrollBatch by 2 or 4 on
  every loop Triton left unpipelined, and ReuseLoad, compiled and verified the same way;
- `ptx-wgmma-on`: the loop-exit wgmma wait moved and the register waits made exact
  (reorder.ptx.moves.wgmma), so ptxas stops serializing the tensor-core ops;
- `ptx-<mode>+sass`: the SASS pipeline on the first PTX candidate's cubin and on
  `ptx-wgmma-on`'s (both levels).

`stage-check` records that Triton's unmodified PTX through that same cubin stage gives the
original byte for byte.

All pointers are assumed not to alias (every buffer here is its own allocation). A build that
fails is a manifest entry with its reason, never a stop. Every shape of a family is compiled
too: its cubin must be the config's original (Triton specializes ints on == 1 and on
divisibility by 16; every size here is a multiple of 16), else the shape is marked and the GPU
run skips it for that config. Each shape's launch spec per config comes from the metadata
(reorder.triton.launch).

OUT/manifest.json lists it all (paths relative to OUT); OUT/triton_cache is the Triton cache
the compiles filled (the GPU run points TRITON_CACHE_DIR at a copy, so its JIT cross-check
finds the same cubins instead of compiling); OUT/reorder_cache holds what the stages hook
answers a config marked `--reorder=noalias` (the `sass` step), for the README example's run
(REORDER_CACHE on the GPU; valid while reorder's sources are the build's: `code_digest`). The GPU
side only loads, checks and times: reorder/suite/triton_gpu.py.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from reorder.suite.rows import error_line

PTX_MODES = ("barrier", "top", "store", "branch")
# registered PTX move kinds (reorder.ptx.space.registry) beyond the hoist plans, and the alternatives
# built for them: every instance of the kind takes the same one (the loop moves pipeline a
# `tl.range` loop Triton left unpipelined, next to Triton's own LOOP_STAGES configs)
KIND_CHOICES = {
    "loop": ("prefetch1", "prefetch2", "prefetch3", "prefetch4", "unroll2", "unroll4"),
    "reuse": ("on",),
    "wgmma": ("on",),
}
WGMMA_CANDIDATE = "ptx-wgmma-on"  # also gets the SASS pipeline on top (`_both`), as the first PTX candidate does


def label_of(config: dict) -> str:
    return "-".join(f"{k}{v}" for k, v in sorted(config.items())) or "default"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------- candidates


def sass_candidate(cubin: bytes) -> tuple[bytes | None, str]:
    """(the static SASS pipeline's binary or None when it keeps the original, what happened)."""
    from reorder.triton.rewrite import moves_binary

    out = moves_binary(cubin, noalias=True)
    return (None, "no change predicted faster") if out == cubin else (out, "slicebatch/loadbatch + stall cuts")


def triton_cubin_stage(ptx: str, config_kwargs: dict) -> bytes:
    """Compile `ptx` exactly as Triton's cubin stage would for this config: the backend's
    make_cubin with the options the JIT parsed (same ptxas, flags and ptx_options)."""
    from reorder.triton.compile import cubin_stage

    return cubin_stage(ptx, config_kwargs, 90)


def _plan_moves(module, kernel: str, mode: str):
    from reorder.ptx.space.plans import plan

    moved, moves = plan(module, kernel, True, mode)
    return moved, [m.describe() for m in moves]


def _kind_moves(module, kernel: str, kind_name: str, choice: str):
    import reorder.ptx.space.kinds  # noqa: F401 - registers every kind
    from reorder.ptx.space.registry import MoveOptions, Pick, kind_named

    kind, options = kind_named(kind_name), MoveOptions(kernel, True)
    picks = [Pick(kind.name, i.key, choice) for i in kind.instances(module, options) if choice in i.choices]
    if not picks:
        return module, []
    moved, done = kind.apply(module, options, picks)
    return moved, list(done)


def ptx_candidates(ptx: str, kernel: str, config_kwargs: dict, folder: Path) -> list[dict]:
    """One candidate per PTX plan or registered kind's alternative that moves something
    (identical cubins once)."""
    from reorder.ptx.model.model import parse_module

    module = parse_module(ptx)
    ways: list[tuple[str, Callable[[], Any]]] = [
        (f"ptx-{mode}", functools.partial(_plan_moves, module, kernel, mode)) for mode in PTX_MODES
    ]
    ways += [
        (f"ptx-{kind}-{choice}", functools.partial(_kind_moves, module, kernel, kind, choice))
        for kind, choices in KIND_CHOICES.items()
        for choice in choices
    ]
    rows: list[dict] = []
    seen: dict[str, str] = {}
    for name, make in ways:
        try:
            moved, moves = make()
            rows.append(_ptx_row(name, moved, moves, kernel, config_kwargs, folder, seen))
        except Exception as exc:  # noqa: BLE001 - a plan that fails is a row, the next plan runs
            rows.append({"name": name, "status": "failed", "reason": error_line(exc)})
    return rows


def _ptx_row(
    name: str, moved, moves: list[str], kernel: str, config_kwargs: dict, folder: Path, seen: dict[str, str]
) -> dict:
    """Compile a moved module with Triton's cubin stage, verify it, keep it unless a duplicate."""
    from reorder.build.ptxcandidate import verdict

    if not moves:
        return {"name": name, "status": "none", "reason": "nothing to move"}
    cubin = triton_cubin_stage(moved.text, config_kwargs)
    digest = sha(cubin)
    if digest in seen:
        return {"name": name, "status": "duplicate", "reason": f"same cubin as {seen[digest]}"}
    path = folder / f"{name}.cubin"
    path.write_bytes(cubin)
    (folder / f"{name}.ptx").write_text(moved.text)
    judged = verdict(path, kernel)
    if not judged.ok:
        path.unlink()
        return {"name": name, "status": "rejected", "reason": f"verifier: {judged.violations[0]}"}
    seen[digest] = name
    return {
        "name": name,
        "status": "ok",
        "cubin": path.name,
        "sha256": digest,
        "moves": " ".join(moves),
        "inherited": len(judged.inherited),
    }


# ---------------------------------------------------------------- one config


def build_config(family_name: str, index: int, out: str) -> dict:
    """Compile one config at every shape of its family, write its original, candidates and
    launch specs; the manifest entry (run in a worker process)."""
    from reorder.suite.triton_kernels import family, stand_in_args
    from reorder.triton.compile import compile_call
    from reorder.triton.launch import launch_spec, spec_dict

    started = time.monotonic()
    fam = family(family_name)
    config = fam.configs[index]
    label = label_of(config)
    folder = Path(out) / fam.name / label
    folder.mkdir(parents=True, exist_ok=True)
    entry: dict[str, Any] = {
        "label": label,
        "config": config,
        "folder": f"{fam.name}/{label}",
        "specs": {},
        "other_cubin": [],
    }
    try:
        first = None
        for shape in fam.shapes:
            case = fam.case(shape)
            call = compile_call(case.kernel, *stand_in_args(case), arch=90, **case.constexprs, **config)
            if first is None:
                first = call
                (folder / "original.cubin").write_bytes(call.cubin)
                (folder / "original.ptx").write_text(call.kernel.asm["ptx"])
                md = call.kernel.metadata
                entry.update(
                    {
                        "kernel": call.name,
                        "original": "original.cubin",
                        "sha256": sha(call.cubin),
                        "num_warps": md.num_warps,
                        "shared": md.shared,
                        "num_stages": md.num_stages,
                    }
                )
            if call.cubin != first.cubin:
                entry["other_cubin"].append(list(shape))
                continue
            spec = launch_spec(call.kernel, call.values, case.grid, outputs=case.outputs, inits=case.inits)
            entry["specs"]["x".join(map(str, shape))] = spec_dict(spec)
    except Exception as exc:  # noqa: BLE001 - a config Triton cannot build is a manifest row
        return {**entry, "status": "failed", "reason": error_line(exc), "seconds": time.monotonic() - started}
    entry["candidates"] = _candidates(first, config, folder)
    entry.update({"status": "ok", "seconds": round(time.monotonic() - started, 1)})
    return entry


def _candidates(call: Any, config: dict, folder: Path) -> list[dict]:
    rows = [_stage_check(call, config)]
    try:
        _keep_for_hook(call, config, folder.parents[1])
    except Exception as exc:  # noqa: BLE001 - the README step then computes it on the GPU host
        rows.append({"name": "hook-cache", "status": "failed", "reason": error_line(exc)})
    try:
        data, note = sass_candidate(call.cubin)
        if data is None:
            rows.append({"name": "sass", "status": "none", "reason": note})
        else:
            (folder / "sass.cubin").write_bytes(data)
            rows.append({"name": "sass", "status": "ok", "cubin": "sass.cubin", "sha256": sha(data), "moves": note})
    except Exception as exc:  # noqa: BLE001
        rows.append({"name": "sass", "status": "failed", "reason": error_line(exc)})
    rows += ptx_candidates(call.kernel.asm["ptx"], call.name, config, folder)
    ok = [r for r in rows if r["name"].startswith("ptx-") and r["status"] == "ok"]
    both = [r for k, r in enumerate(ok) if k == 0 or r["name"] == WGMMA_CANDIDATE]
    return rows + [_both(r, folder) for r in both]


def _keep_for_hook(call: Any, config: dict, out: Path) -> None:
    """The answer the stages hook gives a config marked `--reorder=noalias` (the same static
    path: the wgmma PTX step when it applies, then the SASS moves on its cubin), stored where
    the hook looks (OUT/reorder_cache, REORDER_CACHE on the GPU): the README example then
    compiles there without searching."""
    from reorder.triton.request import Request
    from reorder.triton.rewrite import async_wgmma, static_path

    made = async_wgmma(call.kernel.asm["ptx"], lambda text: triton_cubin_stage(text, config))
    base = made[0] if made is not None else call.cubin
    moved, _ = sass_candidate(base)
    path = static_path(base, Request(noalias=True), out / "reorder_cache")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(moved if moved is not None else base)


def _both(ptx_row: dict, folder: Path) -> dict:
    """The SASS pipeline on the first PTX candidate's cubin: the two levels together."""
    name = f"{ptx_row['name']}+sass"
    try:
        data, note = sass_candidate((folder / ptx_row["cubin"]).read_bytes())
    except Exception as exc:  # noqa: BLE001
        return {"name": name, "status": "failed", "reason": error_line(exc)}
    if data is None:
        return {"name": name, "status": "none", "reason": note}
    (folder / f"{name}.cubin").write_bytes(data)
    return {
        "name": name,
        "status": "ok",
        "cubin": f"{name}.cubin",
        "sha256": sha(data),
        "moves": f"{ptx_row['moves']} then {note}",
    }


def _stage_check(call: Any, config: dict) -> dict:
    """Triton's unmodified PTX through the same cubin stage gives the original byte for byte:
    the PTX candidates are compiled exactly as the original was."""
    try:
        same = triton_cubin_stage(call.kernel.asm["ptx"], config) == call.cubin
    except Exception as exc:  # noqa: BLE001
        return {"name": "stage-check", "status": "failed", "reason": error_line(exc)}
    return {
        "name": "stage-check",
        "status": "same" if same else "differs",
        "reason": "Triton's PTX through the cubin stage " + ("gives" if same else "does NOT give") + " the original",
    }


# ---------------------------------------------------------------- the whole build


def family_entry(fam: Any) -> dict:
    """What the GPU run needs to know of a family besides its configs: shapes, bytes, FLOPs."""
    shapes = []
    for shape in fam.shapes:
        case = fam.case(shape)
        shapes.append(
            {
                "shape": "x".join(map(str, shape)),
                "dims": list(shape),
                "bytes": case.bytes_moved,
                "flops": case.flops,
                "outputs": list(case.outputs),
            }
        )
    return {
        "name": fam.name,
        "dtype": fam.dtype,
        "kernel_source": fam.case(fam.shapes[0]).kernel.fn.__module__,
        "shapes": shapes,
        "configs": [],
    }


def build(out: Path, names: list[str], jobs: int, only: set[int] | None = None) -> dict:
    """Build every config of the named families (those at the indices in `only`, when given)
    with `jobs` processes (1: in this process), then write the manifest."""
    import triton

    from reorder.base import provenance
    from reorder.suite.triton_kernels import family
    from reorder.triton.digest import code_digest

    out.mkdir(parents=True, exist_ok=True)
    os.environ["TRITON_CACHE_DIR"] = str((out / "triton_cache").resolve())
    started = time.monotonic()
    families = [family_entry(family(n)) for n in names]
    work = [
        (f["name"], i, str(out))
        for f in families
        for i in range(len(family(f["name"]).configs))
        if only is None or i in only
    ]
    with contextlib.ExitStack() as stack:
        mapper = (
            map
            if jobs <= 1
            else stack.enter_context(ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn"))).map
        )
        for (name, _index, _), entry in zip(work, mapper(build_config, *zip(*work))):
            fam = next(f for f in families if f["name"] == name)
            fam["configs"].append(entry)
            ok = [c["name"] for c in entry.get("candidates", []) if c["status"] == "ok"]
            print(
                f"[{time.monotonic() - started:.0f} s] {name} {entry['label']}: {entry['status']} "
                f"{entry.get('reason', '')} candidates {ok}",
                file=sys.stderr,
                flush=True,
            )
    for fam in families:
        fam["code_digest"] = code_digest()
    manifest = {
        "triton": triton.__version__,
        "commit": provenance.commit(),
        "code_digest": code_digest(),
        "made": time.strftime("%Y-%m-%d %H:%M:%S"),
        "noalias": True,
        "arch": 90,
        "seconds": round(time.monotonic() - started, 1),
        "families": _merged(out, families),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def _merged(out: Path, families: list[dict]) -> list[dict]:
    """The families just built, after those of an earlier build in `out` that were not rebuilt
    (rebuilding one family refreshes it and keeps the rest)."""
    try:
        earlier = json.loads((out / "manifest.json").read_text())["families"]
    except (OSError, ValueError, KeyError):
        earlier = []
    rebuilt = {f["name"] for f in families}
    return [f for f in earlier if f["name"] not in rebuilt] + families


def parse(argv: list[str] | None) -> argparse.Namespace:
    from reorder.suite.triton_kernels import FAMILIES

    p = argparse.ArgumentParser(prog="python -m reorder.suite.triton_build", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path("gpu_build/triton"))
    p.add_argument("--families", default=",".join(f.name for f in FAMILIES))
    p.add_argument("--jobs", type=int, default=2, help="build processes (1: in this one)")
    p.add_argument("--configs", help="comma list of config indices to build (default: all)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    from reorder.suite.triton_kernels import FAMILIES

    args = parse(argv)
    names = [n for n in args.families.split(",") if n]
    unknown = sorted(set(names) - {f.name for f in FAMILIES})
    if unknown:
        print(f"triton_build: no family {unknown} (have: {', '.join(f.name for f in FAMILIES)})", file=sys.stderr)
        return 2
    only = {int(i) for i in args.configs.split(",")} if args.configs else None
    manifest = build(args.out, names, args.jobs, only)
    configs = [c for f in manifest["families"] for c in f["configs"]]
    candidates = sum(1 for c in configs for k in c.get("candidates", []) if k["status"] == "ok")
    print(
        f"{args.out / 'manifest.json'}: {len(configs)} configs ({sum(c['status'] == 'ok' for c in configs)} built), "
        f"{candidates} candidates, {manifest['seconds']:.0f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
