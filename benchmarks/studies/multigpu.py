"""One study on several GPUs, measured: throughput, clocks, a killed worker, no trial lost.

    python -m benchmarks.studies multigpu --out OUT [--kernel rmsnorm_triton_style] [--seconds 45]
    python -m benchmarks.studies multigpu --out OUT --dry-run   (CPU: two made-up GPUs, every step walked)

1. `reorder optimize` with one worker (GPU 0), then the same study settings with one worker
   per visible GPU (`--workers N`), same budget, seed and search time; finished trials per
   minute of search from the storage's own timestamps; each GPU's SM clock and use sampled
   every 0.5 s by nvidia-smi during both runs (clocks.csv).
2. Kill test: N workers started by hand on one SQLite study with heartbeats (one process per
   GPU, separate working folders, as on separate hosts); worker 1 gets SIGKILL mid-trial; the
   others finish the study. From the storage: every trial number once, none left RUNNING,
   the killed worker's trial failed by the heartbeat and retried with the same parameters,
   no binary scored twice.
Writes OUT/multigpu.csv (one row per run) and OUT/kill_test.json. A dry run starts no search
and reads made-up trials (not measurements) in place of the storage's.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, ClassVar

from benchmarks.studies.runner import (
    SUITE,
    DeviceRecord,
    DryDevice,
    ProcessDevice,
    commit,
    declared,
    lanes,
    optimize_command,
    suite_cubin,
    summary_head,
    write_suite_spec,
)

KILL_WAIT_S = 400  # what the surviving workers get beyond the search time to finish the study


def options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kernel", default="rmsnorm_triton_style", help="the suite kernel searched")
    p.add_argument("--budget", type=int, default=400, help="trials of each throughput run")
    p.add_argument("--seconds", type=int, default=45, help="seconds of search of each throughput run")
    p.add_argument("--kill-budget", type=int, default=400, help="trials of the kill test's study")
    p.add_argument("--kill-seconds", type=int, default=150, help="seconds of search of the kill test")
    p.add_argument("--work", type=Path, default=Path("/tmp/multigpu"), help="the searches' folders and storages")


def manifest(args: argparse.Namespace) -> dict:
    """The one kernel; ValueError when the suite has no launch spec for it."""
    if not (SUITE / "specs" / f"{args.kernel}.toml").is_file():
        raise ValueError(f"no suite launch spec for {args.kernel}")
    return {"commit": commit(), "kernel": args.kernel}


def spec_file(kernel: str, work: Path) -> Path:
    """The kernel's launch spec at 16 rows when it sweeps rows, else its own launch."""
    import tomllib

    raw = tomllib.loads((SUITE / "specs" / f"{kernel}.toml").read_text())
    point = {"rows": 16} if "rows" in raw.get("grid_sweep", {}) else None
    return write_suite_spec(kernel, point, work / f"{kernel}.toml")


def search_command(kernel: str, spec: Path, out: Path, budget: int, seconds: int, extra: list[str]) -> list[str]:
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


class Live(ProcessDevice):
    """The searches as processes on this host's GPUs (no worker pool: they take the GPUs)."""

    def gpu_count(self) -> int:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"], capture_output=True, text=True, check=False
        )
        return len(out.stdout.split())

    def sample_clocks(self, path: Path) -> Any:
        """nvidia-smi writing each GPU's SM clock, use and power every 0.5 s into `path`."""
        query = "--query-gpu=timestamp,index,clocks.sm,utilization.gpu,power.draw"
        return subprocess.Popen(["nvidia-smi", query, "--format=csv", "-lms", "500"], stdout=path.open("w"))

    def search(self, cmd: list[str], env: dict) -> tuple[int, str]:
        """A search's exit code and the tail of its stderr."""
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        return done.returncode, done.stderr[-1500:]

    def start(self, cmd: list[str], env: dict, cwd: Path) -> Any:
        """A search-only worker started, and 2 s for it (the first creates the storage's schema)."""
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(2)
        return proc

    def trials(self, storage: str) -> list:
        import optuna

        from reorder.search.study import open_storage

        st = open_storage(storage)
        (name,) = optuna.get_all_study_names(st)
        return optuna.load_study(study_name=name, storage=st).trials

    def kill_mid_trial(self, proc: Any, storage: str) -> set[int]:
        """SIGKILL the worker once the study has trials in flight (a worker asks several at a
        time, so it holds some); the numbers RUNNING right after the kill."""
        import optuna

        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            time.sleep(1)
            try:
                running = [t for t in self.trials(storage) if t.state == optuna.trial.TrialState.RUNNING]
            except Exception:  # noqa: BLE001 - the schema may not exist yet
                continue
            if len(running) >= 4 and self.trials(storage)[-1].number > 10:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
                return {t.number for t in self.trials(storage) if t.state == optuna.trial.TrialState.RUNNING}
        return set()


class _Done:
    """A dry run's stand-in for a started search: already over."""

    pid = -1

    def wait(self, timeout: float | None = None) -> int:
        return 0

    def terminate(self) -> None:
        pass


