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
commands, then compares a made-up shapes.json in place of each search's):

    python -m benchmarks.studies shapes --out DIR [--only rmsnorm_triton_style] [--dry-run]
    python -m benchmarks.studies shapes --out DIR --device cpu --time 400   # CPU: the builds, cached

Writes DIR/KERNEL/specs/, DIR/KERNEL/optimize.log, DIR/summary.json (the comparisons, per
kernel) and DIR/shapes_runs.csv (one row per search).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import ClassVar

from benchmarks.studies.runner import (
    BuildRecord,
    DryDevice,
    ProcessDevice,
    commit,
    declared,
    lanes,
    summary_head,
)

HERE = Path(__file__).resolve().parent.parent
SLACK_S = 35  # a search's limit beyond its --time: the outer timeout's 25 s and its kill's 10


@dataclasses.dataclass(frozen=True)
class Search:
    """One kernel's search over its launch shapes."""

    kernel: str
    cubin: str
    ptx: str
    spec: str
    key: str  # the sweep key
    points: tuple[int, ...]
    fixed: tuple[tuple[str, int], ...]  # other sweep keys held at one value
    time_s: int
    budget: int


SEARCHES = (
    Search(
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
    Search(
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


def write_specs(search: Search, folder: Path) -> list[Path]:
    """One launch spec per sweep point."""
    import tomllib

    from reorder.suite.sweep import apply_sweep, spec_toml

    doc = tomllib.loads((HERE / search.spec).read_text())
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for value in search.points:
        path = folder / f"{search.key}{value}.toml"
        path.write_text(spec_toml(apply_sweep(doc, {search.key: value, **dict(search.fixed)})))
        out.append(path)
    return out


def command(search: Search, specs: list[Path], out: Path, jobs: int, device: str = "gpu", time_s: int = 0) -> list[str]:
    """The optimize line of one search (`device` cpu with a longer `time_s`: the CPU run that
    builds the same seeds into REORDER_CACHE before the GPU run, so the GPU host mostly reads builds)."""
    launches = [x for s in specs for x in ("--launch", str(s))]
    time_s = time_s or search.time_s
    return [
        "timeout",
        "-k",
        "10",
        str(time_s + SLACK_S - 10),
        sys.executable,
        "-m",
        "reorder",
        "optimize",
        str(HERE / search.cubin),
        "--ptx",
        str(HERE / search.ptx),
        "--kernel",
        search.kernel,
        "--assume-noalias",
        *launches,
        "--per-shape",
        "--device",
        device,
        "--budget",
        str(search.budget),
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


def options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--only", nargs="*", help="the kernels to search (default: every one)")
    p.add_argument("--jobs", type=int, default=12, help="builds in parallel")
    p.add_argument("--device", default="gpu", choices=("gpu", "cpu"), help="cpu: build the seeds into the cache")
    p.add_argument("--time", type=int, default=0, help="seconds of --time for every run (default: each search's)")


def manifest(args: argparse.Namespace) -> dict:
    """The searches --only names (all without it); ValueError naming a kernel none searches."""
    unknown = sorted(set(args.only or ()) - {s.kernel for s in SEARCHES})
    if unknown:
        raise ValueError(f"no search for {', '.join(unknown)} (have: {', '.join(s.kernel for s in SEARCHES)})")
    return {"commit": commit(), "kernels": [s.kernel for s in SEARCHES if not args.only or s.kernel in args.only]}


class Live(ProcessDevice):
    """The searches as processes on this host (`--device cpu`: no GPU needed, none named)."""

    def gpu_name(self) -> str:
        try:
            return super().gpu_name()
        except Exception:  # noqa: BLE001 - a CPU host (the --device cpu builds) has none
            return "none"

    def search(self, cmd: list[str], log: Path) -> int:
        """A search's exit code, what it said streamed into `log`."""
        with log.open("w") as sink:
            return subprocess.run(cmd, stdout=sink, stderr=subprocess.STDOUT, check=False).returncode


class Dry(DryDevice, Live):
    """No search: a made-up shapes.json (not measurements) where the search writes its own, two
    finalists ratioed from their names at each spec's shape, one dispatch group."""

    def search(self, cmd, log) -> int:
        specs = [Path(cmd[k + 1]) for k, word in enumerate(cmd) if word == "--launch"]
        assert specs and all(s.is_file() for s in specs), cmd
        labels = [s.stem for s in specs]
        ratio = {sha: {s: self._ci(f"{sha}{s}") for s in labels} for sha in ("a" * 64, "b" * 64)}
        shapes = [
            {"launch": s, "ratio": ratio["a" * 64][s], "best_here": {"ratio": ratio["b" * 64][s]}} for s in labels
        ]
        doc = {
            "weights": dict.fromkeys(labels, 1.0),
            "finals": {sha: {"ratios": r, "moves": f"made-up {sha[0]}"} for sha, r in ratio.items()},
            "winner": "a" * 64,
            "dispatch": {"groups": [{"cubin": "dry.cubin", "shapes": shapes}], "gain": None, "note": "dry run"},
            "ledger": None,
        }
        written = Path(cmd[cmd.index("-o") + 1]).with_suffix(".reorder")
        written.mkdir(parents=True, exist_ok=True)
        (written / "shapes.json").write_text(json.dumps(doc))
        log.write_text("dry run: no search\n")
        return 0

    def _ci(self, key: str) -> list[float]:
        made = self.made_up(key)
        return [made["ratio"], made["ci_low"], made["ci_high"]]


@dataclasses.dataclass
class Rows(BuildRecord):
    prefix: ClassVar[str] = "shapes"
    runs: list = dataclasses.field(default_factory=list)
    compared: dict = dataclasses.field(default_factory=dict)


def one_search(run, rec: Rows, search: Search) -> None:
    """Write the specs, run the search, compare what its shapes.json says."""
    args = run.args
    folder = rec.out.resolve() / search.kernel
    specs = write_specs(search, folder / "specs")
    cmd = command(search, specs, folder / f"{search.kernel}.cubin", args.jobs, args.device, args.time)
    print("$ " + " ".join(cmd), flush=True)
    started = time.monotonic()
    rc = rec.device.search(cmd, folder / "optimize.log")
    took = time.monotonic() - started
    print(f"{search.kernel}: exit {rc} after {took:.1f} s", flush=True)
    found = folder / f"{search.kernel}.reorder" / "shapes.json"
    rec.compared[search.kernel] = {"exit": rc, "seconds": took} | (compare(found) if found.is_file() else {})
    (rec.out / "summary.json").write_text(json.dumps(rec.compared, indent=1) + "\n")
    multi = rec.compared[search.kernel].get("multi_shape_winner", {}).get("geomean")
    fields = {"kernel": search.kernel, "device": args.device, "exit": rc, "seconds": round(took, 1)}
    rec.add("runs", {**fields, "shapes_json": found.is_file(), "multi_geomean": multi and round(multi[0], 4)})


def check_and_time(run, rec: Rows) -> None:
    chosen = [s for s in SEARCHES if s.kernel in run.manifest["kernels"]]
    lanes(
        rec,
        "runs",
        chosen,
        lambda s: one_search(run, rec, s),
        key=lambda s: {"kernel": s.kernel},
        reserve_s=lambda s: (run.args.time or s.time_s) + SLACK_S,
    )
    print(json.dumps(rec.compared, indent=1))


def summary(rec: Rows, out: Path) -> str:
    columns = ("kernel", "exit", "multi-shape geomean [CI]", "at least the best single", "dispatched within CI")
    note = "geomean = weighted geometric mean of time(winner) / time(original) over the shapes, 95% CI"
    lines = summary_head("One search for every launch shape", rec.stamps, columns, note)
    for kernel, c in rec.compared.items():
        gm = c.get("multi_shape_winner", {}).get("geomean")
        shown = f"{gm[0]:.4f} [{gm[1]:.4f}, {gm[2]:.4f}]" if gm else "-"
        within = [s["within_ci"] for s in c.get("per_shape", {}).values()]
        cells = (kernel, c["exit"], shown, c.get("multi_at_least_best_single", "-"), f"{sum(within)}/{len(within)}")
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    return "\n".join(lines) + "\n"


STUDY = declared(
    __name__,
    name="shapes",
    record=lambda run: Rows(run.args.out, run.args.out, run.deadline, run.device, run.stamps),
    deadline_s=1800.0,
)
