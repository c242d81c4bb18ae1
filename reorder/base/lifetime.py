"""What a run leaves behind when it ends, however it ends: nothing.

Killing `optimize` with kill -9 left its loky workers (idle for 300 s by default) and their
resource trackers alive for minutes, and `reorder-search-*` folders and temp cubins stayed
after a kill or a SIGTERM. So:

- every temporary file of a run lives in one folder, `<tmp>/reorder-<uid>/run-<pid>-*`
  (TMPDIR points there, so `tempfile`, worker processes and tools follow); the run holds an
  flock on the folder's lock file, which the kernel drops when the process dies, so the next
  run removes every folder whose lock it can take (`run_folder`);
- a SIGTERM unwinds like Ctrl-C, so `finally` blocks and temporary folders clean up
  (`terminate_on_sigterm`); a write that must not be cut in half is `shielded`;
- worker processes watch their parent and exit within a second of its death (`watch_parent`,
  the initializer of every loky pool made by `parallel`, and of timing.worker's children).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

SCRATCH_ENV = "REORDER_SCRATCH"  # the root of every run's folder, passed on to child runs
LOCK_NAME = ".lock"
YOUNG_S = 60.0  # a folder without a lock file this young may be one being created right now
POLL_S = 1.0


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread so that the run unwinds and cleans up."""


def scratch_root() -> Path:
    """`<tmp>/reorder-<uid>`, the same for a run and the runs it starts, owned by this user."""
    given = os.environ.get(SCRATCH_ENV)
    root = Path(given) if given else Path(tempfile.gettempdir()) / f"reorder-{os.getuid()}"
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = root.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise OSError(f"{root} is not a folder of this user; set {SCRATCH_ENV} to one")
    return root


def clean_stale(root: Path) -> list[Path]:
    """Remove the run folders under `root` whose run has ended, and folders abandoned while
    being made; the folders removed."""
    removed = []
    for folder in [*root.glob("run-*"), *root.glob("new-*")]:
        ended = _ended(folder) if folder.name.startswith("run-") else _old(folder)
        if folder.is_dir() and ended:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def _ended(folder: Path) -> bool:
    """True when nobody holds the folder's lock. The lock file is opened, never created: a
    cleaner that created it could lock a folder another run had just made and not yet
    locked, and delete it under that run (two concurrent runs on one machine did)."""
    try:
        handle = open(folder / LOCK_NAME)  # noqa: SIM115 (closed below, lock released with it)
    except FileNotFoundError:  # half removed by its run (a worker still wrote into it), or being made
        return _old(folder) or not _maker_alive(folder)
    except OSError:
        return False
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # its run holds the lock: alive
        return True


def _maker_alive(folder: Path) -> bool:
    """Whether the process named in `run-<pid>-...` may still be running (a pid that cannot be
    read, or one reused by another process, counts as alive: the folder stays)."""
    try:
        pid = int(folder.name.split("-")[1])
    except (IndexError, ValueError):
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _old(folder: Path) -> bool:
    try:
        return time.time() - folder.stat().st_mtime > YOUNG_S
    except OSError:
        return False


def _locked_folder(root: Path):
    """A new `run-<pid>-*` folder under `root` and the open, locked lock file inside it. It is
    made and locked as `new-<pid>-*` and renamed: no cleaner ever sees it unlocked."""
    staging = Path(tempfile.mkdtemp(prefix=f"new-{os.getpid()}-", dir=root))
    lock = open(staging / LOCK_NAME, "w")  # noqa: SIM115 (held for the whole run)
    fcntl.flock(lock, fcntl.LOCK_EX)
    folder = staging.with_name("run-" + staging.name[len("new-") :])
    staging.rename(folder)
    return folder, lock


@contextlib.contextmanager
def run_folder() -> Iterator[Path]:
    """A fresh, locked folder for this run's temporary files, with TMPDIR and `tempfile`
    pointed at it; removed on the way out. Stale folders of ended runs are removed first."""
    root = scratch_root()
    clean_stale(root)
    folder, lock = _locked_folder(root)
    saved = {key: os.environ.get(key) for key in ("TMPDIR", SCRATCH_ENV, "PYTHONWARNINGS")}
    saved_tempdir = tempfile.tempdir
    os.environ.update({"TMPDIR": str(folder), SCRATCH_ENV: str(root), "PYTHONWARNINGS": _quiet_trackers()})
    tempfile.tempdir = str(folder)
    try:
        yield folder
    finally:
        tempfile.tempdir = saved_tempdir
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        _stop_pools()
        shutil.rmtree(folder, ignore_errors=True)
        lock.close()


def _quiet_trackers() -> str:
    """PYTHONWARNINGS for the processes the run starts, loky's resource trackers among them:
    a tracker outlives the run by a moment and warned, on the run's stderr after its last
    line, that it could not clean what the run had already removed with its folder."""
    mine = "ignore:resource_tracker:UserWarning"
    given = os.environ.get("PYTHONWARNINGS", "")
    return f"{given},{mine}" if given else mine


