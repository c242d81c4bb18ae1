"""Same bytes: the outputs of `reorder stalls`, `reorder batch-loads` and `reorder optimize`
(static cost model, seeded) over the test corpus and the kernel suite, one digest per output,
so a refactor or a speed-up of the hot paths can be shown to change no output byte.

    python -m benchmarks.same_bytes run --tree /path/to/checkout --out before.jsonl
    python -m benchmarks.same_bytes compare before.jsonl after.jsonl --out comparison.md

`run` drives the `reorder` command of the checkout given by --tree (its own import paths,
whatever its layout) in a few child processes, each calling the command's `main` in-process
for one case after another. A case's record is the exit code plus the SHA-256 of the written
cubin, or the first line of the error when the command refused: a refusal must stay the same
refusal. The optimize case digests only the cubin (the report carries timestamps).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUITE_CUBINS = sorted((ROOT / "benchmarks" / "kernels" / "cubin").glob("*.cubin"))
CORPUS_CUBINS = sorted((ROOT / "tests" / "corpus" / "cubin").glob("sm_*/*.cubin")) + sorted(
    (ROOT / "tests" / "corpus" / "triton").glob("sm_*/*.cubin")
)
OPTIMIZE = ("--device", "cpu", "--seed", "7", "--budget", "6", "--jobs", "1", "--no-contributions")

# The child: runs the checkout's `reorder` main for each case read from stdin (one JSON list
# of argv per line) and prints one JSON record per case. Old layout: reorder.cli:main.
_CHILD = r"""
import contextlib, hashlib, io, json, sys
try:
    from reorder.cli.main import main
except ImportError:
    from reorder.cli import main
for line in sys.stdin:
    case = json.loads(line)
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            rc = main(case["argv"])
        except SystemExit as e:
            rc = e.code
    out = case["output"]
    try:
        digest = hashlib.sha256(open(out, "rb").read()).hexdigest()
    except OSError:
        digest = None
    lines = [l for l in err.getvalue().splitlines() if "error" in l]
    print(json.dumps({**case["key"], "rc": rc, "sha256": digest,
                      "error": lines[0] if rc and lines else None}), flush=True)
