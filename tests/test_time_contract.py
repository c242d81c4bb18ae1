"""`optimize --time T` ends by T + grace in every phase, and a signal ends it in seconds.

The phase rule (reorder.search.budget) is tested as pure functions; the cut
(reorder.base.deadline) on a busy loop, a child process and a shielded write; the trials'
owners on SQLite and journal storage. End to end: a generated 20,000-instruction kernel
under --time on the CPU, and SIGTERM 5 s into the search, into the finalists and into the
re-check (those two on the GPU path, its worker jobs faked: tests/fake_gpu_optimize.py).

Wall-clock limits here are scaled by the machine's load (several runs share two cores) and
paired with a bound on the process's own CPU time, which load does not inflate.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import optuna
import pytest

from reorder.base.deadline import Deadline, grace_s, move_on_at, process_start
from reorder.base.lifetime import shielded, terminate_on_sigterm
from reorder.search import budget

ROOT = Path(__file__).resolve().parent.parent
CUBIN = ROOT / "benchmarks" / "kernels" / "cubin" / "rmsnorm.cubin"
SPEC = ROOT / "benchmarks" / "kernels" / "specs" / "rms_norm_f32.toml"
KERNEL = "rms_norm_f32"
SIGNAL_EXIT_S = 2.0  # the promise: a signal ends the run within this, in every phase
SIGNAL_CPU_S = 1.5  # CPU the process may spend between the signal and its exit


def _load_slack() -> float:
    """How many times over the cores are asked for now (at least 1): wall limits scale by it."""
    try:
        return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
    except OSError:
        return 1.0


# ---------------------------------------------------------------- the rule


def _rule(**kw) -> budget.Rule:
    base = {"limit_s": 60.0, "gpu": True, "finalists": 3, "final_budget_s": 5.0}
    base |= {"recheck_sets": 20, "launches": 1, "trial_launches": 1}
    return budget.Rule(**{**base, **kw})


def test_the_phases_end_in_order_and_the_search_gets_what_the_reserves_leave() -> None:
    costs = budget.Costs(build_s=3.0, score_s=3.0, timing_s=2.0)
    ends = budget.ends(_rule(), costs, start=100.0, hard=170.0)
    assert ends.search < ends.finalists < ends.recheck < ends.close == 160.0 < ends.hard
    assert ends.close - ends.recheck == 3.0  # closing: the longest build
    assert ends.recheck - ends.finalists == pytest.approx(1.0 * 20 / 3)  # one re-check, scaled from a trial's
    assert ends.finalists - ends.search == pytest.approx(3 * (1.0 + 4.0))  # 15 s share: 3 x (check + 4 s)
    assert ends.closing_cut() == 167.0


def test_before_any_trial_is_scored_the_search_keeps_one_finalists_reserve_only() -> None:
    """A big kernel's first round may run into the reserve of the finalists it does not have
    yet; once a trial is scored the search's end moves back to the full reserve."""
    unscored = budget.ends(_rule(), budget.Costs(build_s=3.0), start=100.0, hard=170.0)
    assert unscored.finalists - unscored.search == pytest.approx(1.0 + 4.0)  # one finalist: check + 4 s
    scored = budget.ends(_rule(), budget.Costs(build_s=3.0, score_s=3.0, timing_s=2.0), start=100.0, hard=170.0)
    assert scored.search < unscored.search and scored.finalists - scored.search == pytest.approx(15.0)


def test_the_finalists_shrink_to_a_quarter_of_t_timing_first_then_their_number() -> None:
    assert budget.final_budget(_rule(limit_s=3600), budget.Costs()) == (3, 5.0)
    count, per = budget.final_budget(_rule(limit_s=60), budget.Costs(score_s=3.0, timing_s=2.0))
    assert count == 3 and per == pytest.approx(4.0)
    count, per = budget.final_budget(_rule(limit_s=8), budget.Costs(score_s=3.0, timing_s=2.0))
    assert (count, per) == (1, 1.0)
    assert budget.final_budget(_rule(gpu=False), budget.Costs()) == (3, 0.0)