class Dry(DryDevice, Live):
    """No GPU: two made-up GPUs, no search started, the same made-up trials for every storage
    (trial 3 killed while running and retried as the last), so every step is walked."""

    KILLED = 3

    def gpu_count(self) -> int:
        return 2

    def sample_clocks(self, path: Path) -> Any:
        path.write_text("timestamp, index, clocks.sm [MHz], utilization.gpu [%], power.draw [W]\n")
        return _Done()

    def search(self, cmd, env) -> tuple[int, str]:
        assert "optimize" in cmd and Path(cmd[cmd.index("--launch") + 1]).is_file(), cmd
        return 0, "dry run: no search"

    def start(self, cmd, env, cwd) -> Any:
        assert "--worker-index" in cmd and Path(cwd).is_dir(), cmd
        return _Done()

    def trials(self, storage: str) -> list:
        import optuna

        state = optuna.trial.TrialState
        start = datetime.datetime(2026, 1, 1)

        def trial(n: int, st: Any, **system: Any) -> Any:
            value = self.made_up(f"trial{n}")["ratio"] if st == state.COMPLETE else None
            return optuna.trial.FrozenTrial(
                number=n,
                state=st,
                value=value,
                datetime_start=start + datetime.timedelta(seconds=n),
                datetime_complete=start + datetime.timedelta(seconds=n + 5),
                params={},
                distributions={},
                user_attrs={"sha256": f"{n:064x}"} if value else {},
                system_attrs=system,
                intermediate_values={},
                trial_id=n,
            )

        done = [trial(n, state.FAIL if n == self.KILLED else state.COMPLETE) for n in range(12)]
        return [*done, trial(12, state.COMPLETE, failed_trial=self.KILLED)]

    def kill_mid_trial(self, proc, storage) -> set[int]:
        return {self.KILLED}


def throughput(trials) -> dict:
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


def kill_verdict(trials, running_at_kill: set[int]) -> dict:
    """What the storage says after the kill: numbers unique, nothing left running, the killed
    worker's trials failed by the heartbeat and each retried once with the same parameters."""
    import optuna

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


@dataclasses.dataclass
class Rows(DeviceRecord):
    prefix: ClassVar[str] = "multigpu"
    files: ClassVar[dict[str, str]] = {"runs": "multigpu.csv"}
    runs: list = dataclasses.field(default_factory=list)
    kill: list = dataclasses.field(default_factory=list)


def one_run(run, rec: Rows, workers: int) -> None:
    """One search with `workers` workers (all GPUs visible), its throughput from its storage."""
    args = run.args
    folder = args.work / f"w{workers}"
    folder.mkdir(parents=True, exist_ok=True)
    storage = f"journal:{folder / 'study.journal'}"
    extra = ["--workers", str(workers), "--storage", storage]
    cmd = search_command(
        args.kernel, spec_file(args.kernel, args.work), folder / "fast.cubin", args.budget, args.seconds, extra
    )
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    started = time.monotonic()
    rc, said = rec.device.search(cmd, env)
    print(said, flush=True)
    fields = {"kernel": args.kernel, "workers": workers, "gpus": workers, "budget": args.budget}
    row = {**fields, "search_s": args.seconds, "rc": rc, "wall_s": round(time.monotonic() - started, 1)}
    rec.add("runs", {**row, **throughput(rec.device.trials(storage))})
    print(json.dumps({k: v for k, v in rec.runs[-1].items() if k not in rec.stamps}), flush=True)


def kill_test(run, rec: Rows, kernel: str) -> None:
    """N 'hosts': one process per GPU, own folder, one SQLite study with heartbeats; kill one."""
    args, device = run.args, rec.device
    spec = spec_file(kernel, args.work)
    storage = f"sqlite:///{args.work / 'shared.db'}"
    procs = []
    for i in range(device.gpu_count()):
        host = args.work / f"host{i}"
        host.mkdir(parents=True, exist_ok=True)
        extra = ["--storage", storage, "--search-only", "--worker-index", str(i)]
        cmd = search_command(kernel, spec, host / "fast.cubin", args.kill_budget, args.kill_seconds, extra)
        procs.append(device.start(cmd, {**os.environ, "CUDA_VISIBLE_DEVICES": str(i)}, host))
    running_at_kill = device.kill_mid_trial(procs[1], storage)
    for p in procs[:1] + procs[2:]:
        p.wait(timeout=args.kill_seconds + KILL_WAIT_S)
    result = {"kernel": kernel, "workers": len(procs), "budget": args.kill_budget}
    result |= kill_verdict(device.trials(storage), running_at_kill)
    (rec.out / "kill_test.json").write_text(json.dumps({**rec.stamps, **result}, indent=1, default=str))
    print(json.dumps(result, default=str), flush=True)
    rec.add("kill", {k: json.dumps(v) if isinstance(v, (list, dict)) else v for k, v in result.items()})


def check_and_time(run, rec: Rows) -> None:
    run.args.work.mkdir(parents=True, exist_ok=True)
    clocks = rec.device.sample_clocks(rec.out / "clocks.csv")
    try:
        counts = (1, rec.device.gpu_count())
        lanes(rec, "runs", counts, lambda n: one_run(run, rec, n), key=lambda n: {"workers": n})
        kernel = run.manifest["kernel"]
        lanes(rec, "kill", [kernel], lambda k: kill_test(run, rec, k), key=lambda k: {"kernel": k})
    finally:
        clocks.terminate()


def summary(rec: Rows, out: Path) -> str:
    columns = ("workers", "rc", "finished", "failed", "trials per minute", "best")
    lines = summary_head("One study on several GPUs", rec.stamps, columns, "trials per minute of search, storage times")
    for r in rec.runs:
        cells = [r.get(k, "-") for k in ("workers", "rc", "finished", "failed", "trials_per_min", "best")]
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    for k in rec.kill:
        lines += ["", f"kill test ({k.get('workers', '-')} workers): {k.get('status') or 'ran'}"]
        keys = ("numbers_unique", "running_left", "every_killed_trial_retried_once", "binaries_scored_twice")
        lines += [f"- {key}: {k[key]}" for key in keys if key in k]
    return "\n".join(lines) + "\n"


STUDY = declared(
    __name__,
    name="multigpu",
    deadline_s=3600.0,
    stamps=lambda manifest: {"commit": manifest.get("commit"), "l2": "warm"},
)
