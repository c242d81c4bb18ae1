"""Triton's one line on the GPU: `triton.autotune(configs)` against `triton.autotune(rt.with_reorder(configs))`.

    python -m benchmarks.triton_one_line build --out gpu_build/one_line --set user [--jobs 2] [--middle]
    python -m benchmarks.triton_one_line run --build gpu_build/one_line --out OUT --set user [--deadline 300]
    python -m benchmarks.triton_one_line tune --build gpu_build/one_line --out OUT --families a,b [--budget 8]
    python -m benchmarks.triton_one_line report OUT [--prebuilt CELLS.csv]

Sets: `user`, the kernels written apart from the project (benchmarks.triton_user), every
shape; `bench`, the Triton benchmark's own families (reorder.suite.triton_kernels), every shape
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
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from reorder.suite.rows import error_line, write_rows

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
    from reorder.suite.triton_kernels import FAMILIES

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


def build_unit(set_name: str, family_name: str, index: int, middle: bool = False) -> dict:
    """Compile one config and its twins at every shape (`middle`: the family's middle shape
    only) through the hook (a worker process); then rt.verify's static half at each shape,
    which keeps the verifier's judgments."""
    import triton

    import reorder.triton as rt
    from reorder.suite.triton_kernels import stand_in_args
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
        for shape in [s for s in fam.shapes if not middle or s == fam.tune_shape]:
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


def build(out: Path, set_name: str, jobs: int, only: set[str] | None, middle: bool = False) -> dict:
    import triton

    from reorder.base import provenance
    from reorder.triton.digest import code_digest

    out.mkdir(parents=True, exist_ok=True)
    os.environ["TRITON_CACHE_DIR"] = str((out / "triton_cache").resolve())
    os.environ["REORDER_CACHE"] = str((out / "reorder_cache").resolve())
    units = [
        (set_name, f.name, i, middle)
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
    from triton.runtime.cache import triton_key

    manifest = {
        "set": set_name,
        "triton": triton.__version__,
        "triton_key": triton_key(),
        "commit": provenance.commit(),
        "code_digest": code_digest(),
        "source": str(Path(__file__).resolve().parents[1]),
        "made": time.strftime("%Y-%m-%d %H:%M:%S"),
        "seconds": round(time.monotonic() - started, 1),
        "middle": middle,
        "units": rows,
    }
    path = out / f"manifest_{set_name}.json"
    path.write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


# ---------------------------------------------------------------- run (GPU)


def _caches(build: Path, set_name: str) -> dict:
    """Unpack the build, point reorder at a writable copy of its cache, and serve Triton's
    cache entries the build made (see _transplanting); the counts of what was served."""
    import shutil
    import tarfile
    import tempfile

    pack = build / f"pack_{set_name}.tgz"
    if pack.is_file() and not (build / f"manifest_{set_name}.json").is_file():
        with tarfile.open(pack) as tar:
            tar.extractall(build, filter="data")
    source = build / "reorder_cache"
    if source.is_dir():
        target = Path(tempfile.mkdtemp(prefix="reorder_cache-")) / "cache"
        shutil.copytree(source, target)
        os.environ["REORDER_CACHE"] = str(target)
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="triton_cache-")
    manifest = json.loads((build / f"manifest_{set_name}.json").read_text())
    return _transplanting(build / "triton_cache", manifest["triton_key"])


