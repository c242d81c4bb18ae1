"""StallCut over the whole corpus on the GPU: stall cycles removed, byte check, paired timing.

Covers the 11 suite kernels (benchmarks/kernels, real launch shapes) and the 48 kernels
of the sm_90 test corpus (tests/corpus, launch specs in tests/corpus/specs). A cut that
computes different bytes or faults is bisected on the spot (benchmarks.bisect_gpu) to
name the instruction and the table entry that let it through.

CPU side (needs nvdisasm): `python -m benchmarks.stallcut_gpu --prepare DIR` writes each
original and cut cubin and a manifest (stall cycles before and after). GPU side:
`python -m benchmarks.stallcut_gpu --run DIR --out OUT` writes OUT/stallcut.csv (GPU,
date, commit, L2 state, ratio and 95% CI per kernel) and OUT/culprits.json.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from benchmarks.studies.runner import two_sided_parser
from reorder.suite.rows import write_rows

SUITE_SPECS = Path(__file__).parent / "kernels" / "specs"
CORPUS = Path(__file__).parent.parent / "tests" / "corpus"


def _entries() -> list[dict]:
    """(family, kernel, cubin, spec) for every kernel with a launch spec."""
    from benchmarks.gpu_session import _suite_cubin
    from reorder.binary.cubin import read_cubin

    out = [
        {"family": "suite", "kernel": p.stem, "cubin": str(_suite_cubin(p.stem)), "spec": str(p)}
        for p in sorted(SUITE_SPECS.glob("*.toml"))
    ]
    by_kernel = {
        k.name: path for path in sorted((CORPUS / "cubin" / "sm_90").glob("*.cubin")) for k in read_cubin(path).kernels
    }
    for spec in sorted((CORPUS / "specs").glob("*.toml")):
        out.append(
            {
                "family": "corpus",
                "kernel": spec.stem,
                "cubin": str(by_kernel[spec.stem]),
                "spec": str(spec),
                "nondeterministic": spec.read_text().startswith("# nondeterministic"),
            }
        )
    return out


def prepare(folder: Path) -> None:
    from benchmarks.gpu_session import _commit
    from reorder.base.files import write_atomic
    from reorder.binary.cubin import read_cubin
    from reorder.build.pipeline import cut_stalls
    from reorder.sass.model import decode_kernel

    folder.mkdir(parents=True, exist_ok=True)
    manifest = []
    for e in _entries():
        code = decode_kernel(read_cubin(e["cubin"]), e["kernel"])
        cut = cut_stalls(code)
        name = f"{e['family']}_{e['kernel']}"
        write_atomic(folder / f"{name}_orig.cubin", Path(e["cubin"]).read_bytes())
        write_atomic(folder / f"{name}_cut.cubin", cut.data)
        before = sum(i.ctrl.stall for i in code.instructions)
        after = sum(i.ctrl.stall for i in cut.after.instructions)
        manifest.append({**e, "name": name, "stall_before": before, "stall_after": after})
        print(f"{name:40s} {before:6d} -> {after:6d}", flush=True)
    (folder / "manifest.json").write_text(json.dumps({"commit": _commit(), "kernels": manifest}, indent=1))


def run(folder: Path, out: Path, budget_s: float) -> None:
    import cupy

    from benchmarks.bisect_gpu import _Checker, bisect_stall_cut
    from reorder.binary.cubin import read_cubin
    from reorder.sass.model import decode_kernel
    from timing.cli_support import validated_spec
    from timing.evaluate import check_and_time_job, describe_status
    from timing.worker import Job, WorkerPool

    out.mkdir(parents=True, exist_ok=True)
    manifest = json.loads((folder / "manifest.json").read_text())
    props = cupy.cuda.runtime.getDeviceProperties(0)
    meta = {
        "gpu": props["name"].decode(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "commit": manifest["commit"],
        "l2": "warm",
        "method": "graph (paired, CUDA-graph replay)",
    }
    rows: list[dict] = []
    culprits: list[dict] = []
    with WorkerPool(devices=[0]) as pool:
        for e in manifest["kernels"]:
            orig, cut = folder / f"{e['name']}_orig.cubin", folder / f"{e['name']}_cut.cubin"
            spec = validated_spec(e["spec"], [orig])
            fields = {k: e[k] for k in ("family", "kernel", "stall_before", "stall_after")}
            if e["stall_before"] == e["stall_after"]:
                rows.append({**meta, **fields, "status": "no stall removed"})
                continue
            res = pool.run(Job.of(check_and_time_job, str(orig), str(cut), spec, timeout_s=180, budget_s=budget_s))
            row = {**meta, **fields, **describe_status(res)}
            rows.append(row)
            print(
                json.dumps(
                    {k: row.get(k) for k in ("kernel", "status", "check", "ratio", "ci_low", "ci_high", "reason")},
                    default=str,
                ),
                flush=True,
            )
            wrong = row.get("status") != "ok" or row.get("check") not in ("identical", None)
            if wrong and "not deterministic" not in str(row.get("check_detail", "")):
                checker = _Checker(pool, e["kernel"], Path("/tmp/bisect"), [], cubin=orig, spec=spec)
                candidate = decode_kernel(read_cubin(cut), e["kernel"]).instructions
                culprits += bisect_stall_cut(checker, candidate, max_culprits=3)
                (out / "culprits.json").write_text(json.dumps(culprits, indent=1))
            write_rows(out / "stallcut.csv", rows)
    write_rows(out / "stallcut.csv", rows)


if __name__ == "__main__":
    parser = two_sided_parser(__doc__ or "")
    parser.add_argument("--budget", type=float, default=3.0, help="seconds of paired timing per kernel")
    args = parser.parse_args()
    if args.prepare:
        prepare(args.prepare)
    if args.run:
        run(args.run, args.out, args.budget)
