"""Triton's one line on the GPU: `triton.autotune(configs)` against `triton.autotune(rt.with_reorder(configs))`.

    python -m benchmarks.triton_one_line build --out gpu_build/one_line --set user [--jobs 2]
    python -m benchmarks.triton_one_line run --build gpu_build/one_line --out OUT --set user [--deadline 300]
    python -m benchmarks.triton_one_line tune --build gpu_build/one_line --out OUT --families a,b [--budget 8]
    python -m benchmarks.triton_one_line report OUT [--prebuilt CELLS.csv]

Sets: `user`, the kernels written apart from the project (benchmarks.triton_user), every
shape; `bench`, the Triton benchmark's own families (benchmarks.triton_kernels), every shape
but three of the feed-forward's 24.

`build` (CPU, no GPU): every config and its three twins compiled for sm_90 through the stages
hook at every shape (reorder.triton.compile on stand-in tensors: the JIT's own binder, so each
cubin is the one the autotuner will launch), which fills Triton's cache (OUT/triton_cache) and
reorder's (OUT/reorder_cache: the twin lists and the verifier's judgments); the hook's time per
twin is kept (OUT/manifest.json). Triton records the kernel's source path in its PTX, so the
run must start from the same absolute path as the build for the caches to be found.

`run` (GPU): per shape, the plain autotuner and the one-line autotuner over the same configs,
each timing every config with Triton's do_bench (warmup 5 ms, rep 25 ms: the same for both);
`rt.verify` on the one-line autotuner (every twin its pruning keeps, byte-checked against its
plain config on fresh inputs); the outputs of its pick against torch; then the two picks'
cubins timed against each other with paired timing (timing.paired: same rounds, random order,
warm L2 and cold L2, 95% bootstrap CI). One CSV row per shape and L2 state
(OUT/one_line_cells.csv), one per verified build (OUT/one_line_checks.csv).

`tune` (GPU): `rt.tune` (the search over Triton's PTX and the SASS, every candidate checked
and timed on the GPU) on the config the plain autotuner picks at the family's middle shape,
against that config without reorder (OUT/one_line_tune.csv).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from benchmarks.rows import error_line, write_rows

WARMUP_MS, REP_MS = 5, 25  # the do_bench both autotuners time their configs with
FFN_SHAPES = ((128, 512, 512), (512, 512, 4096), (2048, 1024, 4096))
PAIR_BUDGET_S = 0.8
TUNE_FAMILIES = ("xent_fp16", "down_proj_fp16")


def families(which: str) -> list:
    """The families of a set (see the module docstring)."""
    import dataclasses

    if which == "user":
        from benchmarks.triton_user import FAMILIES

        return list(FAMILIES)
    from benchmarks.triton_kernels import FAMILIES

    return [dataclasses.replace(f, shapes=FFN_SHAPES) if f.name == "ffn_swiglu_fp16" else f for f in FAMILIES]


def family(name: str):
    for which in ("user", "bench"):
        for f in families(which):
            if f.name == name:
                return f
    raise KeyError(name)


def configs_of(fam) -> list:
    """The family's configs as triton.Config (num_stages 3, Triton's default, unless given)."""
    import triton

    out = []
    for c in fam.configs:
        kwargs = {k: v for k, v in c.items() if k not in ("num_warps", "num_stages")}
        out.append(triton.Config(kwargs, num_warps=c["num_warps"], num_stages=c.get("num_stages", 3)))
    return out


def key_of(case) -> list[str]:
    """The autotune key: the case's int arguments (sizes and strides)."""
    return [n for n, a in zip(case.names, case.args) if isinstance(a, int) and not isinstance(a, bool)]


def label(config) -> str:
    from reorder.triton.tune import label_of

    return label_of({k: v for k, v in config.all_kwargs().items() if k != "ptx_options"})


def request_of(config) -> str:
    from reorder.triton.request import split_options

    found = split_options(config.all_kwargs().get("ptx_options"))[0]
    return f"twin:{found.rank}" if found is not None else ""


# ---------------------------------------------------------------- build (CPU)


