"""Seeded fuzzer: mutated cubins, PTX files and launch specs (flat, and struct: [[type]],
struct parameters, descriptor [[buffer]]s, zeros counters) and kernel names (C++ signatures,
parts of them, symbols) through every command that reads them, counting exit codes,
tracebacks, hangs and signals.

    python -m benchmarks.fuzz --cases 2000 --seed 0 [--workers 2] [--out benchmarks/results]
    python -m benchmarks.fuzz --minutes 60 --seed 5 --workers 32 --out benchmarks/results

A *mutant* (one mutated input, reproduced from `seed/index` alone) is run through each command
that reads that kind of input: a case is one (mutant, command). Cases run in worker processes
that call `reorder.cli.main.main` in-process (no interpreter start per case), so a case costs
what the command costs: a few milliseconds when the input is refused, nvdisasm's half second
when it is not. The supervisor reads one line per case from each worker: a worker silent while
it (with its child processes) spends `--timeout` CPU-seconds, or silent for WALL_FACTOR times as
long on the wall clock (a case blocked without computing), is killed and its case counted as a
hang: on a busy machine a case gets a fraction of a core, and a wall-clock bound alone counts
that as a hang. A worker that dies counts its case as a signal. Without a GPU, `check`, `time`
and `probe` stop at the GPU probe (stubbed to answer "no GPU" at once); a spec they accept is
also drawn (`timing.inputs.draw_inputs`) and its structs built on a host-memory stand-in for
cupy, to find specs that validate but cannot be drawn or built. Without ptxas the PTX cases are
skipped and the result says so; without nvdisasm the fuzzer refuses to start.

Outcomes: ok (exit 0 with output), verdict (exit 1 with a report), refused (exit 2, one error
line), no-gpu (exit 4, one error line: a command that got as far as the GPU), and the failures:
empty (exit 0 with nothing), messy (exit 2 or 4 without exactly one error line), traceback, hang,
signal, undrawable, other exit codes.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import math
import os
import random
import select
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "benchmarks" / "kernels"
# (cubin, launch spec of one of its kernels or None): small and large, sm_80 and sm_90, with CALLs
CUBINS = (
    ("cubin/gather_histogram.cubin", "specs/gather_histogram.toml"),
    ("cubin/rmsnorm.cubin", "specs/rmsnorm_triton_style.toml"),
    ("cubin/spmv_csr.cubin", "specs/spmv_csr_vector.toml"),
    ("cubin/particlefilter.cubin", "specs/normalize_weights.toml"),
    ("../../tests/corpus/cubin/sm_80/elementwise.cubin", None),
    ("../../tests/corpus/cubin/sm_90/calls.cubin", None),
    ("../../tests/corpus/cubin/sm_90/control.cubin", None),
    ("structs/cubin/kselect_tensor.cubin", "structs/specs/warp_select_tensor_k32.toml"),
    ("structs/cubin/cfo_ta_descr.cubin", "structs/specs/cfo_ta_descr.toml"),
    ("structs/cubin/last_block.cubin", "structs/specs/last_block_sum_zeros.toml"),
)
# struct-parameter kernels (C++ names, [[type]], descriptor [[buffer]]s, zeros counters)
STRUCTS = tuple((c, s) for c, s in CUBINS if c.startswith("structs/"))
PTX = ("../../tests/corpus/ptx/sm_90/elementwise.ptx", "../../tests/corpus/triton/sm_90/rmsnorm.ptx")
FAMILY_WEIGHTS = (("cubin", 0.52), ("spec", 0.20), ("struct", 0.12), ("name", 0.08), ("ptx", 0.08))
BAD = ("empty", "messy", "traceback", "hang", "signal", "undrawable")
# Commands that transform a kernel (stalls, batch-loads, optimize) run only on bases whose kernels
# have at most this many instructions: on the 5,696 of warpSelect<..., 128, 4, 128> an unmutated
# `reorder stalls` takes 34 s of CPU (80 s before the verifier's incremental checks), past the
# hang bound for reasons no mutation causes.
MAX_TRANSFORMED = 1000
# optimize's options in every case: one trial, a short search, and no pruning rounds (on
# cfo_ta_descr's 688 instructions they took 34 s after a 4 s search: past the hang bound for
# reasons no mutation causes; the rounds read no input)
OPTIMIZE = ("--device", "cpu", "--budget", "1", "--jobs", "1", "--time", "10s", "--no-contributions")
DRAW_LIMIT_BYTES = 96 * 2**20  # specs that validate are drawn (and their structs built) when no larger than this
CACHE_MUTANTS = 200  # a worker empties its listing cache after this many mutants (disk stays small)


@dataclass(frozen=True)
class Case:
    mutant: int
    family: str
    kind: str  # the mutation
    base: str
    command: str
    argv: tuple[str, ...]


@dataclass
class Tally:
    """What a run found: counts by outcome, family, command and mutation, and the bad cases."""

    cases: int = 0
    mutants: int = 0
    seconds: float = 0.0
    outcomes: collections.Counter = field(default_factory=collections.Counter)
    by_family: collections.Counter = field(default_factory=collections.Counter)
    by_command: collections.Counter = field(default_factory=collections.Counter)
    by_kind: collections.Counter = field(default_factory=collections.Counter)
    reasons: collections.Counter = field(default_factory=collections.Counter)  # refusals, paths and numbers elided
    bad: list = field(default_factory=list)

    def add(self, result: dict) -> None:
        self.cases += 1
        outcome = result["outcome"]
        self.outcomes[outcome] += 1
        self.by_family[f"{result['family']} {outcome}"] += 1
        self.by_command[f"{result['command']} {outcome}"] += 1
        self.by_kind[f"{result['family']}:{result['kind']} {outcome}"] += 1
        if outcome == "refused":
            self.reasons[_reason(result["stderr"])] += 1
        if outcome in BAD or outcome.startswith("exit"):
            self.bad.append(result)

    @property
    def failures(self) -> int:
        return len(self.bad)

    def as_dict(self) -> dict:
        out = asdict(self)
        for key in ("outcomes", "by_family", "by_command", "by_kind", "reasons"):
            out[key] = dict(sorted(getattr(self, key).items()))
        return out


def _reason(stderr: str) -> str:
    """A refusal's kind: its error line without the command, paths, names in quotes and numbers."""
    import re

    line = next((x for x in stderr.strip().splitlines() if "error" in x.lower()), stderr.strip()[-120:])
    line = line.split("error: ", 1)[-1]
    line = re.sub(r"(/[\w.+-]+)+", "PATH", line)
    line = re.sub(r"'[^']*'|\"[^\"]*\"", "'X'", line)
    line = re.sub(r"\b(0x[0-9a-f]+|\d+(\.\d+)?(e[+-]?\d+)?)\b", "N", line)
    return line[:110]


