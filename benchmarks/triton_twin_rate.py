"""What the Triton hook's twin costs to compile, against Triton's own compile of the same config.

    python -m benchmarks.triton_twin_rate run --out twins.jsonl [--tree CHECKOUT] [--families a,b] [--gelu]
    python -m benchmarks.triton_twin_rate table twins.jsonl [more.jsonl ...] [--out table.md]

A twin is a config marked `--reorder` (what `reorder.triton.with_reorder` adds beside each
config an autotuner times): Triton compiles it, and the stages hook rewrites its cubin
(reorder.triton.rewrite: the wgmma PTX step where it applies, LoadBatch, stall cuts, each
step verified). For every config of every family of reorder.suite.triton_kernels (and, with
--gelu, a GEMM with an erf-GELU epilogue of about 5,000 SASS instructions:
reorder/suite/triton_kernels/matmul_gelu.py) one child process, with the code of the checkout
--tree (default: this one), compiles for sm_90 with no GPU, each compile with its own empty
Triton cache and reorder cache: a warm-up compile (Triton's own first-call costs), Triton's
compile of the config, then the twin. CPU time is the process's user + system time plus
that of the children it waited for (ptxas, nvdisasm), so neither the machine's load nor
other processes count. One JSON line per config: both CPU times, their ratio, the cubin's
instruction count, whether the twin differs and the hook's note. `table` prints the median
ratio per family and over all configs, with the largest.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GELU_SHAPE = (1024, 1024, 1024)
GELU_CONFIGS = ({"num_warps": 4, "num_stages": 3},)

# The child: compiles one config three times under the code on its PYTHONPATH (any layout
# since the hook exists); the GELU kernel is loaded from this checkout's file by path.
_CHILD = r"""
import importlib.util, json, os, resource, sys, tempfile

def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

job = json.loads(sys.argv[1])
tmp = tempfile.mkdtemp(prefix="twin-rate-")
os.environ["REORDER_CACHE"] = os.path.join(tmp, "reorder-cache")
os.environ["REORDER_QUIET"] = "1"
import triton
from reorder.suite.triton_kernels import StandInTensor, TensorArg, family, stand_in_args
from reorder.triton import hook
from reorder.triton.compile import compile_call

if job["family"] == "matmul_gelu":
    spec = importlib.util.spec_from_file_location("twin_rate_matmul_gelu", job["gelu"])
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    m, n, k = job["shape"]
    kernel = module.matmul_gelu
    args = (
        StandInTensor(TensorArg((m, k), "float16"), 0x10000),
        StandInTensor(TensorArg((k, n), "float16"), 0x20000),
        StandInTensor(TensorArg((m, n), "float16", "out"), 0x30000),
        m, n, k, k, n, n,
    )
    constexprs = {"BM": 128, "BN": 128, "BK": 64, "GROUP_M": 8}
else:
    fam = family(job["family"])
    case = fam.case(fam.shapes[0])
    kernel, args, constexprs = case.kernel, stand_in_args(case), case.constexprs

def build(tag, **extra):
    triton.knobs.cache.dir = os.path.join(tmp, "triton-cache-" + tag)
    start = cpu()
    call = compile_call(kernel, *args, arch=90, **constexprs, **job["config"], **extra)
    return cpu() - start, call

build("warm-up")
plain_s, plain = build("plain")
hook.install(say=None)
twin_s, twin = build("twin", ptx_options="--reorder")
from reorder.binary.cubin import parse_cubin
from reorder.sass.model import decode_kernel
count = len(decode_kernel(parse_cubin(plain.cubin)).instructions)
print(json.dumps({**job, "instructions": count, "plain_cpu_s": round(plain_s, 3), "twin_cpu_s": round(twin_s, 3),
                  "ratio": round(twin_s / plain_s, 2), "changed": twin.cubin != plain.cubin,
                  "note": getattr(twin.kernel.metadata, "reorder", "")}))
"""


def jobs(families: list[str] | None, gelu: bool) -> list[dict]:
    from reorder.suite.triton_kernels import FAMILIES

    out = [
        {"family": f.name, "config": config}
        for f in FAMILIES
        if families is None or f.name in families
        for config in f.configs
    ]
    if gelu:
        gelu_file = str(ROOT / "reorder" / "suite" / "triton_kernels" / "matmul_gelu.py")
        out += [{"family": "matmul_gelu", "config": c, "shape": GELU_SHAPE, "gelu": gelu_file} for c in GELU_CONFIGS]
    return out


def run(tree: Path, out: Path, families: list[str] | None, gelu: bool, timeout: float) -> int:
    env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
    failed = 0
    started = time.monotonic()
    with out.open("w") as sink:
        for job in jobs(families, gelu):
            try:
                done = subprocess.run(
                    [sys.executable, "-c", _CHILD, json.dumps(job)],
                    env=env,
                    cwd=tree,  # `python -c` puts its folder first on sys.path: the tree's code must win
                    capture_output=True,
                    text=True,
                    timeout=timeout,
                    check=False,
                )
                lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
                record = json.loads(lines[-1]) if done.returncode == 0 and lines else None
                why = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
            except subprocess.TimeoutExpired:
                record, why = None, f"over {timeout:.0f} s"
            if record is None:
                failed += 1
                record = {**job, "error": why}
            sink.write(json.dumps(record) + "\n")
            sink.flush()
            print(json.dumps(record), flush=True)
    print(f"{out}: done in {time.monotonic() - started:.0f} s, {failed} failed", file=sys.stderr)
    return 1 if failed else 0


def table(paths: list[Path]) -> str:
    """Per family: configs, median instructions, median CPU-s of each compile, median and
    largest ratio; then every configuration together."""
    lines = []
    for path in paths:
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        good = [r for r in records if "ratio" in r]
        lines += [
            f"### {path.name}",
            "",
            "| family | configs | instructions | Triton CPU-s | twin CPU-s | ratio (median) | ratio (largest) |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        by_family: dict[str, list[dict]] = {}
        for r in good:
            by_family.setdefault(r["family"], []).append(r)
        for name, rs in [
            *by_family.items(),
            ("all but matmul_gelu", [r for r in good if r["family"] != "matmul_gelu"]),
        ]:
            if not rs:
                continue
            lines.append(
                f"| {name} | {len(rs)} | {statistics.median(r['instructions'] for r in rs):.0f} | "
                f"{statistics.median(r['plain_cpu_s'] for r in rs):.2f} | "
                f"{statistics.median(r['twin_cpu_s'] for r in rs):.2f} | "
                f"{statistics.median(r['ratio'] for r in rs):.2f} | {max(r['ratio'] for r in rs):.2f} |"
            )
        failed = [r for r in records if "error" in r]
        lines += [""] + [f"- FAILED {r['family']} {r['config']}: {r['error']}" for r in failed] + [""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.triton_twin_rate", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    r = sub.add_parser("run", help="compile every config and its twin, one child process each")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose code compiles (default: this one)")
    r.add_argument("--families", help="comma-separated family names (default: all)")
    r.add_argument(
        "--gelu", action="store_true", help="also the GEMM with an erf-GELU epilogue (about 5,000 instructions)"
    )
    r.add_argument("--timeout", type=float, default=1800.0, help="wall seconds per config before it counts as failed")
    t = sub.add_parser("table", help="summarize runs")
    t.add_argument("runs", type=Path, nargs="+")
    t.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.what == "run":
        families = args.families.split(",") if args.families else None
        return run(args.tree, args.out, families, args.gelu, args.timeout)
    text = table(args.runs)
    if args.out:
        args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
