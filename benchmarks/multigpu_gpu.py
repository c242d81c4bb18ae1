"""One study on several GPUs, measured: throughput, clocks, a killed worker, no trial lost.

    python -m benchmarks.multigpu_gpu --out OUT [--kernel rmsnorm_triton_style] [--seconds 75]

1. `reorder optimize` with one worker (GPU 0), then the same study settings with one worker
   per visible GPU (`--workers N`), same budget, seed and search time; finished trials per
   minute of search from the storage's own timestamps; each GPU's SM clock and use sampled
   every 0.5 s by nvidia-smi during both runs (clocks.csv).
2. Kill test: N workers started by hand on one SQLite study with heartbeats (one process per
   GPU, separate working folders, as on separate hosts); worker 1 gets SIGKILL mid-trial; the
   others finish the study. From the storage: every trial number once, none left RUNNING,
   the killed worker's trial failed by the heartbeat and retried with the same parameters,
   no binary scored twice.
Writes OUT/multigpu.csv (one row per run) and OUT/kill_test.json.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from reorder.suite.rows import write_rows

SUITE = Path(__file__).parent / "kernels"


def _gpu_count() -> int:
    out = subprocess.run(
        ["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"], capture_output=True, text=True, check=False
    )
    return len(out.stdout.split())


def _spec(kernel: str, work: Path) -> Path:
    import tomllib

    from reorder.suite.sweep import apply_sweep, spec_toml

    raw = tomllib.loads((SUITE / "specs" / f"{kernel}.toml").read_text())
    raw = dict(apply_sweep(raw, {"rows": 16})) if "rows" in raw.get("grid_sweep", {}) else raw
    raw.pop("grid_sweep", None)
    path = work / f"{kernel}.toml"
    path.write_text(spec_toml(raw))
    return path


def _optimize_cmd(kernel: str, spec: Path, out: Path, budget: int, seconds: int, extra: list[str]) -> list[str]:
    from benchmarks.studies.runner import optimize_command, suite_cubin

    return optimize_command(
        suite_cubin(kernel),
        kernel,
        out,
        "--no-contributions",
        "--assume-noalias",
        *extra,
        launch=spec,
        budget=budget,
        time=f"{seconds}s",
        jobs=8,
        device="gpu",
        candidate_budget=0.6,
        final_budget=1,
        seed=7,
    )


def _trials(storage: str):
    import optuna

    from reorder.search.study import open_storage

    st = open_storage(storage)
    (name,) = optuna.get_all_study_names(st)
    return optuna.load_study(study_name=name, storage=st).trials


def _throughput(trials) -> dict:
    """Finished trials per minute between the first start and the last completion."""
    import optuna

    done = [
        t
        for t in trials
        if t.state in (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.FAIL) and t.datetime_complete
    ]
    if not done:
        return {"finished": 0}
    start = min(t.datetime_start for t in done)
    end = max(t.datetime_complete for t in done)
    minutes = max((end - start).total_seconds(), 1e-9) / 60
    complete = [t for t in done if t.state == optuna.trial.TrialState.COMPLETE]
    best = min(complete, key=lambda t: t.value) if complete else None
    return {
        "finished": len(done),
        "failed": len(done) - len(complete),
        "span_s": round(minutes * 60, 1),
        "trials_per_min": round(len(done) / minutes, 2),
        "best": best.value if best else None,
        "best_ci_low": best.user_attrs.get("ci_low") if best else None,
        "best_ci_high": best.user_attrs.get("ci_high") if best else None,
        "best_moves": best.user_attrs.get("moves") if best else None,
    }


def throughput_runs(kernel: str, out: Path, work: Path, budget: int, seconds: int) -> list[dict]:
    spec = _spec(kernel, work)
    rows = []
    for workers in (1, _gpu_count()):
        folder = work / f"w{workers}"
        folder.mkdir(parents=True, exist_ok=True)
        storage = f"journal:{folder / 'study.journal'}"
        cmd = _optimize_cmd(
            kernel, spec, folder / "fast.cubin", budget, seconds, ["--workers", str(workers), "--storage", storage]
        )
        env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
        started = time.monotonic()
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        print(done.stderr[-1500:], flush=True)
        rows.append(
            {
                "kernel": kernel,
                "workers": workers,
                "gpus": workers,
                "budget": budget,
                "search_s": seconds,
                "rc": done.returncode,
                "wall_s": round(time.monotonic() - started, 1),
                **_throughput(_trials(storage)),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    return rows


def kill_test(kernel: str, out: Path, work: Path, budget: int, seconds: int) -> dict:
    """N 'hosts': one process per GPU, own folder, one SQLite study with heartbeats; kill one."""
    import optuna

    spec = _spec(kernel, work)
    storage = f"sqlite:///{work / 'shared.db'}"
    procs = []
    for i in range(_gpu_count()):
        host = work / f"host{i}"
        host.mkdir(parents=True, exist_ok=True)
        cmd = _optimize_cmd(
            kernel,
            spec,
            host / "fast.cubin",
            budget,
            seconds,
            ["--storage", storage, "--search-only", "--worker-index", str(i)],
        )
        procs.append(
            subprocess.Popen(
                cmd,
                env={**os.environ, "CUDA_VISIBLE_DEVICES": str(i)},
                cwd=host,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
        time.sleep(2)  # the first creates the schema
    running_at_kill = _kill_mid_trial(procs[1], storage)
    for p in procs[:1] + procs[2:]:
        p.wait(timeout=seconds + 400)
    trials = _trials(storage)
    state = optuna.trial.TrialState
    numbers = [t.number for t in trials]
    by_number = {t.number: t for t in trials}
    # the dead worker's trials: running when it died, later failed by the heartbeat (no stated reason)
    killed = [
        n for n in running_at_kill if by_number[n].state == state.FAIL and "failure" not in by_number[n].user_attrs
    ]
    retries = {n: [t for t in trials if t.system_attrs.get("failed_trial") == n] for n in killed}
    scored = [
        t.user_attrs["sha256"]
        for t in trials
        if t.state == state.COMPLETE and "sha256" in t.user_attrs and not t.user_attrs.get("duplicate")
    ]
    return {
        "kernel": kernel,
        "workers": len(procs),
        "budget": budget,
        "trials": len(trials),
        "numbers_unique": len(numbers) == len(set(numbers)),
        "running_left": sum(t.state == state.RUNNING for t in trials),
        "complete": sum(t.state == state.COMPLETE for t in trials),
        "failed_with_reason": sum(t.state == state.FAIL and "failure" in t.user_attrs for t in trials),
        "running_at_kill": sorted(running_at_kill),
        "killed_worker_trials": killed,
        "retried_as": {n: [t.number for t in r] for n, r in retries.items()},
        "every_killed_trial_retried_once": bool(killed) and all(len(r) == 1 for r in retries.values()),
        "retry_same_params": all(t.params == by_number[n].params for n, r in retries.items() for t in r),
        "retries_finished": all(t.state in (state.COMPLETE, state.FAIL) for r in retries.values() for t in r),
        "binaries_scored_twice": len(scored) - len(set(scored)),
    }


def _kill_mid_trial(proc: subprocess.Popen, storage: str) -> set[int]:
    """SIGKILL the worker once the study has trials in flight (a worker asks several at a
    time, so it holds some); the numbers RUNNING right after the kill."""
    import optuna

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        time.sleep(1)
        try:
            running = [t for t in _trials(storage) if t.state == optuna.trial.TrialState.RUNNING]
        except Exception:  # noqa: BLE001 - the schema may not exist yet
            continue
        if len(running) >= 4 and _trials(storage)[-1].number > 10:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            return {t.number for t in _trials(storage) if t.state == optuna.trial.TrialState.RUNNING}
    return set()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--kernel", default="rmsnorm_triton_style")
    parser.add_argument("--budget", type=int, default=400)
    parser.add_argument("--seconds", type=int, default=45)
    parser.add_argument("--kill-budget", type=int, default=400)
    parser.add_argument("--kill-seconds", type=int, default=150)
    args = parser.parse_args()
    from reorder.base import provenance

    args.out.mkdir(parents=True, exist_ok=True)
    work = Path("/tmp/multigpu")
    work.mkdir(parents=True, exist_ok=True)
    meta = {
        "gpu": provenance.gpu_name(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "commit": provenance.commit(),
        "l2": "warm",
    }
    clocks = subprocess.Popen(
        [
            "nvidia-smi",
            "--query-gpu=timestamp,index,clocks.sm,utilization.gpu,power.draw",
            "--format=csv",
            "-lms",
            "500",
        ],
        stdout=(args.out / "clocks.csv").open("w"),
    )
    try:
        rows = throughput_runs(args.kernel, args.out, work, args.budget, args.seconds)
        write_rows(args.out / "multigpu.csv", [{**meta, **r} for r in rows])
        result = kill_test(args.kernel, args.out, work, args.kill_budget, args.kill_seconds)
        (args.out / "kill_test.json").write_text(json.dumps({**meta, **result}, indent=1, default=str))
        print(json.dumps(result, default=str), flush=True)
    finally:
        clocks.terminate()
    return 0


if __name__ == "__main__":
    sys.exit(main())