# ---------------------------------------------------------------- the plan: mutant index -> cases


class Planner:
    """Turns (seed, mutant index) into the mutant's bytes and its cases; the same everywhere."""

    def __init__(self, seed: int, work: Path, families: tuple[str, ...] = tuple(f for f, _ in FAMILY_WEIGHTS)) -> None:
        from benchmarks.fuzz_inputs import Base, cubin_base

        self.seed, self.work = seed, work
        self.weights = [(f, w) for f, w in FAMILY_WEIGHTS if f in families]
        self.cubins = [(cubin_base(c, (KERNELS / c).read_bytes()), (KERNELS / s) if s else None) for c, s in CUBINS]
        self.specs = [(KERNELS / c, Base(s, (KERNELS / s).read_bytes())) for c, s in CUBINS if s]
        self.structs = [(KERNELS / c, Base(s, (KERNELS / s).read_bytes())) for c, s in STRUCTS]
        self.ptx = [Base(p, (KERNELS / p).read_bytes()) for p in PTX]
        self._names: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}

    def cases(self, index: int) -> tuple[Path, list[Case]]:
        """Write mutant `index` into its folder; its cases."""
        rng = random.Random(f"{self.seed}/{index}")
        family = rng.choices([f for f, _ in self.weights], [w for _, w in self.weights])[0]
        folder = self.work / f"m{index}"
        folder.mkdir(parents=True, exist_ok=True)
        return folder, getattr(self, f"_{family}")(index, rng, folder)

    def _cubin(self, index: int, rng: random.Random, folder: Path) -> list[Case]:
        from benchmarks.fuzz_inputs import CUBIN_MUTATIONS

        base, spec = rng.choice(self.cubins)
        kind = rng.choice(sorted(CUBIN_MUTATIONS))
        path = folder / "m.cubin"
        path.write_bytes(CUBIN_MUTATIONS[kind](base, rng))
        original = str(KERNELS / base.name)
        m, out = str(path), str(folder / "out.cubin")
        runs = [
            ("disasm", m),
            ("disasm", m, "--json"),
            ("verify", m),
            ("verify", m, "--against", original),
            ("diff", original, m),
        ]
        runs += [("check", original, m, "--launch", str(spec))] if spec else []
        small = _small(base)
        # a command that transforms one kernel needs it named on a cubin of several: the base's first
        k = ("--kernel", next(k.name for k in base.cubin.kernels if k.is_entry))
        runs += [("stalls", m, "-o", out, *k)] if small and rng.random() < 0.12 else []
        runs += [("batch-loads", m, "-o", out, "--no-slices", *k)] if small and rng.random() < 0.04 else []
        runs += [("batch-loads", "--assume-noalias", m, "-o", out, *k)] if small and rng.random() < 0.01 else []
        runs += [("optimize", m, "-o", out, *OPTIMIZE, *k)] if small and rng.random() < 0.003 else []
        return [Case(index, "cubin", kind, base.name, r[0], r) for r in runs]

    def _spec(self, index: int, rng: random.Random, folder: Path) -> list[Case]:
        from benchmarks.fuzz_inputs import spec_mutation

        return self._spec_cases(index, rng, folder, "spec", self.specs, spec_mutation, probe=0.05, optimize=0.005)

    def _struct(self, index: int, rng: random.Random, folder: Path) -> list[Case]:
        from benchmarks.fuzz_inputs import struct_spec_mutation

        return self._spec_cases(
            index, rng, folder, "struct", self.structs, struct_spec_mutation, probe=0.03, optimize=0.01
        )

    def _spec_cases(
        self, index: int, rng: random.Random, folder: Path, family: str, bases, mutate, probe: float, optimize: float
    ) -> list[Case]:
        """A mutated launch spec (flat or struct) of one base, through check and time always,
        probe and optimize with the given odds."""
        cubin, base = rng.choice(bases)
        kind, text = mutate(base, rng)
        path = folder / "spec.toml"
        path.write_bytes(text)
        c, s = str(cubin), str(path)
        runs = [("check", c, c, "--launch", s), ("time", c, c, "--launch", s)]
        runs += (
            [("probe", c, "--launch", s, "--build-only", str(folder / "probe"), "--range", "0-20")]
            if rng.random() < probe
            else []
        )
        runs += (
            [("optimize", c, "-o", str(folder / "out.cubin"), "--launch", s, *OPTIMIZE)]
            if rng.random() < optimize and self._small_path(cubin)
            else []
        )
        return [Case(index, family, kind, base.name, r[0], r) for r in runs]

    def _name(self, index: int, rng: random.Random, folder: Path) -> list[Case]:
        """Unmutated cubins, C++ (struct kernels, twice as often) or plain, named every way."""
        from benchmarks.fuzz_inputs import name_query

        base, spec = rng.choice(self.cubins + [x for x in self.cubins if x[0].name.startswith("structs/")])
        kind, query = name_query(*self._symbols(base), rng)
        flag = ("--kernel", query) if rng.random() < 0.7 else (f"--kernel={query}",)
        c, out = str(KERNELS / base.name), str(folder / "out.cubin")
        runs = [("disasm", c, *flag), ("verify", c, *flag), ("diff", c, c, *flag)]
        runs += (
            [("check", c, c, "--launch", str(spec), *flag), ("time", c, c, "--launch", str(spec), *flag)]
            if spec
            else []
        )
        small = _small(base)
        runs += [("stalls", c, "-o", out, *flag)] if small and rng.random() < 0.1 else []
        runs += [("optimize", c, "-o", out, *OPTIMIZE, *flag)] if small and rng.random() < 0.01 else []
        return [Case(index, "name", kind, base.name, r[0], r) for r in runs]

    def _small_path(self, cubin: Path) -> bool:
        """Whether optimize may run on this cubin within the hang bound (MAX_TRANSFORMED): the
        spec and struct families drew it on kselect_tensor too, where one unmutated trial takes
        66 s of CPU (seed 6 counted it as a hang)."""
        return _small(next(b for b, _ in self.cubins if KERNELS / b.name == cubin))

    def _symbols(self, base) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(symbols, demangled) of a base cubin's kernels, asked once."""
        from reorder.binary.names import demangle

        if base.name not in self._names:
            symbols = tuple(k.name for k in base.cubin.kernels)
            self._names[base.name] = (symbols, demangle(symbols))
        return self._names[base.name]

    def _ptx(self, index: int, rng: random.Random, folder: Path) -> list[Case]:
        from benchmarks.fuzz_inputs import ptx_mutation

        base = rng.choice(self.ptx)
        kind, text = ptx_mutation(base, rng)
        path = folder / "m.ptx"
        path.write_bytes(text)
        m = str(path)
        runs = [("disasm", m), ("verify", m)]
        runs += [("stalls", m, "-o", str(folder / "out.cubin"))] if rng.random() < 0.1 else []
        return [Case(index, "ptx", kind, base.name, r[0], r) for r in runs]