def test_a_step_that_cannot_finish_in_the_time_left_is_not_started() -> None:
    assert budget.fits(10.0, None, 11.0)  # not measured yet: try it
    assert budget.fits(10.0, 0.5, 11.0) and not budget.fits(10.0, 1.5, 11.0)
    assert not budget.fits(11.0, None, 11.0)


def test_the_grace_is_ten_seconds_or_five_percent() -> None:
    assert grace_s(40) == 10.0 and grace_s(3600) == 180.0
    d = Deadline(start=50.0, limit_s=60.0)
    assert (d.end, d.hard_end) == (110.0, 120.0)
    assert process_start() <= time.monotonic()


# ---------------------------------------------------------------- the cut


def test_a_cut_ends_a_busy_loop_and_a_child_process_and_the_run_goes_on() -> None:
    t = time.monotonic()
    with terminate_on_sigterm():
        with move_on_at(t + 0.3) as cut:
            while True:
                pass
        assert cut.reached
        with move_on_at(time.monotonic() + 0.3) as cut:
            child = subprocess.Popen(["sleep", "30"])
            child.wait()
        assert cut.reached
        child.kill()
        child.wait()
        with move_on_at(time.monotonic() + 5) as outer:
            with move_on_at(time.monotonic() + 0.2) as inner:
                time.sleep(3)
            assert inner.reached and not outer.reached
        with move_on_at(time.monotonic() + 0.2) as outer, move_on_at(time.monotonic() + 5) as inner:
            time.sleep(3)
        assert outer.reached and not inner.reached
    assert time.monotonic() - t < 5


def test_a_shielded_step_finishes_and_takes_the_cut_after() -> None:
    done = []
    with move_on_at(time.monotonic() + 0.1) as cut:
        with shielded():
            time.sleep(0.4)
            done.append("write")
        done.append("never")
    assert cut.reached and done == ["write"]


def test_a_sigterm_inside_a_shield_is_raised_when_it_ends() -> None:
    from reorder.base.lifetime import Terminated

    done = []
    with terminate_on_sigterm(), pytest.raises(Terminated):
        with shielded():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.2)
            done.append("write")
        done.append("never")
    assert done == ["write"]


def test_a_library_error_made_by_the_signal_comes_out_as_the_signal() -> None:
    """A SIGTERM landing in a storage commit surfaced as Optuna's StorageInternalError and the
    run exited 1 with a traceback under load; the signal, not the error it caused, ends the run."""
    from reorder.base.lifetime import Terminated, signal_wins

    def commit() -> None:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.2)
        except Terminated:  # what a library does with an exception inside its commit
            raise optuna.exceptions.StorageInternalError("An exception is raised during the commit.") from None

    with terminate_on_sigterm(), pytest.raises(Terminated), signal_wins():
        commit()
    with pytest.raises(ValueError), signal_wins():  # no signal: the error stays itself
        raise ValueError("not a signal")


def test_every_command_ends_as_the_signal_when_the_signal_caused_its_error(capsys) -> None:
    """Not only optimize: a command whose tool or library fails because a SIGTERM arrived exits
    143 with the one terminated line, not the tool's error."""
    import argparse

    from reorder.base.errors import ToolError
    from reorder.cli.main import _run

    def handler(args) -> int:
        os.kill(os.getpid(), signal.SIGTERM)
        try:
            time.sleep(0.2)
        except KeyboardInterrupt:  # a tool's wrapper that turns its killed child into its own error
            raise ToolError("nvdisasm: killed by SIGTERM") from None
        return 0

    args = argparse.Namespace(command="disasm", handler=handler, cubin=None)
    assert _run(args) == 143
    assert capsys.readouterr().err.strip().splitlines()[-1] == "reorder disasm: terminated"