def _transplanting(carried: Path, built_key: str) -> dict:
    """Serve the build's Triton cache entries under this machine's cache keys, as Triton asks
    for them. Triton's key starts with a hash of its own shared library, which differs between
    the build machine's Python and this one's wheel; the rest (source, signature, options,
    backend with its ptxas, environment) is what decides the compile. So when Triton computes
    a key here, the entry the build stored under the build's first part and the same rest is
    copied to where Triton looks, its file list pointed at the copy. Only compile time is
    saved; `cache_check` compiles one config afresh and compares the cubin."""
    import hashlib
    import shutil

    import triton.compiler.compiler as compiler
    from triton import knobs
    from triton.runtime.cache import _base32, triton_key

    inner, here = compiler.get_cache_key, triton_key()
    served = {"served": 0, "missed": 0, "on": True}

    def key(src, backend, options, env_vars):
        found = inner(src, backend, options, env_vars=env_vars)
        new = Path(knobs.cache.dir) / _base32(hashlib.sha256(found.encode()).hexdigest())
        old = carried / _base32(hashlib.sha256((built_key + found[len(here) :]).encode()).hexdigest())
        if not served["on"]:
            return found
        if not new.exists() and old.is_dir():
            shutil.copytree(old, new)
            for group in new.glob("__grp__*.json"):
                data = json.loads(group.read_text())
                data["child_paths"] = {k: str(new / Path(v).name) for k, v in data["child_paths"].items()}
                group.write_text(json.dumps(data))
            served["served"] += 1
        elif not new.exists():
            served["missed"] += 1
        return found

    compiler.get_cache_key = key
    return served


def cache_check(fam, served: dict) -> str:
    """One config compiled afresh here (its own empty cache) against the served entry."""
    import tempfile

    from reorder.suite.triton_kernels import torch_args
    from reorder.triton.compile import compile_call

    case = fam.case(fam.shapes[0])
    args, _ = torch_args(case)
    config = configs_of(fam)[0].all_kwargs()
    kept = compile_call(case.kernel, *args, **case.constexprs, **config).cubin
    previous = os.environ["TRITON_CACHE_DIR"]
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="triton_fresh-")
    served["on"] = False
    try:
        fresh = compile_call(case.kernel, *args, **case.constexprs, **config).cubin
    finally:
        os.environ["TRITON_CACHE_DIR"] = previous
        served["on"] = True
    return "served cubin = fresh compile" if fresh == kept else "served cubin DIFFERS from a fresh compile"


def do_bench(fn, quantiles=None):
    """The timer both autotuners use (Triton's own, shorter than its default)."""
    import triton

    return triton.testing.do_bench(fn, warmup=WARMUP_MS, rep=REP_MS, quantiles=quantiles)


def pair_job(a_cubin: str, b_cubin: str, spec, b_block, b_shared: int, l2: str, budget_s: float) -> dict:
    """Worker job: B's time over A's, paired (timing.paired), with its 95% CI."""
    from timing.paired import time_pair

    t = time_pair(a_cubin, b_cubin, spec, l2=l2, budget_s=budget_s, b_shared=b_shared, b_block=tuple(b_block))
    return {
        "ratio": t.ratio.ratio,
        "ratio_ci_low": t.ratio.low,
        "ratio_ci_high": t.ratio.high,
        "plain_us": t.a_us,
        "reorder_us": t.b_us,
        "rounds": t.rounds,
        "dropped_rounds": t.dropped_rounds,
        "clock_mhz": t.clock_mhz,
    }


def _autotuned(case, configs, args) -> tuple[Any, float]:
    """An autotuner over `configs` run once at these arguments: (it, wall seconds)."""
    import torch
    import triton

    kernel = triton.autotune(configs, key=key_of(case), do_bench=do_bench)(case.kernel)
    started = time.perf_counter()
    kernel[case.grid](*args, **case.constexprs)
    torch.cuda.synchronize()
    return kernel, time.perf_counter() - started


def _math(fam, case, kernel, args, named) -> str:
    """The one-line autotuner's outputs on these inputs against torch, within the family's tolerance."""
    import torch

    kernel[case.grid](*args, **case.constexprs)
    torch.cuda.synchronize()
    expected = case.reference(named)
    worst = 0.0
    for name, want in expected.items():
        got = named[name].float()
        if not torch.allclose(got, want.float(), rtol=fam.tol, atol=fam.tol):
            return f"OUTSIDE tolerance at {name} (max abs {float((got - want.float()).abs().max()):.3g})"
        worst = max(worst, float((got - want.float()).abs().max()))
    return f"within {fam.tol:g} (max abs {worst:.2g})"