# ---------------------------------------------------------------- one case, in a worker


def run_case(case: Case) -> dict:
    """Run one case through `reorder.cli.main.main` here and classify what it did."""
    from reorder.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    start = time.monotonic()
    detail = ""
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(case.argv))
    except SystemExit as exc:  # argparse refusing the arguments
        code = exc.code if isinstance(exc.code, int) else 2
    except BaseException as exc:  # noqa: BLE001 - an escaped exception is what the fuzzer counts
        import traceback

        code, detail = None, "".join(traceback.format_exception(exc))[-2000:]
    outcome = classify(case, code, out.getvalue(), err.getvalue()) if code is not None else "traceback"
    if (
        outcome in ("refused", "verdict", "no-gpu")
        and case.family in ("spec", "struct", "name")
        and case.command == "check"
    ):
        outcome = _drawn(case) or outcome
    stderr = err.getvalue()
    return {
        **asdict(case),
        "exit": code,
        "outcome": outcome,
        "seconds": round(time.monotonic() - start, 3),
        "stderr": (detail or stderr)[-600:],
    }


def classify(case: Case, code: int, stdout: str, stderr: str) -> str:
    if "Traceback (most recent call last)" in stderr:
        return "traceback"
    if code == 0:
        wrote = "-o" in case.argv and Path(case.argv[case.argv.index("-o") + 1]).is_file()
        return "ok" if (stdout.strip() or wrote or "--build-only" in case.argv) else "empty"
    if code == 1:
        return "verdict"
    if code in (2, 4):
        errors = [line for line in stderr.strip().splitlines() if "error" in line.lower()]
        return ("refused" if code == 2 else "no-gpu") if len(errors) == 1 else "messy"
    return f"exit{code}"