# ---------------------------------------------------------------- the trials' owners


def _asks_and_dies(storage: str) -> None:
    """A process that asks for a trial, records itself its owner and is killed."""
    script = f"""
import os, sys
sys.path.insert(0, {str(ROOT)!r})
import optuna
from reorder.search.study import open_storage
from reorder.search import owners
study = optuna.create_study(study_name="s", storage=open_storage({storage!r}), load_if_exists=True)
trial = study.ask()
trial.suggest_int("x", 0, 9)
owners.claim(trial)
os.kill(os.getpid(), 9)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == -9, done.stderr


@pytest.mark.parametrize("kind", ["sqlite", "journal"])
def test_the_running_trial_of_a_killed_run_is_settled_and_queued_again(tmp_path: Path, kind: str) -> None:
    from reorder.search import owners
    from reorder.search.study import open_storage

    url = f"sqlite:///{tmp_path / 's.db'}" if kind == "sqlite" else f"journal:{tmp_path / 's.journal'}"
    _asks_and_dies(url)
    storage = open_storage(url)
    study = optuna.load_study(study_name="s", storage=storage)
    assert [t.state for t in study.trials] == [optuna.trial.TrialState.RUNNING]
    assert owners.reconcile(study, storage) == 1  # at once: no heartbeat grace to wait out
    dead, again = study.trials
    assert dead.state == optuna.trial.TrialState.FAIL and "interrupted" in dead.user_attrs
    assert again.state == optuna.trial.TrialState.WAITING and again.params == dead.params
    assert again.system_attrs["failed_trial"] == dead.number
    assert owners.reconcile(study, storage) == 0


def test_a_live_owner_is_not_taken_for_gone() -> None:
    from reorder.search import owners

    assert not owners.gone(owners.me())
    assert owners.gone(owners.me().rsplit(" ", 2)[0] + " 999999999 1")
    assert not owners.gone("another-host - 1 1")


# ---------------------------------------------------------------- end to end


class _Run:
    """An optimize run in its own process, its stderr read line by line as it comes."""

    def __init__(self, command: list[str], env: dict) -> None:
        self.proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.started = time.monotonic()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, prefix: str, timeout_s: float = 240.0) -> None:
        deadline = time.monotonic() + timeout_s
        while not any(line.startswith(prefix) for line in self.lines):
            assert self.proc.poll() is None, f"exited before {prefix!r}: {self.lines[-5:]}"
            assert time.monotonic() < deadline, f"no {prefix!r} line in {timeout_s} s: {self.lines[-5:]}"
            time.sleep(0.1)

    def signal_and_wait(self, signum: int) -> tuple[float, float, set[int]]:
        """Send `signum`; (seconds to exit, CPU seconds spent after it, the descendants it had)."""
        kids = _descendants(self.proc.pid)
        before = sum(_cpu_s(p) for p in {self.proc.pid, *kids})  # what wait4's usage will hold already
        self.proc.send_signal(signum)
        sent = time.monotonic()
        _, status, usage = os.wait4(self.proc.pid, 0)
        waited = time.monotonic() - sent
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        self.reader.join(timeout=10)
        return waited, usage.ru_utime + usage.ru_stime - before, kids


def _cpu_s(pid: int) -> float:
    """CPU seconds of the process and its reaped children so far (/proc/PID/stat); 0 if gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _descendants(pid: int) -> set[int]:
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        try:
            kids = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            continue
        found |= {int(k) for k in kids}
        todo += [int(k) for k in kids]
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _env(tmp_path: Path, **more: str) -> dict:
    return dict(os.environ, CUDA_VISIBLE_DEVICES="", REORDER_SCRATCH=str(tmp_path / "scratch"), **more)