def case_rows(fam, shape, index: int, pool, sets: int, folder: Path) -> tuple[list[dict], list[dict]]:
    """One shape: both autotuners, rt.verify, the math, the picks timed paired (warm, cold)."""
    import reorder.triton as rt
    from reorder.suite.triton_kernels import torch_args
    from reorder.triton.compile import compile_call
    from reorder.triton.launch import launch_spec
    from timing.worker import Job

    case = fam.case(shape)
    args, named = torch_args(case, seed=index)
    configs = configs_of(fam)
    plain, plain_wall = _autotuned(case, configs, args)
    one, one_wall = _autotuned(case, rt.with_reorder(configs, rt.Request(noalias=True)), args)
    a, b = plain.best_config, one.best_config
    checked = rt.verify(
        one, *args, grid=case.grid, outputs=case.outputs, inits=case.inits, sets=sets, pool=pool, **case.constexprs
    )
    base = {"family": fam.name, "shape": "x".join(map(str, shape))}
    checks = [
        {
            **base,
            "config": v.label,
            "build": v.request,
            "check": v.check,
            "detail": v.detail,
            "verifier": v.verifier,
            "chosen": v.chosen,
        }
        for v in checked
    ]
    calls = [compile_call(case.kernel, *args, **case.constexprs, **c.all_kwargs()) for c in (a, b)]
    specs = [launch_spec(c.kernel, c.values, case.grid, outputs=case.outputs, inits=case.inits) for c in calls]
    pick = next((v for v in checked if v.chosen), None)
    row = {
        **base,
        "configs": len(configs),
        "builds": len(one.configs),
        "plain_pick": label(a),
        "reorder_pick": label(b) + (f" {request_of(b)}" if request_of(b) else ""),
        "reorder_pick_is_twin": bool(request_of(b)),
        "reorder_pick_note": getattr(calls[1].kernel.metadata, "reorder", "") or "",
        "pick_check": pick.check if pick else "Triton's own build",
        "twins_identical": sum(v.check == "identical" for v in checked),
        "twins_same_binary": sum(v.check == "same binary" for v in checked),
        "twins_not_identical": sum(not v.ok for v in checked),
        "verify_ok": checked.ok,
        "math": _math(fam, case, one, args, named),
        "plain_bench_s": round(plain.bench_time, 3),
        "reorder_bench_s": round(one.bench_time, 3),
        "plain_autotune_s": round(plain_wall, 3),
        "reorder_autotune_s": round(one_wall, 3),
    }
    cells = []
    same = calls[0].cubin == calls[1].cubin and specs[0] == specs[1]
    paths = []
    for k, c in enumerate(calls):
        path = folder / f"{fam.name}-{base['shape']}-{'ab'[k]}.cubin"
        path.write_bytes(c.cubin)
        paths.append(str(path))
    for l2 in ("warm", "cold"):
        if same:
            cells.append(
                {
                    **row,
                    "l2": l2,
                    "ratio": 1.0,
                    "ratio_ci_low": 1.0,
                    "ratio_ci_high": 1.0,
                    "timing": "same build: not timed",
                }
            )
            continue
        result = pool.run(
            Job.of(
                pair_job,
                paths[0],
                paths[1],
                specs[0],
                specs[1].block,
                specs[1].shared,
                l2,
                PAIR_BUDGET_S,
                timeout_s=120,
            )
        )
        if result.status == "ok":
            cells.append({**row, "l2": l2, **result.value, "timing": "paired"})
        else:
            cells.append({**row, "l2": l2, "timing": f"{result.status}: {result.reason}"})
    for cell in cells:
        if "ratio" in cell:
            cell.update(
                {
                    "speedup": 1 / cell["ratio"],
                    "speedup_ci_low": 1 / cell["ratio_ci_high"],
                    "speedup_ci_high": 1 / cell["ratio_ci_low"],
                }
            )
    return cells, checks


def visits(chosen: list, middle: bool) -> list[tuple[Any, int, tuple[int, ...]]]:
    """(family, index, shape) in the order the run takes them: every family's middle shape
    first, then the others, so a deadline costs shapes, never a whole family."""
    out = [(f, i, s) for f in chosen for i, s in enumerate(f.shapes) if not middle or s == f.tune_shape]
    return sorted(out, key=lambda v: v[2] != v[0].tune_shape)


