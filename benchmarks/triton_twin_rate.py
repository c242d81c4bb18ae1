"""What the Triton hook's twin costs to compile, against Triton's own compile of the same config.

    python -m benchmarks.triton_twin_rate run --out twins.jsonl [--tree CHECKOUT] [--families a,b] [--gelu]
    python -m benchmarks.triton_twin_rate lists --out lists.jsonl [--tree CHECKOUT] [--families a,b] [--gelu]
        [--configs first]
    python -m benchmarks.triton_twin_rate table twins.jsonl [more.jsonl ...] [--out table.md]
    python -m benchmarks.triton_twin_rate bytes --out digests.jsonl [--tree CHECKOUT] [--families a,b] [--gelu]
    python -m benchmarks.triton_twin_rate same before.jsonl after.jsonl [--names-only]

A twin is a config marked `--reorder` (what `reorder.triton.with_reorder` adds beside each
config an autotuner times): Triton compiles it, and the stages hook rewrites its cubin
(reorder.triton.rewrite: the wgmma PTX step where it applies, LoadBatch, stall cuts, each
step verified). For every config of every family of reorder.suite.triton_kernels (and, with
--gelu, a GEMM with an erf-GELU epilogue of about 5,000 SASS instructions:
reorder/suite/triton_kernels/matmul_gelu.py) one child process, with the code of the checkout
--tree (default: this one), compiles for sm_90 with no GPU, each compile with its own empty
Triton cache and reorder cache: a warm-up compile (Triton's own first-call costs), Triton's
compile of the config, the imports of the modules the hook uses (reorder's own first-call
costs, paid once per process as Triton's are: `import_cpu_s`, not in the twin's time), then
the twin. CPU time is the process's user + system time plus
that of the children it waited for (ptxas, nvdisasm), so neither the machine's load nor
other processes count. One JSON line per config: both CPU times, their ratio, the cubin's
instruction count, whether the twin differs and the hook's note. `table` prints the median
ratio per family and over all configs, with the largest.

`lists` measures what `rt.with_reorder` adds per config: the same children, then `twin:1`
(whose compile walks the config's PTX move menus and compiles the first build of the twin
list: reorder.triton.twins), `twin:2` and `twin:3` (each compiles the menus it needs beyond
those kept) and `twin:1` again with a fresh Triton cache and the same reorder cache (a second
run, served from the builds kept on disk); `ratio` is then twin:1's compile over Triton's,
`twins_cpu_s` the other two, and each line carries the twins' notes.

`bytes` makes every build the hook makes for each config, in the same child processes: the
`--reorder` compile (the wgmma PTX step and the SASS moves) and `--reorder=twin:1..3`, and
records the SHA-256 of each cubin with its note; `same` compares two such files config by config, so a change
meant to make the twins cheaper can show it changed no output byte.
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
import atexit, shutil
atexit.register(shutil.rmtree, tmp, True)  # its caches are read by nothing after the child
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
start = cpu()  # reorder's first-call costs (its imports), paid once per process as Triton's are
import reorder.triton.twins, reorder.triton.builds, reorder.ptx.space.searchspace, reorder.ptx.space.plans
import_s = cpu() - start
twin_s, twin = build("twin", ptx_options="--reorder")
from reorder.binary.cubin import parse_cubin
from reorder.sass.model import decode_kernel
count = len(decode_kernel(parse_cubin(plain.cubin)).instructions)
if job.get("bytes"):
    import hashlib
    sha = lambda data: hashlib.sha256(data).hexdigest()
    out = {"plain": sha(plain.cubin), "moves": [sha(twin.cubin), getattr(twin.kernel.metadata, "reorder", "")]}
    for k in (1, 2, 3):
        made = build(f"twin{k}", ptx_options=f"--reorder=twin:{k}")[1]
        out[f"twin:{k}"] = [sha(made.cubin), getattr(made.kernel.metadata, "reorder", "")]
    print(json.dumps({**job, **out}))
    sys.exit(0)
print(json.dumps({**job, "instructions": count, "plain_cpu_s": round(plain_s, 3), "twin_cpu_s": round(twin_s, 3),
                  "import_cpu_s": round(import_s, 3),
                  "ratio": round(twin_s / plain_s, 2), "changed": twin.cubin != plain.cubin,
                  "note": getattr(twin.kernel.metadata, "reorder", "")}))
"""

# The child of `lists`: the same compiles, then what `rt.with_reorder` adds: `twin:1` (it builds
# the config's twin list), `twin:2` and `twin:3` (they read it), and `twin:1` once more with a
# fresh Triton cache but the same reorder cache (a second run: the list must be served).
_TWIN_CHILD = _CHILD.replace(
    'twin_s, twin = build("twin", ptx_options="--reorder")',
    """twin_s, twin = build("twin", ptx_options="--reorder=twin:1")
more = [build(f"twin{k}", ptx_options=f"--reorder=twin:{k}") for k in (2, 3)]
again_s, again = build("again", ptx_options="--reorder=twin:1")
job = {**job, "twins_cpu_s": [round(s, 3) for s, _ in more], "again_cpu_s": round(again_s, 3),
       "again_same": again.cubin == twin.cubin}
made = (twin, *(m for _, m in more))
job = {**job, "changed_twins": [c.cubin != plain.cubin for c in made],
       "twin_notes": [getattr(c.kernel.metadata, "reorder", "") for c in made]}""",
)


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