def _assert_ended_cleanly(run: _Run, tmp_path: Path, phase: str, waited: float, cpu: float, kids, storage) -> None:
    assert run.proc.returncode == 143, run.lines[-5:]
    assert run.lines[-1].startswith(f"reorder optimize: terminated during the {phase}"), run.lines[-3:]
    assert "nothing written" in run.lines[-1]
    assert not any("Traceback" in line for line in run.lines), "\n".join(run.lines[-40:])
    assert cpu <= SIGNAL_CPU_S, f"{cpu:.2f} CPU-s between the signal and the exit"
    assert waited <= SIGNAL_EXIT_S * _load_slack(), f"{waited:.2f} s from the signal to the exit"
    assert not (tmp_path / "out.cubin").exists()  # nothing written, nothing half-written
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp") or p.name.startswith(".out.cubin")]
    assert not list((tmp_path / "scratch").glob("run-*"))  # the run's temporary folders are gone
    time.sleep(1.5)  # loky's workers watch their parent once a second
    assert not [k for k in kids if _alive(k)], "a worker outlived the run"
    from reorder.search.study import open_storage

    url = storage or f"sqlite:///{tmp_path / 'out.reorder' / 'study.db'}"
    for name in optuna.get_all_study_names(open_storage(url)):
        study = optuna.load_study(study_name=name, storage=open_storage(url))
        assert optuna.trial.TrialState.RUNNING not in {t.state for t in study.trials}


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
@pytest.mark.parametrize("storage", ["sqlite", "journal"])
def test_sigterm_2_s_into_the_search(tmp_path: Path, storage: str) -> None:
    url = None if storage == "sqlite" else f"journal:{tmp_path / 'study.journal'}"
    command = [sys.executable, "-m", "reorder", "optimize", str(CUBIN), "--kernel", KERNEL]
    command += ["-o", str(tmp_path / "out.cubin"), "--device", "cpu", "--budget", "500", "--time", "10m"]
    command += ["--jobs", "2", "--assume-noalias", *(["--storage", url] if url else [])]
    run = _Run(command, _env(tmp_path))
    run.wait_for("search: [")  # a trial scored: the workers are up and building the next ones
    time.sleep(2)
    waited, cpu, kids = run.signal_and_wait(signal.SIGTERM)
    _assert_ended_cleanly(run, tmp_path, "search", waited, cpu, kids, url)


