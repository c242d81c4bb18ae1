"""`reorder bench`: run the optimizer over the kernel suite and its sweep grid.

For each kernel, each point of its parameter grid and each L2 state, the launch spec is
written for that point and `reorder optimize` runs with the kernel's budget. Every row of
the results CSV holds the compiler's time and ours with the ratio's CI (measured on a GPU;
on a machine without one, the static model's prediction, labelled as such), the byte check
and the moves used. Heatmaps (one panel per kernel, cells = compiler's time / ours, for L2
warm and cold) and a bar chart of the per-kernel median are drawn with matplotlib.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import tomllib

from reorder.base import provenance
from reorder.base.errors import InputError
from reorder.cli.registry import seconds


@dataclass(frozen=True)
class BenchKernel:
    name: str
    cubin: Path
    spec: Path
    noalias: bool
    budget: int
    seconds: float
    points: tuple[dict, ...]
    candidate_budget_s: float = 2.0  # paired timing per trial
    final_budget_s: float = 5.0  # per finalist
    contributions: bool = True  # re-score the winner without each move
    symbol: str = ""  # the kernel's name in the cubin when it is not `name` (a C++ signature, or part of one)

    @property
    def kernel_name(self) -> str:
        return self.symbol or self.name


_TIMING_DEFAULTS = {"candidate_budget_s": 2.0, "final_budget_s": 5.0}


def load_suite(path: Path, only: set[str] | None = None) -> tuple[list[BenchKernel], tuple[str, ...]]:
    """Kernels of a suite file (paths relative to it) and the L2 states to run; a suite that
    does not parse, or an entry that lacks a key or names a missing file, is one InputError."""
    from reorder.base.files import read_input

    try:
        doc = tomllib.loads(read_input(path).decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # TOMLDecodeError, undecodable bytes, nesting too deep
        raise InputError(f"{path}: cannot read the suite ({type(exc).__name__}: {exc})") from None
    defaults = doc.get("defaults", {})
    entries = doc.get("kernel", [])
    if not isinstance(defaults, dict) or not isinstance(entries, list) or not entries:
        raise InputError(f"{path}: not a suite file (want [defaults] and [[kernel]] tables)")
    kernels = []
    for n, entry in enumerate(entries, 1):
        try:
            if only and entry["name"] not in only:
                continue
            kernels.append(_bench_kernel(path, entry, defaults))
        except (KeyError, TypeError, ValueError, OSError, AttributeError, RecursionError) as exc:
            what = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
            name = entry.get("name", "?") if isinstance(entry, dict) else "?"
            raise InputError(f"{path}: kernel entry {n} ({name}): {what}") from None
    if only and {k.name for k in kernels} != only:
        raise InputError(f"{path}: no kernel named {sorted(only - {k.name for k in kernels})}")
    return kernels, l2_states(defaults.get("l2", ["warm"]), f"{path}: [defaults] l2")


def l2_states(values, where: str) -> tuple[str, ...]:
    """The L2 states asked for, each warm or cold; anything else is one InputError."""
    states = tuple(values) if isinstance(values, (list, tuple)) else ()
    if not states or not set(states) <= {"warm", "cold"}:
        raise InputError(f"{where} must list warm and/or cold, got {values!r}")
    return states


def _bench_kernel(suite: Path, entry: dict, defaults: dict) -> BenchKernel:
    """One [[kernel]] entry, its files checked to exist and its launch spec to parse."""
    from reorder.ptx.toolchain.compile import compile_ptx
    from reorder.suite.sweep import sweep_points

    cubin, spec = suite.parent / entry["cubin"], suite.parent / entry["spec"]
    if not cubin.is_file():
        raise ValueError(f"cubin {cubin} not found")
    compiled = compile_ptx(cubin)  # an entry may name PTX: the cubin its producer would make
    cubin = compiled.cubin if compiled else cubin
    raw = tomllib.loads(spec.read_text(encoding="utf-8"))
    points = tuple(entry.get("points") or sweep_points(raw) or [{}])
    return BenchKernel(
        entry["name"],
        cubin,
        spec,
        bool(entry.get("noalias")),
        int(entry.get("budget", defaults.get("budget", 100))),
        seconds(str(entry.get("time", defaults.get("time", "5m")))),
        points,
        candidate_budget_s=_number(entry, defaults, "candidate_budget_s"),
        final_budget_s=_number(entry, defaults, "final_budget_s"),
        contributions=bool(entry.get("contributions", defaults.get("contributions", True))),
        symbol=str(raw.get("kernel", {}).get("name", "")),  # the spec names the kernel it launches
    )


def _number(entry: dict, defaults: dict, key: str) -> float:
    """A timing budget of one [[kernel]] entry: its own, else the suite's default, else the built-in one."""
    return float(entry.get(key, defaults.get(key, _TIMING_DEFAULTS[key])))