def _drawn(case: Case) -> str:
    """'' when the spec is refused or its inputs can be drawn (and its structs built);
    'undrawable' when a spec the CLI accepted raises anything but a ReorderError while its
    inputs are drawn, its struct buffers and parameters packed or its zeros copies made."""
    from reorder.base.errors import ReorderError
    from timing.cli_support import validated_spec
    from timing.inputs import draw_inputs

    kernel = next((a.split("=", 1)[1] for a in case.argv if a.startswith("--kernel=")), None)
    if "--kernel" in case.argv:
        kernel = case.argv[case.argv.index("--kernel") + 1]
    try:
        spec = validated_spec(case.argv[4], [case.argv[1]], kernel)
    except ReorderError:
        return ""
    if sum(p.nbytes for p in spec.buffers) > DRAW_LIMIT_BYTES:
        return ""
    try:
        _materialize(spec, draw_inputs(spec, 0))
    except ReorderError:
        return ""
    except Exception:  # noqa: BLE001
        return "undrawable"
    return ""


def _materialize(spec, host: dict) -> None:
    """What the GPU worker does with drawn inputs before a launch, on a host-memory stand-in
    for cupy (tests/fake_device.py): struct buffers filled, struct parameters packed with
    the buffers' addresses, per-launch copies of zeros counters."""
    if not (spec.types or spec.extra):
        return
    import numpy as np

    from tests import fake_device
    from timing.devicestructs import build_structs, launch_copies
    from timing.gpu import DeviceSet

    try:
        dev = DeviceSet({k: fake_device.array(v) if isinstance(v, np.ndarray) else v for k, v in host.items()})
        build_structs(fake_device, spec, dev)
        launch_copies(fake_device, spec, dev, 3)
    finally:
        fake_device.ALLOCATIONS.clear()