def run(
    build: Path,
    out: Path,
    set_name: str,
    only: set[str] | None,
    deadline: float,
    sets: int,
    middle: bool = False,
    order: list[str] | None = None,
) -> int:
    import tempfile

    from reorder.base import provenance
    from reorder.triton.digest import code_digest
    from timing.cli_support import worker_device
    from timing.worker import WorkerPool

    started = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    served = _caches(build, set_name)
    os.environ["REORDER_QUIET"] = "1"
    import reorder.triton as rt

    rt.install(say=None)
    manifest = json.loads((build / f"manifest_{set_name}.json").read_text())
    chosen = [f for f in families(set_name) if only is None or f.name in only]
    if order:
        chosen.sort(key=lambda f: order.index(f.name) if f.name in order else len(order))
    stamps = {
        "gpu": provenance.gpu_name(),
        "commit": provenance.commit(),
        "digest": code_digest(),
        "built_digest": manifest["code_digest"],
        "cache_check": cache_check(chosen[0], served),
    }
    print(f"{stamps}", flush=True)
    cells, checks = [], []
    scratch = Path(tempfile.mkdtemp(prefix="one-line-"))
    with WorkerPool(devices=[worker_device()]) as pool:
        for fam, index, shape in visits(chosen, middle):
            base = {"family": fam.name, "shape": "x".join(map(str, shape))}
            if time.monotonic() - started > deadline:
                cells.append({**stamps, **base, "timing": "skipped: deadline"})
                continue
            t0 = time.monotonic()
            try:
                got, seen = case_rows(fam, shape, index, pool, sets, scratch)
            except Exception as exc:  # noqa: BLE001 - a failed shape is a row; the next runs
                got, seen = [{**base, "timing": f"failed: {error_line(exc)}"}], []
            counts = {k: v for k, v in served.items() if k != "on"}
            cells += [{**stamps, **c, **counts, "seconds": round(time.monotonic() - t0, 1)} for c in got]
            checks += seen
            write_rows(out / "one_line_cells.csv", cells)
            write_rows(out / "one_line_checks.csv", checks)
            last = got[-1]
            print(
                f"[{time.monotonic() - started:.0f} s] {fam.name} {base['shape']}: "
                f"{last.get('plain_pick')} -> {last.get('reorder_pick')} speedup "
                f"{[round(c.get('speedup', 0), 3) for c in got]} {last.get('timing')} "
                f"verify_ok={last.get('verify_ok')}",
                flush=True,
            )
    report(out, None)
    return 0


# ---------------------------------------------------------------- tune (GPU)


def tune_rows(
    build: Path | None,
    out: Path,
    names: list[str],
    budget: int,
    seconds: float,
    shape_index: int | None = None,
    config_label: str | None = None,
) -> int:
    """rt.tune on the plain autotuner's pick at each family's middle shape (see the module
    docstring); or at the family's shape `shape_index`, on its config labelled `config_label`
    (then no plain autotuning runs and no build is needed: the config compiles here)."""
    import shutil
    import tempfile

    import reorder.triton as rt
    from reorder.suite.triton_kernels import torch_args

    out.mkdir(parents=True, exist_ok=True)
    if build is not None:
        _caches(build, "user")["on"] = False  # the search compiles here, with this host's own ptxas
    os.environ["REORDER_QUIET"] = "1"
    folder = Path(tempfile.mkdtemp(prefix="one-line-tune-"))  # cubins, specs, studies: only reports come back
    rows = []
    for name in names:
        fam = family(name)
        shape = fam.tune_shape if shape_index is None else fam.shapes[shape_index]
        case = fam.case(shape)
        args, _ = torch_args(case, seed=7)
        t0 = time.monotonic()
        row: dict[str, Any] = {"family": name, "shape": "x".join(map(str, shape))}
        try:
            chosen = _chosen_config(fam, case, args, config_label)
            row["config"] = label(chosen)
            result = rt.tune(
                case.kernel,
                *args,
                grid=case.grid,
                configs=[chosen],
                budget=budget,
                seconds=seconds,
                outputs=case.outputs,
                inits=case.inits,
                noalias=True,
                device="gpu",
                folder=folder / name,
                **case.constexprs,
            )
            (tuned,) = result.rows
            for report_md in tuned.folder.glob("*.reorder/report.md"):
                shutil.copy(report_md, out / f"tune_{name}.md")
            row.update(
                {
                    "score": tuned.score,
                    "measured": tuned.measured,
                    "changed": tuned.changed,
                    "moves": tuned.moves,
                    "check": tuned.check,
                    "ptx": tuned.ptx,
                    "key": tuned.key,
                }
            )
        except Exception as exc:  # noqa: BLE001 - one family's failure is a row
            row["error"] = error_line(exc)
        row["seconds"] = round(time.monotonic() - t0, 1)
        rows.append(row)
        write_rows(out / "one_line_tune.csv", rows)
        print(row, flush=True)
    return 0