def _stop_pools() -> None:
    """Stop loky's reusable workers: they were started with TMPDIR in the folder removed now
    (matters only where one process runs several commands, as tests and the fuzzer do)."""
    import sys

    module = sys.modules.get("joblib.externals.loky.reusable_executor")
    executor = getattr(module, "_executor", None)
    if executor is not None:
        executor.shutdown(wait=True, kill_workers=True)


_TERMINATED = threading.Event()  # a SIGTERM or SIGINT arrived inside terminate_on_sigterm
_SIGNAL: dict[str, type[KeyboardInterrupt]] = {"kind": Terminated}  # which of the two came first


class _Shield:
    """shielded()'s state: how deep the current step is, and what a signal left to raise."""

    depth = 0
    pending: BaseException | None = None


@contextlib.contextmanager
def terminate_on_sigterm() -> Iterator[None]:
    """While inside, SIGTERM raises Terminated and SIGINT KeyboardInterrupt in the main thread
    (elsewhere: no change), at once or, inside `shielded`, when the shielded step ends. A
    SIGTERM is also remembered: an exception raised from a signal handler can land in a
    weakref or GC callback, whose exceptions Python prints and drops (CI saw a SIGTERM land in
    SQLAlchemy's `_collection_gced`, and optimize searched on), so long loops also ask
    `raise_if_terminated` at their safe points."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_term(signum, frame):
        _remember(Terminated)
        deliver(Terminated())

    def on_int(signum, frame):
        _remember(KeyboardInterrupt)
        deliver(KeyboardInterrupt())

    previous = signal.signal(signal.SIGTERM, on_term), signal.signal(signal.SIGINT, on_int)
    previous_hook = sys.unraisablehook
    sys.unraisablehook = _quiet_about_the_signal(previous_hook)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous[0])
        signal.signal(signal.SIGINT, previous[1])
        sys.unraisablehook = previous_hook
        _TERMINATED.clear()
        _Shield.pending = None


def _quiet_about_the_signal(previous):
    """An unraisable hook that drops the signal's own exception (Python would print it with a
    traceback under "Exception ignored in", though the run then ends as the signal, in one
    line) and passes every other one on."""

    def hook(info) -> None:
        if _TERMINATED.is_set() and isinstance(info.exc_value, KeyboardInterrupt):
            return
        previous(info)

    return hook


def _remember(kind: type[KeyboardInterrupt]) -> None:
    if not _TERMINATED.is_set():
        _SIGNAL["kind"] = kind
        _TERMINATED.set()


def deliver(exc: BaseException) -> None:
    """Raise `exc` (from a signal handler) now, or when the shielded step running now ends."""
    if _Shield.depth:
        _Shield.pending = _Shield.pending or exc
        return
    raise exc


@contextlib.contextmanager
def shielded() -> Iterator[None]:
    """A step a signal must not cut in half: a write to the study's storage, the rename of an
    output. A SIGTERM, SIGINT or deadline (reorder.base.deadline) arriving inside is raised
    when the step ends; steps shielded this way take milliseconds."""
    _Shield.depth += 1
    try:
        yield
    finally:
        _Shield.depth -= 1
    if not _Shield.depth and _Shield.pending is not None:
        exc, _Shield.pending = _Shield.pending, None
        raise exc


def signal_received() -> type[KeyboardInterrupt] | None:
    """Terminated or KeyboardInterrupt when a SIGTERM or SIGINT arrived inside
    terminate_on_sigterm, else None. An exception raised from a signal handler inside a
    library's commit can surface as that library's own error (SQLAlchemy's, wrapped by
    Optuna's storage); the run then ended because of the signal, and says so."""
    return _SIGNAL["kind"] if _TERMINATED.is_set() else None


@contextlib.contextmanager
def signal_wins() -> Iterator[None]:
    """Run the block; an error it raises after a SIGTERM or SIGINT arrived comes out as that
    signal (signal_received says why): the run ended because it was told to."""
    try:
        yield
    except Exception:
        kind = signal_received()
        if kind is None:
            raise
        raise kind() from None


def raise_if_terminated() -> None:
    """Raise Terminated (KeyboardInterrupt for a SIGINT) when the signal arrived and its first
    raise was swallowed or is still held by a shield."""
    if _TERMINATED.is_set():
        raise _SIGNAL["kind"]()


def watch_parent(parent: int, poll_s: float = POLL_S) -> None:
    """Exit this process (at once, no cleanup to hang on) when `parent` is no longer its parent."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        os._exit(1)

    threading.Thread(target=watch, name="watch-parent", daemon=True).start()


def parallel(n_jobs: int):
    """A joblib Parallel on loky whose workers die with this process."""
    from joblib import Parallel

    return Parallel(n_jobs=n_jobs, backend="loky", initializer=watch_parent, initargs=(os.getpid(),))