def run(
    tree: Path,
    out: Path,
    families: list[str] | None,
    gelu: bool,
    timeout: float,
    digests: bool = False,
    twin_lists: bool = False,
    configs: str | None = None,
) -> int:
    env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
    failed = 0
    started = time.monotonic()
    with out.open("w") as sink:
        for job in picked(jobs(families, gelu), configs):
            job = {**job, "bytes": True} if digests else job
            try:
                done = subprocess.run(
                    [sys.executable, "-c", _TWIN_CHILD if twin_lists else _CHILD, json.dumps(job)],
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


def picked(all_jobs: list[dict], configs: str | None) -> list[dict]:
    """The jobs `--configs` names: 'first' (each family's first two configs and every
    matmul_gelu one) or None (all)."""
    if configs is None:
        return all_jobs
    if configs != "first":
        raise SystemExit(f"--configs {configs!r}: expected 'first'")
    seen: dict[str, int] = {}
    out = []
    for job in all_jobs:
        seen[job["family"]] = seen.get(job["family"], 0) + 1
        if seen[job["family"]] <= 2 or job["family"] == "matmul_gelu":
            out.append(job)
    return out


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
            "| family | configs | instructions | Triton CPU-s | twin CPU-s | ratio (median) | ratio (largest) "
            "| twins 2-3 / Triton (median) |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |",
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
                f"{statistics.median(r['ratio'] for r in rs):.2f} | {max(r['ratio'] for r in rs):.2f} | "
                f"{_later_twins(rs)} |"
            )
        failed = [r for r in records if "error" in r]
        lines += [""] + [f"- FAILED {r['family']} {r['config']}: {r['error']}" for r in failed] + [""]
    return "\n".join(lines)


def _later_twins(records: list[dict]) -> str:
    """The median of twin:2's and twin:3's compile over Triton's (a `lists` file), else '-'."""
    ratios = [s / r["plain_cpu_s"] for r in records for s in r.get("twins_cpu_s", [])]
    return f"{statistics.median(ratios):.2f}" if ratios else "-"


def _names_only(record: dict) -> dict:
    """A `lists` record without its digests (two checkouts at other paths: Triton's
    -lineinfo puts the source path in every cubin, so no digest of theirs can agree)."""
    return {k: v for k, v in record.items() if k not in ("plain", "moves", "twin:1", "twin:2", "twin:3")}


def same(before: Path, after: Path, digests: bool = True) -> tuple[int, list[str]]:
    """(configs compared, one line per config whose builds differ or that failed in either).
    `digests`: compare the builds' bytes too (both runs from checkouts at one path)."""

    def load(path: Path) -> dict[str, dict]:
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        return {json.dumps([r["family"], r["config"]], sort_keys=True): r for r in records}

    a, b = load(before), load(after)
    if not digests:
        a, b = ({k: _names_only(r) for k, r in m.items()} for m in (a, b))
    fields = ("plain", "moves", "twin:1", "twin:2", "twin:3", "twin_notes")
    lines = []
    for key in sorted(a.keys() | b.keys()):
        ra, rb = a.get(key, {}), b.get(key, {})
        if "error" in ra or "error" in rb or not ra or not rb:
            lines.append(f"{key}: missing or failed ({ra.get('error', '')} / {rb.get('error', '')})")
            continue
        differ = [f for f in fields if ra.get(f) != rb.get(f)]
        if differ:
            lines.append(f"{key}: differs in {', '.join(differ)}")
    return len(a.keys() | b.keys()), lines


def _compile_options(p: argparse.ArgumentParser) -> None:
    """The options of every command that compiles the configs in child processes."""
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose code compiles (default: this one)")
    p.add_argument("--families", help="comma-separated family names (default: all)")
    p.add_argument(
        "--gelu", action="store_true", help="also the GEMM with an erf-GELU epilogue (about 5,000 instructions)"
    )
    p.add_argument("--timeout", type=float, default=1800.0, help="wall seconds per config before it counts as failed")
    p.add_argument("--configs", help="'first': each family's first two configs (default: all)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.triton_twin_rate", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    for name, what in (
        ("run", "compile every config and its twin, one child process each"),
        ("lists", "compile every config and its three twins (the twin list), one child each"),
        ("bytes", "every build the hook makes per config, as SHA-256 digests"),
    ):
        _compile_options(sub.add_parser(name, help=what))
    c = sub.add_parser("same", help="compare two `bytes` files config by config")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    c.add_argument("--names-only", action="store_true", help="notes only, not digests")
    t = sub.add_parser("table", help="summarize runs")
    t.add_argument("runs", type=Path, nargs="+")
    t.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.what in ("run", "lists", "bytes"):
        families = args.families.split(",") if args.families else None
        return run(
            args.tree,
            args.out,
            families,
            args.gelu,
            args.timeout,
            twin_lists=args.what == "lists",
            digests=args.what == "bytes",
            configs=args.configs,
        )
    if args.what == "same":
        count, lines = same(args.before, args.after, digests=not args.names_only)
        print("\n".join([*lines, f"{count - len(lines)} of {count} configs identical in every build"]))
        return 1 if lines else 0
    text = table(args.runs)
    if args.out:
        args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
