"""Process isolation for GPU evaluations: a fault or a hang costs one job, never the run.

A candidate cubin can execute an illegal instruction, fault on an address, or
spin forever. Any of these poisons (or freezes) the CUDA context of the process
running it, so every GPU evaluation runs in a child process:

- WorkerPool(devices=[0, 1, ...]) keeps one child per GPU; each child sets
  CUDA_VISIBLE_DEVICES to its device before anything touches CUDA, so inside a
  job the GPU is always device 0. Use None for "leave the environment alone".
- A Job names its function by import path ('pkg.module:func') and carries
  picklable arguments, so tests can run fake jobs through the same machinery.
- Outcomes (JobResult.status):
    'ok'       the function returned; `value` is its result
    'error'    it raised a ReorderError (a spec or setup problem, not a fault);
               the worker is kept
    'crashed'  it raised anything else (e.g. cupy's CUDARuntimeError for an
               illegal instruction) or the process died; the worker is replaced
    'timeout'  no answer within job.timeout_s; the worker is killed and replaced
- Children are fresh interpreters (fork after CUDA init is unsafe), restarted lazily, when
  the next job arrives. By default ('subprocess') a child is `python -c` importing this
  module, given the parent's sys.path and a socket: it never re-runs the caller's
  `__main__`, so a script without `if __name__ == "__main__":` (or a notebook, a REPL) can
  start one, which multiprocessing's 'spawn' refuses ("...before the current process has
  finished its bootstrapping phase": the child re-ran the script, which started a pool
  again). Jobs name their function by import path, so a child needs nothing from
  `__main__`. `start_method='spawn'` (or another multiprocessing method) is still accepted.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import multiprocessing as mp
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

Status = Literal["ok", "error", "crashed", "timeout"]
Device = int | str | None


@dataclass(frozen=True, slots=True)
class Job:
    """A function (by import path) and its picklable arguments, with a wall-clock limit."""

    func: str
    args: tuple[Any, ...] = ()
    kwargs: tuple[tuple[str, Any], ...] = ()
    timeout_s: float = 60.0

    @classmethod
    def of(cls, func: Callable[..., Any] | str, *args: Any, timeout_s: float = 60.0, **kwargs: Any) -> Job:
        """Build a Job from a module-level function (or its 'module:name' path)."""
        if not isinstance(func, str):
            module = _importable_module(getattr(func, "__module__", None))
            if not module or "<locals>" in func.__qualname__:
                raise ValueError(f"{func!r} is not importable by path; define it at module level in a module")
            func = f"{module}:{func.__qualname__}"
        return cls(func, tuple(args), tuple(sorted(kwargs.items())), timeout_s)


def _importable_module(module: str | None) -> str | None:
    """The name a worker can import `module` by: a script run with `python -m pkg.mod` is
    `__main__` here but `pkg.mod` to a fresh process; a plain script file has no such name."""
    if module != "__main__":
        return module
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return spec.name if spec is not None and spec.name != "__main__" else None


@dataclass(frozen=True, slots=True)
class JobResult:
    """The outcome of one job; `reason` is one line whenever status is not 'ok'."""

    status: Status
    value: Any = None
    reason: str = ""
    error_type: str = ""
    detail: str = ""  # traceback text from the child, when there is one
    device: Device = None
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def resolve(path: str) -> Callable[..., Any]:
    """Import 'pkg.module:qual.name'."""
    module_name, sep, attr = path.partition(":")
    if not sep or not attr:
        raise ValueError(f"job function must look like 'pkg.module:func', got {path!r}")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def _is_reorder_error(exc: BaseException) -> bool:
    try:
        from reorder.base.errors import ReorderError
    except ImportError:  # pragma: no cover
        return False
    return isinstance(exc, ReorderError)


def _child_main(conn: Any, device: Device, parent: int | None = None) -> None:
    """Child loop: announce readiness, then run jobs until told to stop (None) or the pipe closes.
    A child busy in a job (a hung kernel) would not see the pipe close: it watches its parent
    and exits when the parent dies (reorder.base.lifetime.watch_parent)."""
    if parent is not None:
        from reorder.base.lifetime import watch_parent

        watch_parent(parent)
    if device is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(device)
    conn.send(("ready", os.getpid()))
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        try:
            value = resolve(job.func)(*job.args, **dict(job.kwargs))
            reply: tuple[Any, ...] = ("ok", value)
        except BaseException as e:  # noqa: BLE001 - everything is reported, nothing escapes
            kind = "error" if _is_reorder_error(e) else "crashed"
            first = str(e).strip().splitlines()[0] if str(e).strip() else ""
            reply = (kind, type(e).__name__, first, traceback.format_exc())
        try:
            conn.send(reply)
        except Exception as e:  # noqa: BLE001 - the result itself would not pickle
            conn.send(("crashed", type(e).__name__, f"result could not be sent back: {e}", ""))


_CHILD = (
    "import json, os, sys; sys.path[:] = json.loads(os.environ.pop('REORDER_WORKER_PATH')); "
    "from timing.worker import _subprocess_main; _subprocess_main()"
)


def _subprocess_main() -> None:
    """A 'subprocess' child's entry: argv carries the socket's fd, the device and the parent."""
    from multiprocessing.connection import Connection

    fd, device, parent = int(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])
    _child_main(Connection(fd), device, parent)


class _Child:
    """A child started as a fresh interpreter (see the module docstring), with the part of
    multiprocessing.Process's interface _Worker uses."""

    def __init__(self, device: Device, parent: int) -> None:
        from multiprocessing.connection import Connection

        ours, theirs = socket.socketpair()
        path = [p if p else os.getcwd() for p in sys.path]
        env = {**os.environ, "REORDER_WORKER_PATH": json.dumps(path)}
        argv = [sys.executable, "-c", _CHILD, str(theirs.fileno()), json.dumps(device), str(parent)]
        self.popen = subprocess.Popen(argv, pass_fds=(theirs.fileno(),), env=env)
        theirs.close()
        self.conn = Connection(ours.detach())
        self.pid = self.popen.pid

    def is_alive(self) -> bool:
        return self.popen.poll() is None

    def kill(self) -> None:
        if self.is_alive():
            self.popen.kill()

    def join(self, timeout: float | None = None) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout)

    @property
    def exitcode(self) -> int | None:
        return self.popen.poll()


