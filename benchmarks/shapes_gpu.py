"""One search for every launch shape, on the GPU: `reorder optimize --launch ... --per-shape`
on the suite's RMSNorm (from its PTX, rows 1..8192) and one loop kernel (EmbeddingBag sum,
from its PTX, 64..8192 bags), then the comparisons the study asks for, from each run's
shapes.json:

- the multi-shape winner's geometric-mean ratio against the best single-shape winner's
  (each shape's own best finalist, applied to every shape, all timed again at every shape);
- at each shape, the per-shape binary the dispatch manifest serves there against the best
  ratio any finalist reached there (within its CI or not).

Every optimize runs under its own --time and under `timeout -k`, so the whole script ends
within the sum of its limits. Usage (GPU host; `--dry-run` writes the specs and prints the
commands only):

    python -m benchmarks.shapes_gpu --out DIR [--only rmsnorm_triton_style] [--dry-run]
    python -m benchmarks.shapes_gpu --out DIR --device cpu --time 400   # CPU: the builds, cached
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import tomllib

from reorder.suite.sweep import apply_sweep, spec_toml

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Study:
    kernel: str
    cubin: str
    ptx: str
    spec: str
    key: str  # the sweep key
    points: tuple[int, ...]
    fixed: tuple[tuple[str, int], ...]  # other sweep keys held at one value
    time_s: int
    budget: int


STUDIES = (
    Study(
        "rmsnorm_triton_style",
        "kernels/cubin/rmsnorm.cubin",
        "kernels/ptx_candidates/source/rmsnorm.ptx",
        "kernels/specs/rmsnorm_triton_style.toml",
        "rows",
        (1, 16, 128, 1024, 8192),
        (),
        100,
        40,
    ),
    Study(
        "embedding_bag_sum",
        "kernels/cubin/embedding_bag.cubin",
        "kernels/ptx_candidates/source/embedding_bag.ptx",
        "kernels/specs/embedding_bag_sum.toml",
        "bags",
        (64, 512, 2048, 8192),
        (("dim", 128),),
        90,
        40,
    ),
)
# --time per kernel: at 70 s and 60 s (2026-12-01) the searches scored 3 and 2 trials (a 5-shape
# trial's byte checks took 9 s before the original's outputs were kept per set, the buffers compared
# in one pass and the race ran before the check) and no finalist.
TIMING = (
    "--candidate-budget",
    "1",
    "--final-budget",
    "2",
    "--recheck-sets",
    "5",
    "--no-contributions",
)


def write_specs(study: Study, folder: Path) -> list[Path]:
    """One launch spec per sweep point."""
    doc = tomllib.loads((HERE / study.spec).read_text())
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for value in study.points:
        path = folder / f"{study.key}{value}.toml"
        path.write_text(spec_toml(apply_sweep(doc, {study.key: value, **dict(study.fixed)})))
        out.append(path)
    return out


def command(study: Study, specs: list[Path], out: Path, jobs: int, device: str = "gpu", time_s: int = 0) -> list[str]:
    """The optimize line of one study (`device` cpu with a longer `time_s`: the CPU run that builds
    the same seeds into REORDER_CACHE before the GPU run, so the GPU host mostly reads builds)."""
    launches = [x for s in specs for x in ("--launch", str(s))]
    time_s = time_s or study.time_s
    return [
        "timeout",
        "-k",
        "10",
        str(time_s + 25),
        sys.executable,
        "-m",
        "reorder",
        "optimize",
        str(HERE / study.cubin),
        "--ptx",
        str(HERE / study.ptx),
        "--kernel",
        study.kernel,
        "--assume-noalias",
        *launches,
        "--per-shape",
        "--device",
        device,
        "--budget",
        str(study.budget),
        "--time",
        f"{time_s}s",
        "--jobs",
        str(jobs),
        *TIMING,
        "-o",
        str(out),
    ]


def _gm(ratios: dict, labels: list[str], weights: dict) -> tuple[float, float, float]:
    """Weighted geometric mean with its CI (independent shapes, log-normal; as reorder.search.shapes)."""
    total = sum(weights[s] for s in labels)
    w = {s: weights[s] / total for s in labels}
    c = sum(w[s] * math.log(ratios[s][0]) for s in labels)
    lo = math.sqrt(sum((w[s] * math.log(ratios[s][0] / ratios[s][1])) ** 2 for s in labels))
    hi = math.sqrt(sum((w[s] * math.log(ratios[s][2] / ratios[s][0])) ** 2 for s in labels))
    return math.exp(c), math.exp(c - lo), math.exp(c + hi)


def compare(shapes_json: Path) -> dict:
    """The study's two comparisons from one run's shapes.json."""
    data = json.loads(shapes_json.read_text())
    weights = data["weights"]
    labels = list(weights)
    finals = data["finals"]
    winner = data["winner"]
    unit = [1.0, 1.0, 1.0]
    rows = {sha: f["ratios"] for sha, f in finals.items()}
    written = rows.get(winner, dict.fromkeys(labels, unit))
    own = {}
    for s in labels:
        sha = min(rows, key=lambda k, s=s: rows[k][s][0]) if rows else winner
        own[s] = {
            "sha256": sha,
            "moves": finals.get(sha, {}).get("moves", "original"),
            "geomean": _gm(rows.get(sha, written), labels, weights),
        }
    best_single = min(own.values(), key=lambda o: o["geomean"][0]) if own else None
    multi = _gm(written, labels, weights)
    out = {
        "multi_shape_winner": {"sha256": winner, "geomean": multi},
        "single_shape_winners": own,
        "multi_at_least_best_single": best_single is None or multi[0] <= best_single["geomean"][0],
        "per_shape": {},
    }
    doc = data.get("dispatch") or {}
    for group in doc.get("groups", []):
        for shape in group["shapes"]:
            r, best = shape["ratio"], shape["best_here"]["ratio"]
            out["per_shape"][shape["launch"]] = {
                "dispatched": r,
                "cubin": group["cubin"],
                "best_here": best,
                "within_ci": r[1] <= best[2],
            }
    out["gain"] = doc.get("gain")
    out["note"] = doc.get("note")
    out["ledger"] = data.get("ledger")
    return out


def run(args: argparse.Namespace) -> int:
    out = Path(args.out).resolve()
    summary = {}
    for study in STUDIES:
        if args.only and study.kernel not in args.only:
            continue
        folder = out / study.kernel
        specs = write_specs(study, folder / "specs")
        cmd = command(study, specs, folder / f"{study.kernel}.cubin", args.jobs, args.device, args.time)
        print("$ " + " ".join(cmd), flush=True)
        if args.dry_run:
            continue
        started = time.monotonic()
        with open(folder / "optimize.log", "w") as log:
            done = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, check=False)
        took = time.monotonic() - started
        print(f"{study.kernel}: exit {done.returncode} after {took:.1f} s", flush=True)
        found = folder / f"{study.kernel}.reorder" / "shapes.json"
        summary[study.kernel] = {"exit": done.returncode, "seconds": took}
        if found.is_file():
            summary[study.kernel] |= compare(found)
        (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary, indent=1))
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--only", nargs="*")
    p.add_argument("--jobs", type=int, default=12)
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--device", default="gpu", choices=("gpu", "cpu"), help="cpu: build the seeds into the cache")
    p.add_argument("--time", type=int, default=0, help="seconds of --time for every run (default: each study's)")
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