def _small(base) -> bool:
    return max(len(k.text) for k in base.cubin.kernels) <= 16 * MAX_TRANSFORMED


class _OneListingPerMutant:
    """nvdisasm's answer for one cubin, listing or refusal, asked once for all of a mutant's
    commands (the disk cache shares listings between processes; a refusal it does not keep,
    and nvdisasm's half second per refusal would be paid once per command)."""

    def __init__(self) -> None:
        from reorder.sass import model as sass

        self.real, self.memo = sass.disassemble, {}
        sass.disassemble = self

    def __call__(self, data: bytes):
        import copy
        import hashlib

        from reorder.base.errors import ReorderError

        key = hashlib.sha256(data).digest()
        if key not in self.memo:
            try:
                self.memo[key] = (True, self.real(data))
            except ReorderError as exc:
                self.memo[key] = (False, exc)
        ok, value = self.memo[key]
        if ok:
            return value
        raise copy.copy(value).with_traceback(None)

    def forget(self) -> None:
        self.memo.clear()


def worker(seed: int, work: Path, families: tuple[str, ...]) -> None:
    """Read mutant indices on stdin; for each case print a 'start' line and a result line."""
    import timing.cli_support as cs

    cs.gpu_unavailable_reason = lambda *a, **k: "no GPU (fuzz: the probe is stubbed)"
    listings = _OneListingPerMutant()
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # nothing but the protocol reaches the supervisor
    planner = Planner(seed, work, families)
    for done, line in enumerate(sys.stdin, 1):
        index = int(line)
        folder, cases = planner.cases(index)
        for n, case in enumerate(cases):
            protocol.write(
                json.dumps(
                    {
                        "start": index,
                        "n": n,
                        "family": case.family,
                        "kind": case.kind,
                        "base": case.base,
                        "command": case.command,
                        "argv": case.argv,
                    }
                )
                + "\n"
            )
            protocol.write(json.dumps(run_case(case)) + "\n")
        protocol.write(json.dumps({"done": index}) + "\n")
        listings.forget()
        shutil.rmtree(folder, ignore_errors=True)
        if done % CACHE_MUTANTS == 0:  # this worker's own count: with 32 workers, index % N came to each rarely
            shutil.rmtree(Path(os.environ["REORDER_CACHE"]), ignore_errors=True)  # mutants' listings


# ---------------------------------------------------------------- the supervisor


def worker_env(work: Path, environ) -> dict:
    """A worker's environment: the repository first on PYTHONPATH, then whatever the caller's
    held (on the GPU machine the wheels' site folder: replacing it made every worker die at
    import, exit 1, 3,693 times in one run); its own cache; no GPU."""
    path = os.pathsep.join([str(ROOT), *filter(None, [environ.get("PYTHONPATH")])])
    return dict(environ, PYTHONPATH=path, REORDER_CACHE=str(work / "cache"), CUDA_VISIBLE_DEVICES="")


WALL_FACTOR = 10  # a silent worker using no CPU is a hang after this many times --timeout of wall time