def _exit_reason(code: int | None) -> str:
    if code is None:
        return "worker closed its pipe but did not exit"
    if code < 0:
        try:
            return f"worker killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"worker killed by signal {-code}"
    return f"worker exited with code {code}"


class _Worker:
    """One child process bound to one device; used by one thread at a time."""

    def __init__(self, ctx: Any, device: Device, startup_timeout_s: float) -> None:
        self.ctx = ctx
        self.device = device
        self.startup_timeout_s = startup_timeout_s
        self.proc: Any = None
        self.conn: Any = None

    def _start(self) -> str:
        """Start a child and wait for 'ready'; returns '' or a reason it failed."""
        if self.ctx is None:
            self.proc = _Child(self.device, os.getpid())
            parent = self.conn = self.proc.conn
        else:
            parent, child = self.ctx.Pipe()
            self.proc = self.ctx.Process(target=_child_main, args=(child, self.device, os.getpid()), daemon=True)
            self.proc.start()
            child.close()
            self.conn = parent
        if not parent.poll(self.startup_timeout_s):
            self.stop(kill=True)
            return f"worker did not start within {self.startup_timeout_s:g} s"
        try:
            parent.recv()
        except (EOFError, OSError):
            self.proc.join(5.0)
            why = _exit_reason(self.proc.exitcode)
            self.stop(kill=True)
            return f"worker died while starting ({why})"
        return ""

    def stop(self, kill: bool = False) -> None:
        """End the child: politely (None message) unless `kill`, then SIGKILL if needed."""
        proc, conn = self.proc, self.conn
        self.proc = self.conn = None
        if proc is None:
            return
        if not kill and proc.is_alive():
            with contextlib.suppress(OSError, ValueError):
                conn.send(None)
            proc.join(2.0)
        if proc.is_alive():
            proc.kill()
            proc.join(5.0)
        if conn is not None:
            conn.close()

    def run(self, job: Job) -> JobResult:
        try:
            return self._run(job)
        except BaseException:  # a signal or a deadline (reorder.base.deadline) mid-job: the job's
            self.stop(kill=True)  # state is unknown, the worker may hang in a kernel: never reused
            raise

    def _run(self, job: Job) -> JobResult:
        t0 = time.perf_counter()

        def result(status: Status, **kw: Any) -> JobResult:
            return JobResult(status, device=self.device, elapsed_s=time.perf_counter() - t0, **kw)

        if self.proc is None or not self.proc.is_alive():
            self.stop(kill=True)
            why = self._start()
            if why:
                return result("crashed", reason=why, error_type="WorkerStartError")
            t0 = time.perf_counter()  # startup does not count against the job
        self.conn.send(job)
        if not self.conn.poll(job.timeout_s):
            pid = self.proc.pid
            self.stop(kill=True)
            return result("timeout", reason=f"no result within {job.timeout_s:g} s; worker pid {pid} killed")
        try:
            reply = self.conn.recv()
        except (EOFError, OSError):
            self.proc.join(5.0)
            why = _exit_reason(self.proc.exitcode)
            self.stop(kill=True)
            return result("crashed", reason=why, error_type="WorkerDied")
        if reply[0] == "ok":
            return result("ok", value=reply[1])
        status, etype, message, detail = reply
        if status == "crashed":
            self.stop(kill=True)  # the CUDA context may be poisoned: never reuse it
        return result(status, reason=f"{etype}: {message}" if message else etype, error_type=etype, detail=detail)