def build_unit(set_name: str, family_name: str, index: int) -> dict:
    """Compile one config and its twins at every shape through the hook (a worker process);
    then rt.verify's static half at each shape, which keeps the verifier's judgments."""
    import triton

    import reorder.triton as rt
    from benchmarks.triton_kernels import stand_in_args
    from reorder.triton.compile import compile_call

    os.environ["REORDER_QUIET"] = "1"
    rt.install(say=None)
    fam = next(f for f in families(set_name) if f.name == family_name)
    config = configs_of(fam)[index]
    twins = rt.with_reorder([config], rt.Request(noalias=True))[1:]
    row: dict[str, Any] = {"family": fam.name, "config": label(config), "specializations": 0}
    seen: set[bytes] = set()
    started = time.monotonic()
    try:
        for shape in fam.shapes:
            case = fam.case(shape)
            args = stand_in_args(case)
            t0 = time.monotonic()
            plain = compile_call(case.kernel, *args, arch=90, **case.constexprs, **config.all_kwargs())
            fresh = plain.cubin not in seen
            if fresh:
                row["plain_s"] = round(row.get("plain_s", 0.0) + time.monotonic() - t0, 2)
            seen.add(plain.cubin)
            for k, twin in enumerate(twins, 1):
                t0 = time.monotonic()
                call = compile_call(case.kernel, *args, arch=90, **case.constexprs, **twin.all_kwargs())
                if fresh:
                    row[f"twin{k}_s"] = round(row.get(f"twin{k}_s", 0.0) + time.monotonic() - t0, 2)
                    row[f"twin{k}"] = getattr(call.kernel.metadata, "reorder", "")
            row["specializations"] += fresh
            tuner = triton.autotune([config, *twins], key=key_of(case))(case.kernel)
            rt.verify(tuner, *args, grid=case.grid, arch=90, outputs=case.outputs, inits=case.inits, **case.constexprs)
        row["status"] = "ok"
    except Exception as exc:  # noqa: BLE001 - a unit that fails is a manifest row
        row.update({"status": "failed", "reason": error_line(exc)})
    row["seconds"] = round(time.monotonic() - started, 1)
    return row


def build(out: Path, set_name: str, jobs: int, only: set[str] | None) -> dict:
    import triton

    from reorder.base import provenance
    from reorder.triton.digest import code_digest

    out.mkdir(parents=True, exist_ok=True)
    os.environ["TRITON_CACHE_DIR"] = str((out / "triton_cache").resolve())
    os.environ["REORDER_CACHE"] = str((out / "reorder_cache").resolve())
    units = [
        (set_name, f.name, i)
        for f in families(set_name)
        if only is None or f.name in only
        for i in range(len(f.configs))
    ]
    units.sort(key=lambda u: family(u[1]).configs[u[2]].get("LOOP_STAGES", 0) != 1)  # the longest first
    started = time.monotonic()
    rows = []
    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) as pool:
        for row in pool.map(build_unit, *zip(*units)):
            rows.append(row)
            print(f"[{time.monotonic() - started:.0f} s] {row['family']} {row['config']}: {row['status']}", flush=True)
    manifest = {
        "set": set_name,
        "triton": triton.__version__,
        "commit": provenance.commit(),
        "code_digest": code_digest(),
        "source": str(Path(__file__).resolve().parents[1]),
        "made": time.strftime("%Y-%m-%d %H:%M:%S"),
        "seconds": round(time.monotonic() - started, 1),
        "units": rows,
    }
    path = out / f"manifest_{set_name}.json"
    path.write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


# ---------------------------------------------------------------- command line


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.triton_one_line", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build")
    b.add_argument("--out", type=Path, required=True)
    b.add_argument("--set", choices=("user", "bench"), default="user")
    b.add_argument("--jobs", type=int, default=2)
    b.add_argument("--families", help="comma list (default: the whole set)")
    r = sub.add_parser("run")
    r.add_argument("--build", type=Path, required=True)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--set", choices=("user", "bench"), default="user")
    r.add_argument("--families", help="comma list (default: the whole set)")
    r.add_argument("--deadline", type=float, default=300.0, help="seconds; shapes not begun by then are skipped")
    r.add_argument("--sets", type=int, default=2, help="fresh input sets per byte check")
    t = sub.add_parser("tune")
    t.add_argument("--build", type=Path, required=True)
    t.add_argument("--out", type=Path, required=True)
    t.add_argument("--families", default=",".join(TUNE_FAMILIES))
    t.add_argument("--budget", type=int, default=8)
    t.add_argument("--seconds", type=float, default=60.0)
    g = sub.add_parser("report")
    g.add_argument("out", type=Path)
    g.add_argument("--prebuilt", type=Path, help="the prebuilt-candidate harness's triton_cells.csv to set beside")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    only = set(args.families.split(",")) if getattr(args, "families", None) else None
    if args.command == "build":
        manifest = build(args.out, args.set, args.jobs, only)
        failed = [u for u in manifest["units"] if u["status"] != "ok"]
        print(f"{len(manifest['units'])} configs built, {len(failed)} failed, {manifest['seconds']:.0f} s")
        return 0
    if args.command == "run":
        return run(args.build, args.out, args.set, only, args.deadline, args.sets)
    if args.command == "tune":
        return tune_rows(args.build, args.out, sorted(only or TUNE_FAMILIES), args.budget, args.seconds)
    return report(args.out, args.prebuilt)


if __name__ == "__main__":
    raise SystemExit(main())
