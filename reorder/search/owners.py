"""Who holds a RUNNING trial, and settling the trials nobody will finish.

A trial is RUNNING from `study.ask()` until `study.tell()`. A run that is cut (its --time
reached), signalled (SIGTERM, Ctrl-C) or killed (kill -9, a lost machine) must not leave its
trials RUNNING: a study with trials that never end reads as a search still going, and
Optuna's own remedy (heartbeats, then failing the stale trial) exists for database storage
only and waits out a grace period. So:

- each trial records its owner (`OWNER`: host, boot, pid and the process's start time, so a
  reused pid is not taken for the owner) as it is asked for;
- a run settles its own open trials on every way out (`settle`): FAIL, with the reason in
  `interrupted`, and a copy queued to run again (once) when the study resumes;
- a run starting on a study first settles the RUNNING trials whose owner is a process of
  this machine that no longer exists (`reconcile`), on SQLite, journal or any storage;
  trials of another machine's live-or-dead workers are left to the storage's heartbeat.

An interrupted trial does not count against --budget (reorder.search.study.finished_trials).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterable

from reorder.base.lifetime import shielded

OWNER = "owner"
INTERRUPTED = "interrupted"
ORPHAN_GRACE_S = 60.0  # a RUNNING trial with no owner recorded (killed between ask and the
# owner's record) is taken for abandoned after this long, as Optuna's heartbeat grace does


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as handle:
            return handle.read().strip()
    except OSError:
        return "-"


def _start_ticks(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (None: no such process; '-': no /proc)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[19]
    except FileNotFoundError:
        return None
    except (OSError, IndexError):
        return "-"


def me() -> str:
    """This process, as a trial's owner."""
    return f"{socket.gethostname()} {_boot_id()} {os.getpid()} {_start_ticks(os.getpid()) or '-'}"


def gone(owner: str) -> bool:
    """True when `owner` names a process of this machine and boot that no longer runs. A
    process of another machine is never taken for gone: its storage's heartbeat decides."""
    try:
        host, boot, pid, ticks = owner.split()
    except ValueError:
        return False
    if host != socket.gethostname():
        return False
    if boot != _boot_id():
        return True  # this machine rebooted since: nothing of that boot runs
    now = _start_ticks(int(pid))
    if now is None:
        return True
    if now == "-" or ticks == "-":
        return _pid_gone(int(pid))
    return now != ticks  # the pid was reused by another process


def _pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def claim(trial) -> None:
    """Record this process as the trial's owner (called as the trial is asked for)."""
    trial.set_user_attr(OWNER, me())


def settle(study, trials: Iterable, why: str) -> int:
    """FAIL each of this run's open trials with `why`, and queue each to run again once; the
    number settled. Shielded: a second signal does not leave one half-told."""

    count = 0
    with shielded():
        for trial in trials:
            try:
                _fail(study, trial, why)
            except (RuntimeError, ValueError):  # already told (its step finished as the cut came)
                continue
            _retry(study, trial._trial_id)
            count += 1
    return count


def _fail(study, trial, why: str) -> None:
    """Tell the trial FAILED with `why`. A storage error is tried once more: a signal that cut
    a commit leaves that commit's session rolled back, and the next one starts clean."""
    import optuna

    for attempt in (1, 2):
        try:
            trial.set_user_attr(INTERRUPTED, why)
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
            return
        except optuna.exceptions.StorageInternalError:
            if attempt == 2:
                raise


def reconcile(study, storage) -> int:
    """Settle the RUNNING trials of processes of this machine that are gone (a run killed with
    kill -9, or that lost its machine), and RUNNING trials that never recorded an owner and
    are older than ORPHAN_GRACE_S; the number settled. Each is queued to run again once."""
    import optuna

    state = optuna.trial.TrialState
    count = 0
    now = time.time()
    for t in study.get_trials(deepcopy=False, states=(state.RUNNING,)):
        owner = t.user_attrs.get(OWNER)
        started = t.datetime_start.timestamp() if t.datetime_start else now
        if not (gone(owner) if owner else now - started > ORPHAN_GRACE_S):
            continue
        with shielded():
            try:
                storage.set_trial_user_attr(t._trial_id, INTERRUPTED, "its run ended without finishing it")
                storage.set_trial_state_values(t._trial_id, state=state.FAIL)
            except (RuntimeError, ValueError):  # another run settled it first
                continue
            _retry(study, t._trial_id)
        count += 1
    return count


def _retry(study, trial_id: int, max_retry: int = 1) -> None:
    """Queue a copy of a settled trial, its parameters only, at most `max_retry` times over
    its history (the system attributes Optuna's RetryFailedTrialCallback keeps)."""
    import optuna

    frozen = study._storage.get_trial(trial_id)
    history = [*frozen.system_attrs.get("retry_history", []), frozen.number]
    if len(history) > max_retry:
        return
    study.add_trial(
        optuna.create_trial(
            state=optuna.trial.TrialState.WAITING,
            params=frozen.params,
            distributions=frozen.distributions,
            system_attrs={**frozen.system_attrs, "failed_trial": frozen.number, "retry_history": history},
        )
    )
