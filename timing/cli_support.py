"""The pieces behind `reorder check` and `reorder time`, kept out of the argument wiring.

Everything that can be decided on the CPU is decided here before a worker starts:
the spec is validated against the parameters of the kernel in *both* cubins (a spec
that disagrees with the cubin launches garbage arguments, and the fault is then
blamed on the candidate), and the GPU is probed in a throwaway subprocess (so the
parent never initialises CUDA, and a machine without cupy or a device gets one line
and exit 2, not a worker that dies). The GPU work itself runs in a timing.worker
child, and its JobResult is turned into printable lines plus an exit code by pure
functions that the CPU tests drive with hand-built results.

Exit codes (reorder.base.exitcodes): 0 identical (and timed), 1 byte mismatch, 2 unusable
input (a ReorderError raised inside the job, other than a GPU failure), 3 the job crashed or
timed out or the GPU failed, 4 no GPU.
"""

from __future__ import annotations

import dataclasses
import math
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reorder.base import exitcodes
from reorder.base.errors import InputError, NoGpuError
from reorder.binary.cubin import Kernel, read_cubin
from reorder.binary.kernelchoice import choose_kernel
from timing.spec import LaunchSpec, check_against_params, load_spec
from timing.worker import Device, Job, JobResult, WorkerPool

EXIT_OK = exitcodes.OK
EXIT_MISMATCH = exitcodes.VERDICT
EXIT_INPUT = exitcodes.INPUT
EXIT_FAULT = exitcodes.CRASH
EXIT_NO_GPU = exitcodes.NO_GPU
# a ReorderError raised inside a job keeps its class's exit code (reorder.base.exitcodes)
_JOB_ERROR_EXIT = {"GpuError": EXIT_FAULT, "NoGpuError": EXIT_NO_GPU}
PROBE_TIMEOUT_S = 60.0  # importing cupy cold plus cuInit; a hung driver must not hang the CLI
CHECK_TIMEOUT_S = 120.0
TIME_SETUP_S = 120.0  # graph capture, loading and checking come on top of the timing budget

_PROBE = """
try:
    import cupy
except Exception as e:
    print(f"cupy not importable ({type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''})")
    raise SystemExit(0)
try:
    n = cupy.cuda.runtime.getDeviceCount()
except Exception as e:
    print(f"no usable CUDA device ({type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''})")
    raise SystemExit(0)
print("ok" if n > 0 else "no CUDA device visible")
"""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a command prints and returns for one job. Lines go to stderr when exit_code >= 2."""

    lines: tuple[str, ...]
    exit_code: int

    @property
    def to_stderr(self) -> bool:
        """Failures to run (bad input, no GPU, crash, timeout) are errors, not results."""
        return self.exit_code >= EXIT_INPUT


# ---------------------------------------------------------------- CPU-side validation


def entry_kernel(cubin_path: str | Path, name: str, given: str | None = None, where: str = "") -> Kernel:
    """The kernel a spec (`name`, from `where`) names in a cubin, refused (InputError naming it)
    if absent, not launchable, or not the one --kernel (`given`) names (reorder.binary.kernelchoice)."""
    kernel = choose_kernel(read_cubin(cubin_path), given, name, where).kernel
    if not kernel.is_entry:
        raise InputError(f"{cubin_path}: '{kernel.name}' is a device function, not a launchable kernel")
    return kernel


def param_sizes(kernel: Kernel) -> list[int]:
    """Parameter byte sizes in ordinal order (KPARAM_INFO records are not stored sorted)."""
    return [p.size for p in sorted(kernel.params, key=lambda p: p.ordinal)]


def validated_spec(spec_path: str | Path, cubins: Sequence[str | Path], kernel: str | None = None) -> LaunchSpec:
    """Load a spec and check it against the kernel in every cubin; SpecError/InputError otherwise.

    `kernel` (--kernel) must name the kernel the spec names, never another: a spec describes
    one kernel's parameters, and timing another kernel with them launches garbage arguments.
    """
    return checked_spec(load_spec(spec_path), cubins, kernel)


def checked_spec(spec: LaunchSpec, cubins: Sequence[str | Path], kernel: str | None = None) -> LaunchSpec:
    """A spec checked against its kernel's parameter table (sizes and C-layout offsets) in
    every cubin, carrying the kernel's symbol: a spec may name a kernel by its C++ signature
    or a unique part of it (reorder.binary.names), and the worker loads the kernel by symbol."""
    for path in cubins:
        found = entry_kernel(path, spec.name, kernel, str(spec.source or ""))
        if found.name != spec.name:
            spec = dataclasses.replace(spec, name=found.name)
        ordered = sorted(found.params, key=lambda p: p.ordinal)
        check_against_params(spec, [p.size for p in ordered], [p.offset for p in ordered])
    return spec


def require_positive(value: float, option: str) -> float:
    """Refuse a non-positive numeric option up front (a zero budget would time nothing)."""
    if not (value > 0 and math.isfinite(value)):
        raise InputError(f"{option} must be a positive number, got {value:g}")
    return value


# ---------------------------------------------------------------- GPU probe


def gpu_unavailable_reason(timeout_s: float = PROBE_TIMEOUT_S, env: Mapping[str, str] | None = None) -> str:
    """'' when cupy sees a CUDA device, else one line saying why not.

    Probed in a subprocess so that the parent never initialises CUDA (its workers are
    spawned fresh anyway) and a driver that hangs or aborts cannot take the CLI down.
    """
    try:
        done = subprocess.run(
            [sys.executable, "-c", _PROBE],
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout_s,
            env=dict(env) if env is not None else None,
        )
    except subprocess.TimeoutExpired:
        return f"the GPU probe did not answer within {timeout_s:g} s"
    except OSError as e:
        return f"the GPU probe could not start ({e.strerror or e})"
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return f"the GPU probe exited with code {done.returncode}"
    return "" if lines[-1] == "ok" else lines[-1]


def require_gpu(timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Raise NoGpuError (exit 4, one line) unless a CUDA device is usable."""
    reason = gpu_unavailable_reason(timeout_s)
    if reason:
        raise NoGpuError(f"no CUDA GPU available: {reason}")