class WorkerPool:
    """One isolated worker process per device; jobs go to whichever worker is free.

    Use as a context manager, or call close(). `run` blocks for one job;
    `map` runs many in parallel across the devices and keeps their order.
    """

    def __init__(
        self,
        devices: Sequence[Device] = (None,),
        startup_timeout_s: float = 120.0,
        start_method: str = "subprocess",
    ) -> None:
        if not devices:
            raise ValueError("WorkerPool needs at least one device")
        ctx = None if start_method == "subprocess" else mp.get_context(start_method)
        self._workers = [_Worker(ctx, d, startup_timeout_s) for d in devices]
        self._free: queue.Queue[_Worker] = queue.Queue()
        for w in self._workers:
            self._free.put(w)
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._closed = False

    @property
    def devices(self) -> tuple[Device, ...]:
        return tuple(w.device for w in self._workers)

    def run(self, job: Job) -> JobResult:
        """Run one job on the next free worker and wait for its result."""
        if self._closed:
            raise RuntimeError("WorkerPool is closed")
        worker = self._free.get()
        try:
            return worker.run(job)
        finally:
            self._free.put(worker)

    def submit(self, job: Job) -> Future[JobResult]:
        """Queue a job; its Future resolves to a JobResult (never raises for job failures)."""
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(len(self._workers), thread_name_prefix="timing-worker")
            return self._executor.submit(self.run, job)

    def map(self, jobs: Iterable[Job]) -> list[JobResult]:
        """Run jobs in parallel over the workers; results in job order."""
        futures = [self.submit(j) for j in jobs]
        return [f.result() for f in futures]

    def close(self, kill: bool = False) -> None:
        """Stop every worker: politely, then by force; at once with `kill` (a run ending on a
        signal has no time for a worker's goodbye)."""
        if self._closed:
            return
        self._closed = True
        if self._executor is not None:
            self._executor.shutdown(wait=not kill, cancel_futures=kill)
        for w in self._workers:
            w.stop(kill=kill)

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.close(kill=exc_type is not None)