def _point_spec(kernel: BenchKernel, point: dict, folder: Path) -> Path:
    from reorder.suite.sweep import apply_sweep, spec_toml

    raw = tomllib.loads(kernel.spec.read_text())
    raw = dict(apply_sweep(raw, point) if point else raw)
    raw.pop("grid_sweep", None)
    path = folder / "spec.toml"
    path.write_text(spec_toml(raw))
    return path


def run_bench(kernels: list[BenchKernel], l2_states: tuple[str, ...], out: Path, device: str, jobs: int) -> Path:
    """Optimize every (kernel, point, L2) and append one row each to OUT/bench.csv."""
    import pandas as pd

    from reorder.cli.benchshapes import optimize_args
    from reorder.optimize import optimize

    rows = []
    for kernel in kernels:
        for point in kernel.points:
            for l2 in l2_states:
                folder = out / kernel.name / f"{_label(point)}_{l2}"
                folder.mkdir(parents=True, exist_ok=True)
                spec = _point_spec(kernel, point, folder)
                started = time.monotonic()
                report = optimize(optimize_args(kernel, folder / "fast.cubin", spec, l2, device, jobs))
                rows.append(_row(kernel, point, l2, report, time.monotonic() - started))
                pd.DataFrame(rows).to_csv(out / "bench.csv", index=False)
    return out / "bench.csv"


def run_bench_tuned_once(
    kernels: list[BenchKernel], l2_states: tuple[str, ...], out: Path, device: str, jobs: int
) -> Path:
    """Optimize each kernel once (at its first grid point, warm L2), then check and time
    that one binary at every (point, L2) of the grid. A cubin serves every shape it is
    launched with, so this asks what a kernel engineer ships: is the tuned binary faster
    across the grid? It needs one search per kernel instead of one per cell."""
    import contextlib

    rows: list[dict] = []
    with contextlib.ExitStack() as stack:
        pool = _LazyPool(stack)  # one timing worker for every cell, started at the first measured one
        for kernel in kernels:
            rows += _tuned_once_rows(kernel, l2_states, out, device, jobs, pool, rows)
    return out / "bench.csv"


class _LazyPool:
    """A GPU worker pool opened on first use and closed with the stack."""

    def __init__(self, stack) -> None:
        self.stack, self.pool = stack, None

    def get(self):
        if self.pool is None:
            from timing.cli_support import worker_device
            from timing.worker import WorkerPool

            self.pool = self.stack.enter_context(WorkerPool(devices=[worker_device()]))
        return self.pool


def _tuned_once_rows(
    kernel: BenchKernel,
    l2_states: tuple[str, ...],
    out: Path,
    device: str,
    jobs: int,
    pool: _LazyPool,
    earlier: list[dict],
) -> list[dict]:
    """One search for `kernel`, then its binary scored at every (point, L2); the CSV is
    rewritten after each cell (with the `earlier` rows) so a cut run keeps what it did."""
    import pandas as pd

    from reorder.cli.benchshapes import optimize_args
    from reorder.optimize import optimize

    rows: list[dict] = []
    tune = out / kernel.name / "tuned"
    tune.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    spec = _point_spec(kernel, kernel.points[0], tune)
    report = optimize(optimize_args(kernel, tune / "fast.cubin", spec, "warm", device, jobs))
    seconds = time.monotonic() - started
    assert report is not None  # a search in this process, not a helper worker
    measured = report.result is not None and report.result.measured
    for point in kernel.points:
        for l2 in l2_states:
            cell = out / kernel.name / f"{_label(point)}_{l2}"
            cell.mkdir(parents=True, exist_ok=True)
            spec = _point_spec(kernel, point, cell)
            score = _cell_score(kernel, tune / "fast.cubin", spec, l2, pool.get()) if measured else report.result
            row = _row(kernel, point, l2, report, seconds, score)
            rows.append({**row, "tuned_at": _label(kernel.points[0]) + "_warm"})
            pd.DataFrame(earlier + rows).to_csv(out / "bench.csv", index=False)
    return rows


def _label(point: dict) -> str:
    return "_".join(f"{k}{v}" for k, v in sorted(point.items())) or "default"


def _cell_score(kernel: BenchKernel, winner: Path, spec_path: Path, l2: str, pool):
    """Byte check and paired timing of the tuned binary at one grid point (GPU)."""
    from reorder.search.scoring import GpuScorer, Rejected, Score
    from timing.cli_support import validated_spec

    spec = validated_spec(spec_path, [kernel.cubin], kernel.kernel_name)
    scorer = GpuScorer(kernel.cubin.resolve(), spec, pool, l2=l2, budget_s=kernel.final_budget_s)
    try:
        return scorer.score(winner.resolve(), target_ci_pct=0.5)
    except Rejected as exc:
        return Score(float("nan"), float("nan"), float("nan"), True, {"check_detail": str(exc)})


