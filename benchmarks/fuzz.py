"""Seeded fuzzer: mutated cubins, PTX files and launch specs (flat, and struct: [[type]],
struct parameters, descriptor [[buffer]]s, zeros counters) and kernel names (C++ signatures,
parts of them, symbols) through every command that reads them, counting exit codes,
tracebacks, hangs, signals and outputs left half-written.

    python -m benchmarks.fuzz --cases 2000 --seed 0 [--workers 2] [--out benchmarks/results/DATE_fuzz]
    python -m benchmarks.fuzz --minutes 60 --seed 5 --workers 32 --mix elf=0.3,nvinfo=0.3,cubin=0.4

Input families: random mutations (`cubin`, `spec`, `struct`, `name`, `ptx`: benchmarks.fuzz_inputs)
and structure-aware ones that break one rule of the reader on purpose (`elf`: section headers
and symbols; `nvinfo`: .nv.info records; `dtype`: what a spec asks CuPy to draw and its size:
benchmarks.fuzz_structure). A structure-aware mutant is corrupt by construction, so every
command must refuse it: exit 0 or a verdict of 1 on it is a failure (accepted_corrupt).

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
signal, undrawable, accepted_corrupt, half_written (a command that failed left its output, or
any left a temporary file), running_left (a study with a trial still RUNNING after its command
ended), other exit codes.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchmarks.fuzz_cases import (  # noqa: F401  (re-exported: the tests and callers name them here)
    CUBINS,
    FAMILY_WEIGHTS,
    KERNELS,
    ROOT,
    STRUCTURED,
    Case,
    Planner,
    _drawn,
    classify,
    mixed,
    run_case,
    weighted,
)

# accepted_corrupt: a structure-aware mutant (corrupt by construction) not refused;
# half_written: an output or a temporary file left by a command that did not succeed
# running_left: a trial still RUNNING in a study after the command that ran it ended
BAD = (
    "empty",
    "messy",
    "traceback",
    "hang",
    "signal",
    "undrawable",
    "accepted_corrupt",
    "half_written",
    "running_left",
)
CACHE_MUTANTS = 200  # a worker empties its listing cache after this many mutants (disk stays small)


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
        "exit 0 with nothing, exit 2 without exactly one error line, specs accepted but not drawable, "
        "corrupt-by-construction inputs not refused, outputs or temporary files left by a failed command, "
        "trials left RUNNING)."
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
        "timeout_is": f"CPU seconds of a worker and its children (or {WALL_FACTOR}x that on the clock)",
        "mix": dict(weighted(getattr(args, "run_families", ()))),
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
    parser.add_argument(
        "--mix",
        metavar="FAMILY=W,...",
        help="input families and their weights, e.g. elf=0.3,nvinfo=0.3,cubin=0.2 (default: "
        + ",".join(f"{f}={w:g}" for f, w in FAMILY_WEIGHTS)
        + ")",
    )
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
    try:
        families = mixed(families, args.mix)
    except ValueError as exc:
        parser.error(f"--mix: {exc}")
    args.run_families = families
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