"""


def kernel_names(cubin: Path) -> list[str]:
    """The kernels of a cubin, read with this checkout's parser (names only: the cases' own
    work is done by the checkout under test)."""
    from reorder.binary.cubin import read_cubin

    return [k.name for k in read_cubin(cubin).kernels]


def kernel_stalls(cubin: Path, kernel: str) -> int:
    """The stall cycles of one kernel of a written cubin, from its control bits (read with this
    checkout's parser: it reads the bytes, not the checkout under test's answer)."""
    from reorder.binary.cubin import read_cubin
    from reorder.sass.control import ControlCode

    (text,) = [k.text for k in read_cubin(cubin).kernels if k.name == kernel]
    words = (int.from_bytes(text[i : i + 16], "little") for i in range(0, len(text), 16))
    return sum(ControlCode.from_word(w).stall for w in words)


def cases(work: Path, optimize_corpus: int, optimize_skip: tuple[str, ...] = ()) -> list[dict]:
    """Every (cubin, kernel) gets stalls, batch-loads and batch-loads --assume-noalias; every
    suite kernel and the first `optimize_corpus` corpus kernels also get optimize, except
    cubins whose path holds one of `optimize_skip` (a whole search there is too slow for a
    shared 2-core machine)."""
    out: list[dict] = []
    corpus_optimized = 0
    for cubin in SUITE_CUBINS + CORPUS_CUBINS:
        suite = cubin in SUITE_CUBINS
        rel = cubin.relative_to(ROOT).as_posix()
        for kernel in kernel_names(cubin):
            commands = [
                ("stalls", ["stalls"]),
                ("batch-loads", ["batch-loads"]),
                ("batch-loads-noalias", ["batch-loads", "--assume-noalias", "all"]),
            ]
            skipped = any(s in rel for s in optimize_skip)
            if not skipped and (suite or corpus_optimized < optimize_corpus):
                commands.append(("optimize", ["optimize", *OPTIMIZE]))
                corpus_optimized += 0 if suite else 1
            for name, argv in commands:
                output = work / f"{len(out)}.cubin"
                out.append(
                    {
                        "key": {"cubin": rel, "kernel": kernel, "command": name},
                        "output": str(output),
                        "argv": [*argv, str(cubin), "--kernel", kernel, "-o", str(output)],
                    }
                )
    return out


def run(tree: Path, out: Path, work: Path, jobs: int, optimize_corpus: int, optimize_skip: tuple[str, ...]) -> int:
    work.mkdir(parents=True, exist_ok=True)
    todo = cases(work, optimize_corpus, optimize_skip)
    env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
    started = time.monotonic()
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=work, env=env
        )
        for _ in range(jobs)
    ]
    for i, child in enumerate(children):
        child.stdin.write("".join(json.dumps(c) + "\n" for c in todo[i::jobs]))
        child.stdin.close()
    records = [json.loads(line) for child in children for line in child.stdout]
    codes = [child.wait() for child in children]
    if any(codes) or len(records) != len(todo):
        print(
            f"same_bytes: a child failed (exit {codes}); {len(records)} of {len(todo)} cases recorded", file=sys.stderr
        )
        return 1
    outputs = {(c["key"]["cubin"], c["key"]["kernel"], c["key"]["command"]): c["output"] for c in todo}
    for r in records:
        if r["sha256"] is not None:
            r["stalls"] = kernel_stalls(Path(outputs[(r["cubin"], r["kernel"], r["command"])]), r["kernel"])
    records.sort(key=lambda r: (r["cubin"], r["kernel"], r["command"]))
    out.write_text("".join(json.dumps(r) + "\n" for r in records))
    print(f"{len(records)} cases in {time.monotonic() - started:.0f} s -> {out}")
    return 0


def compare(a: Path, b: Path, out: Path | None) -> int:
    """Every case of A and B side by side: the same record, or the difference."""

    def load(p: Path) -> dict:
        return {(r["cubin"], r["kernel"], r["command"]): r for r in map(json.loads, p.read_text().splitlines())}

    left, right = load(a), load(b)
    keys = sorted(set(left) | set(right))

    def identity(record: dict | None) -> tuple | None:  # what must match: not the stall count beside it
        return None if record is None else (record["rc"], record["sha256"], record["error"])

    differ = [k for k in keys if identity(left.get(k)) != identity(right.get(k))]
    by_command: dict[str, list[int]] = {}
    for k in keys:
        counts = by_command.setdefault(k[2], [0, 0, 0])
        counts[0] += 1
        counts[1] += left.get(k, {}).get("sha256") is not None
        counts[2] += k in differ
    lines = [
        f"# Same bytes: {a.name} vs {b.name}",
        "",
        f"{len(keys)} cases, {len(keys) - len(differ)} identical, {len(differ)} different.",
        "",
        "| command | cases | wrote a cubin | different |",
        "| --- | --- | --- | --- |",
    ]
    lines += [f"| {c} | {n} | {w} | {d} |" for c, (n, w, d) in sorted(by_command.items())]
    stalls = [
        (left[k]["stalls"], right[k]["stalls"])
        for k in differ
        if "stalls" in left.get(k, {}) and "stalls" in right.get(k, {})
    ]
    if stalls:
        fewer = sum(b < a for a, b in stalls)
        more = sum(b > a for a, b in stalls)
        lines += [
            "",
            f"Stall cycles of the {len(stalls)} different outputs that both wrote: {sum(a for a, _ in stalls)} -> "
            f"{sum(b for _, b in stalls)} ({fewer} with fewer, {more} with more, "
            f"{len(stalls) - fewer - more} as many).",
        ]
    lines += ["", *[f"- DIFFERENT {k}: {left.get(k)} vs {right.get(k)}" for k in differ]]
    text = "\n".join(lines) + "\n"
    if out:
        out.write_text(text)
    print(text)
    return 1 if differ else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.same_bytes", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="what", required=True)
    r = sub.add_parser("run", help="digest every case's output, using the checkout at --tree")
    r.add_argument("--tree", type=Path, default=ROOT)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--work", type=Path, default=Path("/tmp/same_bytes_work"))
    r.add_argument("--jobs", type=int, default=2)
    r.add_argument("--optimize-corpus", type=int, default=10**6, help="how many corpus kernels get optimize")
    r.add_argument(
        "--optimize-skip",
        action="append",
        default=[],
        help="no optimize for cubins whose path contains this (repeatable)",
    )
    c = sub.add_parser("compare", help="compare two runs")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    c.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    if args.what == "run":
        return run(args.tree, args.out, args.work, args.jobs, args.optimize_corpus, tuple(args.optimize_skip))
    return compare(args.a, args.b, args.out)


if __name__ == "__main__":
    sys.exit(main())