def _chosen_config(fam, case, args, config_label: str | None):
    """The config rt.tune searches: the plain autotuner's pick, or the one labelled so."""
    if config_label is None:
        plain, _ = _autotuned(case, configs_of(fam), args)
        return plain.best_config
    found = [c for c in configs_of(fam) if label(c) == config_label]
    if not found:
        raise KeyError(f"{fam.name}: no config {config_label!r} (have: {', '.join(label(c) for c in configs_of(fam))})")
    return found[0]


# ---------------------------------------------------------------- report


def report(out: Path, prebuilt: Path | None) -> int:
    """summary.md from the rows in OUT (the prebuilt-candidate harness's cells beside, when given)."""
    from benchmarks.triton_one_line_report import write_summary

    print(write_summary(out, prebuilt))
    return 0


# ---------------------------------------------------------------- command line


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.triton_one_line", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build")
    b.add_argument("--out", type=Path, required=True)
    b.add_argument("--set", choices=("user", "bench"), default="user")
    b.add_argument("--jobs", type=int, default=2)
    b.add_argument("--families", help="comma list (default: the whole set)")
    b.add_argument("--middle", action="store_true", help="each family's middle shape only")
    r = sub.add_parser("run")
    r.add_argument("--build", type=Path, required=True)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--set", choices=("user", "bench"), default="user")
    r.add_argument("--families", help="comma list (default: the whole set)")
    r.add_argument("--deadline", type=float, default=300.0, help="seconds; shapes not begun by then are skipped")
    r.add_argument("--sets", type=int, default=2, help="fresh input sets per byte check")
    r.add_argument("--middle", action="store_true", help="each family's middle shape only")
    t = sub.add_parser("tune")
    t.add_argument("--build", type=Path, help="the build (needed unless --config is given)")
    t.add_argument("--out", type=Path, required=True)
    t.add_argument("--families", default=",".join(TUNE_FAMILIES))
    t.add_argument("--budget", type=int, default=8)
    t.add_argument("--seconds", type=float, default=60.0)
    t.add_argument("--shape", type=int, help="index of the family's shape (default: its middle shape)")
    t.add_argument("--config", help="the config's label (default: the plain autotuner's pick)")
    g = sub.add_parser("report")
    g.add_argument("out", type=Path)
    g.add_argument("--prebuilt", type=Path, help="the prebuilt-candidate harness's triton_cells.csv to set beside")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    only = set(args.families.split(",")) if getattr(args, "families", None) else None
    if args.command == "build":
        manifest = build(args.out, args.set, args.jobs, only, args.middle)
        failed = [u for u in manifest["units"] if u["status"] != "ok"]
        print(f"{len(manifest['units'])} configs built, {len(failed)} failed, {manifest['seconds']:.0f} s")
        return 0
    if args.command == "run":
        order = args.families.split(",") if args.families else None
        return run(args.build, args.out, args.set, only, args.deadline, args.sets, args.middle, order)
    if args.command == "tune":
        if args.build is None and args.config is None:
            raise SystemExit("tune: give --build (the plain autotuner's pick) or --config LABEL")
        names = sorted(only or TUNE_FAMILIES)
        return tune_rows(args.build, args.out, names, args.budget, args.seconds, args.shape, args.config)
    return report(args.out, args.prebuilt)


if __name__ == "__main__":
    raise SystemExit(main())