def tree_cpu_seconds(pid: int) -> float | None:
    """CPU-seconds used by process `pid`, its children it has waited for and its live
    descendants (nvdisasm, ptxas), from /proc; None where there is no /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    used: dict[int, float] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        child = int(entry)
        parents[child] = int(fields[1])
        used[child] = (int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])) / tick
    if pid not in used:
        return None
    total, frontier = 0.0, {pid}
    while frontier:
        total += sum(used[p] for p in frontier)
        frontier = {c for c, parent in parents.items() if parent in frontier}
    return total


class _Worker:
    """One worker process, the mutant it is on and the case in flight."""

    def __init__(self, seed: int, work: Path, timeout: float, families: tuple[str, ...]) -> None:
        self.seed, self.work, self.timeout, self.families = seed, work, timeout, families
        self.mutant: int | None = None
        self.flight: dict | None = None
        self.since = time.monotonic()
        self.pending = b""  # bytes read past the last complete line
        self.proc = self._start()
        self.cpu_since = self.cpu()

    def _start(self) -> subprocess.Popen:
        with open(self.stderr_path, "ab") as stderr:
            return subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "benchmarks.fuzz",
                    "--worker",
                    "--seed",
                    str(self.seed),
                    "--work",
                    str(self.work),
                    "--families",
                    ",".join(self.families),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=worker_env(self.work, os.environ),
                cwd=self.work,
                bufsize=0,
            )

    @property
    def stderr_path(self) -> Path:
        return self.work / "worker-stderr.log"

    def last_words(self) -> str:
        """The last line a dead worker wrote to stderr (why it died), or ''."""
        try:
            lines = self.stderr_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return lines[-1][-200:] if lines else ""

    def cpu(self) -> float:
        """CPU-seconds the worker and its children have used so far (0 without /proc)."""
        return tree_cpu_seconds(self.proc.pid) or 0.0

    def heard(self) -> None:
        """The worker spoke: its silence (wall and CPU) is counted from now."""
        self.since, self.cpu_since = time.monotonic(), self.cpu()

    def hung(self) -> bool:
        """Silent past the bound: `timeout` CPU-seconds, or WALL_FACTOR x `timeout` of wall time
        (wall time alone where /proc cannot tell the CPU time)."""
        wall = time.monotonic() - self.since
        cpu = tree_cpu_seconds(self.proc.pid)
        if cpu is None:
            return wall > self.timeout
        return cpu - self.cpu_since > self.timeout or wall > WALL_FACTOR * self.timeout

    def give(self, index: int | None) -> None:
        self.mutant, self.flight = index, None
        self.heard()
        if index is not None:
            self.proc.stdin.write(f"{index}\n".encode())

    def lines(self) -> list[str] | None:
        """The complete lines the worker has written (read without blocking: select said so);
        None at end of file."""
        chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
        if not chunk:
            return None
        *done, self.pending = (self.pending + chunk).split(b"\n")
        return [line.decode() for line in done]

    def restart(self) -> None:
        self.stop()
        self.proc, self.flight, self.pending = self._start(), None, b""
        self.heard()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def families_here() -> tuple[tuple[str, ...], list[str]]:
    """The input families this machine can run, and a line for each one it cannot: PTX
    needs a ptxas (nvcc's, the CUDA wheel's or Triton's); without one the PTX cases are
    skipped, and said to be. Without nvdisasm nothing meaningful runs: an InputError."""
    from reorder.base.errors import InputError
    from reorder.binary.tools import have_tool

    if not have_tool("nvdisasm"):
        raise InputError("no nvdisasm: pip install 'nvidia-cuda-nvdisasm>=13.5.37' (every cubin case needs it)")
    families, notes = tuple(f for f, _ in FAMILY_WEIGHTS), []
    if not have_tool("ptxas"):
        families = tuple(f for f in families if f != "ptx")
        notes.append(
            "PTX cases skipped: no ptxas here (install the CUDA toolkit, the nvidia-cuda-nvcc wheel or Triton)"
        )
    return families, notes


def run(
    cases: int,
    seed: int = 0,
    workers: int = 1,
    timeout: float = 30.0,
    work: Path | None = None,
    progress=None,
    seconds: float = float("inf"),
    first: int = 0,
    families: tuple[str, ...] | None = None,
) -> Tally:
    """Run mutants first, first + 1, ... until at least `cases` cases are done (or `seconds`
    have passed: no mutant is started after that); the tally. `families` defaults to what
    this machine can run (families_here)."""
    families = families or families_here()[0]
    own = work is None
    work = Path(tempfile.mkdtemp(prefix="reorder-fuzz-")) if own else work
    tally, start, next_index = Tally(), time.monotonic(), first
    pool: list[_Worker] = []
    try:
        for k in range(workers):
            (work / f"w{k}").mkdir(parents=True, exist_ok=True)
            pool.append(_Worker(seed, work / f"w{k}", timeout, families))
        for w in pool:
            w.give(next_index)
            next_index += 1
        while any(w.mutant is not None for w in pool):
            for w in _wait(pool, tally):
                more = tally.cases < cases and time.monotonic() - start < seconds
                w.give(next_index if more else None)
                next_index += 1
            if progress:
                progress(tally, time.monotonic() - start)
    finally:
        for w in pool:
            w.stop()
        if own:
            shutil.rmtree(work, ignore_errors=True)
    tally.seconds = round(time.monotonic() - start, 1)
    return tally


def _wait(pool: list[_Worker], tally: Tally) -> list[_Worker]:
    """Read what the workers say for up to a second; the workers that are done with their
    mutant (a hung or dead one is replaced by a fresh process first)."""
    finished = []
    streams = {w.proc.stdout: w for w in pool if w.mutant is not None}
    readable, _, _ = select.select(list(streams), [], [], 1.0)
    for stream in readable:
        w = streams[stream]
        lines = w.lines()
        if lines is None:
            code = w.proc.wait()
            words = w.last_words()
            _lost(
                w,
                tally,
                "signal" if code < 0 else f"exit-worker{code}",
                f"worker exited with {code}" + (f": {words}" if words else ""),
            )
            finished.append(w)
            continue
        w.heard()
        for line in lines:
            message = json.loads(line)
            if "start" in message:
                w.flight = message
            elif "done" in message:
                finished.append(w)
            else:
                tally.add(message)
                w.flight = None
    for w in pool:
        if w.mutant is not None and w not in finished and w.hung():
            _lost(
                w,
                tally,
                "hang",
                f"no answer within {w.timeout:g} CPU-s (or {WALL_FACTOR * w.timeout:g} s of wall time)",
            )
            finished.append(w)
    tally.mutants += len(finished)
    return finished


def _lost(w: _Worker, tally: Tally, outcome: str, why: str) -> None:
    """Count the case in flight as `outcome` and give the slot a fresh worker process."""
    flight = w.flight or {"family": "?", "kind": "?", "base": "?", "command": "(between cases)", "argv": []}
    tally.add(
        {
            "mutant": w.mutant,
            **{k: flight[k] for k in ("family", "kind", "base", "command", "argv")},
            "exit": None,
            "outcome": outcome,
            "seconds": None,
            "stderr": why,
        }
    )
    w.restart()


# ---------------------------------------------------------------- reporting


def markdown(tally: Tally, seed: int, commit: str, date: str, note: str = "") -> str:
    """A results page: what ran, the counts by outcome, by input family, command and mutation."""
    bad = sum(tally.outcomes[o] for o in tally.outcomes if o in BAD or o.startswith("exit"))
    summary = (
        f"`python -m benchmarks.fuzz --seed {seed}` at commit {commit}: {tally.cases} cases "
        f"({tally.mutants} mutated inputs, each through every command that reads it) in "
        f"{tally.seconds / 60:.1f} min. **Failures: {bad}** (tracebacks, hangs past the timeout, signals, "
        "exit 0 with nothing, exit 2 without exactly one error line, specs accepted but not drawable)."
    )
    lines = [f"# Fuzzing reorder's commands ({date})", "", summary, ""]
    lines += [note, ""] if note else []
    lines += _table("Outcome", "cases", tally.outcomes)
    lines += _table("Input family, outcome", "cases", tally.by_family)
    lines += _table("Command, outcome", "cases", tally.by_command)
    lines += _table("Mutation, outcome", "cases", tally.by_kind)
    lines += _table(
        "Refusal (paths, names and numbers elided)", "cases", collections.Counter(dict(tally.reasons.most_common(40)))
    )
    if tally.bad:
        lines += (
            ["## Failures", ""]
            + [
                f"- mutant {b['mutant']} {b['command']} ({b['family']}:{b['kind']}): "
                f"{b['outcome']}: {b['stderr'].strip().splitlines()[-1] if b['stderr'] else ''}"
                for b in tally.bad[:50]
            ]
            + [""]
        )
    return "\n".join(lines)


def _table(title: str, unit: str, counts: collections.Counter) -> list[str]:
    rows = [f"| {key} | {n} |" for key, n in sorted(counts.items())]
    return [f"| {title} | {unit} |", "|---|---|", *rows, ""]


def _progress(tally: Tally, elapsed: float) -> None:
    if tally.cases and tally.cases % 500 < 8:
        print(
            f"{tally.cases} cases, {tally.mutants} mutants, {elapsed:.0f} s, {dict(tally.outcomes)}",
            file=sys.stderr,
            flush=True,
        )


def commit_here() -> str:
    """The commit named by REORDER_COMMIT (a frozen export without git, as on the GPU machine),
    else the repository's commit (with '+dirty' when tracked files differ), or '' without git."""
    named = os.environ.get("REORDER_COMMIT", "").strip()
    if named:
        return named
    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
    return head + ("+dirty" if dirty else "")


def machine() -> dict:
    """Where the run ran: python, cores, and the tools the cases reach."""
    import platform

    from reorder.binary.names import find_demangler
    from reorder.binary.tools import find_tool, have_tool, tool_version

    tools = {name: (tool_version(name) if have_tool(name) else "absent") for name in ("nvdisasm", "ptxas")}
    tools["ptxas_path"] = str(find_tool("ptxas")) if have_tool("ptxas") else ""
    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "tools": tools,
        "demangler": find_demangler() or "absent (C++ names match by symbol only)",
    }