def _row(kernel: BenchKernel, point: dict, l2: str, report, seconds: float, score=None) -> dict:
    r = score if score is not None else report.result
    row = {
        "kernel": kernel.name,
        "point": ",".join(f"{k}={v}" for k, v in sorted(point.items())) or "default",
        "point_order": kernel.points.index(point),
        "l2": l2,
        "budget": kernel.budget,
        "trials": report.trials,
        "failed": report.failed,
        "seconds": round(seconds, 1),
        "moves": report.best_moves,
        "check": report.check,
        "verifier": report.verifier,
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }
    if r is None:
        return {**row, "measured": None, "ratio": None, "ci_low": None, "ci_high": None}
    d = r.detail
    return {
        **row,
        "measured": r.measured,
        "ratio": r.value,
        "ci_low": r.low,
        "ci_high": r.high,
        "compiler_us": d.get("a_us"),
        "ours_us": d.get("b_us"),
        "clock_mhz": d.get("clock_mhz"),
        "gpu": provenance.gpu_name() if r.measured else "none (static model)",
        "commit": provenance.commit(),
    }


def draw(csv_path: Path) -> list[Path]:
    """Heatmaps (kernel panels, points x L2, cells = compiler's time / ours) and the median bar chart."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    frame = pd.read_csv(csv_path).dropna(subset=["ratio"])
    frame["speedup"] = 1.0 / frame["ratio"]
    measured = bool(frame["measured"].all()) if len(frame) else False
    what = "measured" if measured else "PREDICTED (static model, no GPU)"
    if "tuned_at" in frame:
        what += "; one binary per kernel, tuned at its first point (warm L2)"
    kernels = sorted(frame["kernel"].unique())
    fig, axes = plt.subplots(1, max(len(kernels), 1), figsize=(3.2 * max(len(kernels), 1), 3.6), squeeze=False)
    for ax, name in zip(axes[0], kernels):
        rows = frame[frame["kernel"] == name].sort_values("point_order")
        part = rows.pivot_table(index="point", columns="l2", values="speedup").reindex(rows["point"].unique())
        image = ax.imshow(part.values, cmap="RdYlGn", vmin=0.9, vmax=1.1, aspect="auto")
        ax.set_title(name, fontsize=8)
        ax.set_xticks(range(len(part.columns)), part.columns, fontsize=7)
        ax.set_yticks(range(len(part.index)), part.index, fontsize=6)
        for (i, j), v in pd.DataFrame(part.values).stack().items():
            ax.text(j, i, f"{v:.3f}", ha="center", va="center", fontsize=6)
    fig.colorbar(image, ax=axes[0].tolist(), shrink=0.8, label="compiler time / ours")
    fig.suptitle(f"reorder bench: compiler time / ours per grid point\n{what}", fontsize=8)
    fig.subplots_adjust(left=0.22, top=0.8, right=0.78)
    heat = csv_path.with_name("heatmaps.png")
    fig.savefig(heat, dpi=130)
    plt.close(fig)
    medians = frame.groupby("kernel")["speedup"].median().sort_values()
    fig, ax = plt.subplots(figsize=(6, 0.35 * len(medians) + 1.2))
    ax.barh(medians.index, medians.values, color=["tab:green" if v > 1 else "tab:red" for v in medians.values])
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_xlabel(f"median compiler time / ours ({what})")
    fig.tight_layout()
    bars = csv_path.with_name("medians.png")
    fig.savefig(bars, dpi=130)
    plt.close(fig)
    return [heat, bars]


def _overridden(kernel: BenchKernel, args) -> BenchKernel:
    """The suite's settings with the command line's overrides (a quick sweep on a short lease)."""
    changes: dict = {}
    if args.budget:
        changes["budget"] = args.budget
    if args.points:
        wanted = [int(i) for i in args.points.split(",")]
        changes["points"] = tuple(kernel.points[i] for i in wanted if i < len(kernel.points)) or kernel.points[:1]
    if args.candidate_budget:
        changes["candidate_budget_s"] = args.candidate_budget
    if args.final_budget:
        changes["final_budget_s"] = args.final_budget
    if args.no_contributions:
        changes["contributions"] = False
    return dataclasses.replace(kernel, **changes)


def add_arguments(parser) -> None:
    """The bench options (shared by `reorder bench` and `python -m reorder.cli.bench`)."""
    parser.add_argument(
        "suite",
        type=Path,
        nargs="?",
        help="the suite file (default: the suite installed with reorder; not with --triton)",
    )
    parser.add_argument("--kernels", help="comma list (default: the whole suite)")
    parser.add_argument("--l2", help="comma list of warm,cold (default: the suite's)")
    parser.add_argument("--out", type=Path, default=Path("bench_out"))
    parser.add_argument("--device", choices=("auto", "gpu", "cpu"), default="auto")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--budget", type=int, help="override every kernel's trial budget")
    parser.add_argument("--points", help="comma list of sweep-point indices to run (default: every point)")
    parser.add_argument("--candidate-budget", type=float, help="seconds of paired timing per trial")
    parser.add_argument("--final-budget", type=float, help="seconds of paired timing per finalist")
    parser.add_argument("--no-contributions", action="store_true", help="skip re-scoring the winner without each move")
    parser.add_argument(
        "--tune-once",
        action="store_true",
        help="optimize each kernel once (first point, warm L2), then check and time that binary "
        "at every point and L2 state",
    )
    parser.add_argument(
        "--shapes",
        action="store_true",
        help="per kernel with several points: one search per point, one binary for all points (one search "
        "over every point) and its per-shape groups, in one table (bench_shapes.md)",
    )
    triton = parser.add_argument_group("Triton (reorder against Triton's own num_warps x num_stages tuning)")
    triton.add_argument(
        "--triton",
        choices=("build", "run", "render"),
        help="build: compile every config and reorder's candidates on the CPU into --build; "
        "run: check and time them on the GPU into --out; render: summary and heatmaps of --out",
    )
    triton.add_argument("--build", type=Path, default=Path("gpu_build/triton"), help="the --triton build folder")
    triton.add_argument("--families", help="comma list of Triton kernel families (default: all)")
    triton.add_argument(
        "--deadline", type=float, default=360.0, help="--triton run: seconds; shapes not begun by then are skipped"
    )


def run_args(args) -> int:
    """Run the bench the parsed options describe; print the CSV and the plots it wrote."""
    if args.triton:
        return run_triton(args)
    from reorder.suite import SUITE_FILE

    suite = SUITE_FILE if args.suite is None else args.suite
    kernels, l2 = load_suite(suite, set(args.kernels.split(",")) if args.kernels else None)
    kernels = [_overridden(k, args) for k in kernels]
    l2 = l2_states(args.l2.split(","), "--l2") if args.l2 else l2
    if args.shapes:
        from reorder.cli.benchshapes import run_bench_shapes

        csv_path = run_bench_shapes(kernels, l2, args.out, args.device, args.jobs, _label, _point_spec)
        print(f"wrote {csv_path} and {csv_path.with_suffix('.md')}")
        return 0
    run = run_bench_tuned_once if args.tune_once or _static(args.device) else run_bench
    csv_path = run(kernels, l2, args.out, args.device, args.jobs)
    plots = draw(csv_path)
    for path in [csv_path, *plots]:
        print(path)
    import pandas as pd

    rows = len(pd.read_csv(csv_path)) if Path(csv_path).is_file() else 0
    print(f"wrote {csv_path}: {rows} rows ({len(kernels)} kernels), and {len(plots)} plots")
    return 0


def run_triton(args) -> int:
    """`--triton STEP`: reorder.suite.triton_build, triton_gpu or triton_report with these options."""
    if args.suite is not None:
        raise InputError("--triton takes no suite file: its kernels are reorder/suite/triton_kernels")
    families = ["--families", args.families] if args.families else []
    if args.triton == "build":
        from reorder.suite.triton_build import main as build

        return build(["--out", str(args.build), "--jobs", str(args.jobs), *families])
    if args.triton == "run":
        from reorder.suite.triton_gpu import main as run

        return run(
            [
                "--build",
                str(args.build),
                "--out",
                str(args.out),
                "--deadline",
                str(args.deadline),
                *(["--l2", args.l2] if args.l2 else []),
                *families,
            ]
        )
    from reorder.suite.triton_report import main as render

    return render([str(args.out)])


def _static(device: str) -> bool:
    """True when the bench runs on the static model: it ignores launch shape and L2 state, so
    one search per kernel answers every cell, and a search per cell would only repeat it."""
    from timing.cli_support import gpu_unavailable_reason

    static = device == "cpu" or (device == "auto" and bool(gpu_unavailable_reason()))
    if static:
        print(
            "bench: static model (no GPU): one search per kernel, its prediction in every cell "
            "(launch shape and L2 state do not enter the model)",
            file=sys.stderr,
        )
    return static


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="reorder bench")
    add_arguments(parser)
    return run_args(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