# ---------------------------------------------------------------- running the job


def worker_device(environ: Mapping[str, str] = os.environ) -> Device:
    """Device 0, unless the user already chose devices with CUDA_VISIBLE_DEVICES.

    A worker bound to 0 would overwrite that choice (it sets CUDA_VISIBLE_DEVICES=0);
    None leaves the environment alone, and cupy then uses the first visible device.
    """
    return None if "CUDA_VISIBLE_DEVICES" in environ else 0


def run_one(job: Job) -> JobResult:
    """Run one job in a fresh isolated worker and return its result (never raises for job failures)."""
    with WorkerPool(devices=[worker_device()]) as pool:
        return pool.run(job)


def failure_outcome(result: JobResult) -> Outcome | None:
    """The outcome of a job that did not return (error/crashed/timeout); None when it did."""
    if result.status == "ok":
        return None
    if result.status == "error":
        return Outcome((f"error: {result.reason}",), _JOB_ERROR_EXIT.get(result.error_type, EXIT_INPUT))
    if result.status == "timeout":
        return Outcome((f"timeout: {result.reason}",), EXIT_FAULT)
    return Outcome((f"crashed: {result.reason}",), EXIT_FAULT)


def mismatch_outcome(row: Mapping[str, Any]) -> Outcome | None:
    """Exit 1 with the first differing element when the check failed; None when it passed."""
    if row.get("check") != "MISMATCH":
        return None
    return Outcome((f"MISMATCH: {row.get('check_detail', '')}",), EXIT_MISMATCH)


def check_outcome(result: JobResult) -> Outcome:
    """Turn a timing.evaluate.check_job result into one line and an exit code."""
    failed = failure_outcome(result)
    if failed is not None:
        return failed
    row = result.value
    return mismatch_outcome(row) or Outcome((f"identical on {row['check_sets']} input sets",), EXIT_OK)


def format_clock(mhz: float | None) -> str:
    """Median SM clock, or 'unknown' when NVML could not be read (nan)."""
    if mhz is None or not math.isfinite(mhz):
        return "unknown"
    return f"{mhz:.0f} MHz"


def timing_lines(row: Mapping[str, Any]) -> tuple[str, ...]:
    """The report of a timed pair: check, times, ratio with CI and verdict, conditions."""
    if row["check"] == "same-file":
        check = "check: skipped (A/A: the same cubin twice)"
    else:
        check = f"check: identical on {row['check_sets']} input sets"
    verdict = "indistinguishable" if row["verdict"] == "indistinguishable" else f"B is {row['verdict']}"
    dropped = f" ({row['dropped_rounds']} dropped for a low SM clock)" if row.get("dropped_rounds") else ""
    return (  # the ratio last: the command's result line (reorder.cli.lastline)
        check,
        f"A: {row['a_us']:.3f} us per launch",
        f"B: {row['b_us']:.3f} us per launch",
        (
            f"method {row['method']}, L2 {row['l2']}, SM clock {format_clock(row.get('clock_mhz'))}, "
            f"{row['rounds']} rounds{dropped}, stopped on {row['stopped']}"
        ),
        (
            f"ratio B/A: {row['ratio']:.4f}  95% CI [{row['ci_low']:.4f}, {row['ci_high']:.4f}] "
            f"(+/-{row['ci_half_width_pct']:.2f}%)  verdict: {verdict}"
        ),
    )


def time_outcome(result: JobResult) -> Outcome:
    """Turn a timing.evaluate.check_and_time_job result into report lines and an exit code."""
    failed = failure_outcome(result)
    if failed is not None:
        return failed
    row = result.value
    return mismatch_outcome(row) or Outcome(timing_lines(row), EXIT_OK)


def emit(outcome: Outcome, command: str) -> int:
    """Print an outcome (results to stdout; failures to stderr, prefixed like other CLI errors)."""
    for line in outcome.lines:
        if outcome.to_stderr:
            print(f"reorder {command}: {line}", file=sys.stderr)
        else:
            print(line)
    return outcome.exit_code