def result(tally: Tally, args: argparse.Namespace, commit: str, notes: list[str], started: str) -> dict:
    """The result file's content: what ran where, at which commit, and what it found."""
    return {
        "commit": commit,
        "date": args.date,
        "started": started,
        "seed": args.seed,
        "first_mutant": args.first,
        "workers": args.workers,
        "timeout_s": args.timeout,
        "requested": {"cases": args.cases, "minutes": None if math.isinf(args.minutes) else args.minutes},
        "wall_s": tally.seconds,
        "failures": tally.failures,
        "notes": notes,
        "machine": machine(),
        **tally.as_dict(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cases", type=int, help="run until this many cases are done (default 2000, or no bound with --minutes)"
    )
    parser.add_argument("--minutes", type=float, default=float("inf"), help="start no mutant after this long")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--first", type=int, default=0, help="the first mutant index (disjoint slices of one seed)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes (one per core)")
    parser.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        help="CPU-seconds a case may take (a hang past it; 10x on the wall clock)",
    )
    parser.add_argument("--out", help="folder for the result files: <date>_fuzz_seed<S>.json and .md")
    parser.add_argument("--json", help="write the result (JSON) here")
    parser.add_argument("--markdown", help="write a results page here")
    parser.add_argument("--commit", default="", help="commit named in the results (default: git's, when there)")
    parser.add_argument("--date", default=time.strftime("%Y-%m-%d"))
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    parser.add_argument("--families", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.seed, Path(args.work), tuple(args.families.split(",")))
        return 0
    from reorder.base.errors import ReorderError

    if args.workers < 1 or args.timeout <= 0 or (args.cases is not None and args.cases < 1) or args.minutes <= 0:
        parser.error("--workers, --cases, --minutes and --timeout must be positive")
    args.cases = args.cases or (2000 if math.isinf(args.minutes) else sys.maxsize)
    try:
        families, notes = families_here()
    except ReorderError as exc:
        print(f"benchmarks.fuzz: error: {exc}", file=sys.stderr)
        return 2
    for note in notes:
        print(note, file=sys.stderr)
    commit, started = args.commit or commit_here() or "unknown", time.strftime("%Y-%m-%d %H:%M:%S %Z")
    tally = run(
        args.cases,
        args.seed,
        args.workers,
        args.timeout,
        progress=_progress,
        seconds=args.minutes * 60,
        first=args.first,
        families=families,
    )
    out = result(tally, args, commit, notes, started)
    paths = [Path(args.json)] if args.json else []
    pages = [Path(args.markdown)] if args.markdown else []
    if args.out:
        folder = Path(args.out)
        folder.mkdir(parents=True, exist_ok=True)
        paths.append(folder / f"{args.date}_fuzz_seed{args.seed}.json")
        pages.append(folder / f"{args.date}_fuzz_seed{args.seed}.md")
    for path in paths:
        path.write_text(json.dumps(out, indent=1))
    note = (
        f"{args.workers} worker(s), case timeout {args.timeout:g} s, mutants from {args.first}; python "
        f"{out['machine']['python']} on {out['machine']['cpus']} CPUs; nvdisasm {out['machine']['tools']['nvdisasm']}; "
        f"ptxas {out['machine']['tools']['ptxas']}. " + " ".join(notes)
    )
    for page in pages:
        page.write_text(markdown(tally, args.seed, commit, args.date, note))
    print(
        json.dumps(
            {
                "commit": commit,
                "cases": tally.cases,
                "mutants": tally.mutants,
                "seconds": tally.seconds,
                "outcomes": dict(tally.outcomes),
                "failures": tally.failures,
                "written": [str(p) for p in paths + pages],
            }
        )
    )
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())