FAKE_PTXAS = """#!/bin/sh
case "$*" in *--version*) echo "Cuda compilation tools, release 13.0, V13.0.88"; exit 0;; esac
touch "$(dirname "$0")/started"
exec sleep 600
"""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_sigterm_while_ptxas_compiles_the_input_kills_it(tmp_path: Path) -> None:
    """A PTX input is compiled before any phase; a ptxas that never ends (a stand-in first on
    PATH) is killed with the run, which says where it was and writes nothing."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "ptxas").write_text(FAKE_PTXAS)
    (folder / "ptxas").chmod(0o755)
    env = _env(tmp_path, REORDER_CACHE=str(tmp_path / "cache"))
    env["PATH"] = f"{folder}{os.pathsep}{env.get('PATH', '')}"
    ptx = ROOT / "tests" / "corpus" / "ptx" / "sm_90" / "elementwise.ptx"
    command = [sys.executable, "-m", "reorder", "optimize", str(ptx), "-o", str(tmp_path / "out.cubin")]
    run = _Run([*command, "--device", "cpu", "--time", "5m"], env)
    deadline = time.monotonic() + 120 * _load_slack()
    while not (folder / "started").exists():
        if run.proc.poll() is not None:
            pytest.skip("a ptxas of an installed package outranks PATH here: the stand-in never ran")
        assert time.monotonic() < deadline, run.lines[-3:]
        time.sleep(0.1)
    waited, cpu, kids = run.signal_and_wait(signal.SIGTERM)
    assert run.proc.returncode == 143, run.lines[-3:]
    assert run.lines[-1] == "reorder optimize: terminated while ptxas compiled the PTX input; nothing written"
    assert waited <= SIGNAL_EXIT_S * _load_slack() and cpu <= SIGNAL_CPU_S
    assert not (tmp_path / "out.cubin").exists() and not list((tmp_path / "cache").rglob("*.cubin"))
    assert not list((tmp_path / "cache").rglob("*.building"))  # the half-made cubin went with ptxas
    time.sleep(0.5)
    assert not [k for k in kids if _alive(k)], "ptxas outlived the run"


def _fake_gpu(tmp_path: Path, *flags: str, **env: str) -> _Run:
    command = [sys.executable, str(ROOT / "tests" / "fake_gpu_optimize.py"), "optimize", str(CUBIN)]
    command += ["--kernel", KERNEL, "--launch", str(SPEC), "-o", str(tmp_path / "out.cubin"), "--time", "10m"]
    command += ["--budget", "2", "--jobs", "1", "--candidate-budget", "0.2", "--assume-noalias", *flags]
    return _Run(command, _env(tmp_path, **env))


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
@pytest.mark.parametrize(
    ("stage", "final_budget", "env", "after_s"),
    [
        ("finalists", "60", {}, 5),  # each finalist's timing job runs 50 s: the busy GPU worker is killed
        ("re-check", "0.2", {"FAKE_RECHECK_S": "600"}, 5),  # the re-check hangs: the hung worker is killed
        ("pruning", "0.2", {"FAKE_PRUNE_S": "60"}, 1),  # each removal's scoring runs 60 s
    ],
)
def test_sigterm_into_a_gpu_stage_kills_its_worker(
    tmp_path: Path, stage: str, final_budget: str, env: dict[str, str], after_s: float
) -> None:
    run = _fake_gpu(tmp_path, "--final-budget", final_budget, **env)
    run.wait_for(f"{stage}: ")
    time.sleep(after_s)
    waited, cpu, kids = run.signal_and_wait(signal.SIGTERM)
    _assert_ended_cleanly(run, tmp_path, stage, waited, cpu, kids, None)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_sigint_ends_the_run_as_sigterm_does(tmp_path: Path) -> None:
    run = _fake_gpu(tmp_path, "--final-budget", "60")
    run.wait_for("finalists: ")
    time.sleep(1)
    waited, cpu, _ = run.signal_and_wait(signal.SIGINT)
    assert run.proc.returncode == 130 and run.lines[-1].startswith("reorder optimize: interrupted during the finalists")
    assert cpu <= SIGNAL_CPU_S and waited <= SIGNAL_EXIT_S * _load_slack()
    assert not (tmp_path / "out.cubin").exists()


@pytest.fixture(scope="module")
def big_cubin(tmp_path_factory) -> Path:
    from big_kernel import build

    return build(tmp_path_factory.mktemp("big"), loads=10_000)


@pytest.mark.slow
def test_a_20000_instruction_kernel_under_time_writes_its_best_proven_result(tmp_path: Path, big_cubin) -> None:
    """--time 12s on the CPU: the families whose analysis cannot finish are cut, the builds
    that cannot finish are cut, and the run still ends by T + grace with a written output
    (the input's copy, the reason on the last line, when nothing was proven in time)."""
    limit = 12.0
    out = tmp_path / "out.cubin"
    command = [sys.executable, "-m", "reorder", "optimize", str(big_cubin), "-o", str(out), "--device", "cpu"]
    command += ["--time", f"{limit:g}s", "--budget", "3"]
    started = time.monotonic()
    done = subprocess.run(command, env=_env(tmp_path), capture_output=True, text=True, timeout=600, check=False)
    wall = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"result: wrote {out}: "), last
    assert out.is_file() and out.stat().st_size > 0
    assert wall <= (limit + grace_s(limit)) * _load_slack(), f"{wall:.1f} s for --time {limit:g}s"
    report = (tmp_path / "out.reorder" / "report.md").read_text()
    assert "phases of --time 12 s" in report
