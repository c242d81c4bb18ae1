"""One runner for every GPU study: the command line, the build folder's manifest, the device
(a worker pool on the GPU, or a dry run that walks every step with made-up numbers), the
deadline, the record of rows and the summary.

A study is a `Study` value: what it builds on the CPU (`prepare`, writing a folder the runner
names, or `build`, a command line of its own), what it checks and times on the GPU
(`check_and_time`, given a `Record` it adds rows to), and what it draws (`plot`, the summary
text and any figures). Its summary starts with `summary_head`. The runner does the rest, the same
for every study, so a failing step is a row in OUT/<prefix>_failures.csv and an exit code, not
a traceback, and a study cut by its deadline says what it skipped (`lanes`).

    python -m benchmarks.studies NAME [--dry-run] [--out DIR] [--deadline S] [--build DIR] ...
    python -m benchmarks.studies NAME --prepare [build options]    # the CPU side
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, ClassVar

from reorder.suite.rows import error_line, write_rows

SUITE = Path(__file__).parent.parent / "kernels"
FEW_BLOCKS = 3


def suite_spec_raw(kernel: str, point: dict | None = None, path: Path | None = None) -> dict:
    """The suite's launch spec for `kernel` (or the spec file at `path`) as a table, resized to
    a sweep point and without its sweep (one launch)."""
    import tomllib

    from reorder.suite.sweep import apply_sweep

    raw = tomllib.loads((path or SUITE / "specs" / f"{kernel}.toml").read_text())
    raw = dict(apply_sweep(raw, point) if point else raw)
    raw.pop("grid_sweep", None)
    return raw


def load_suite_spec(kernel: str, point: dict | None = None):
    """The suite's launch spec for `kernel`, resized to a sweep point."""
    from timing.spec import parse_spec

    return parse_spec(suite_spec_raw(kernel, point), kernel)


def write_suite_spec(kernel: str, point: dict | None, path: Path) -> Path:
    """The suite's launch spec for `kernel` at a sweep point written as a TOML file at `path`
    (what `reorder optimize --launch` reads)."""
    from reorder.suite.sweep import spec_toml

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(spec_toml(suite_spec_raw(kernel, point)))
    return path


def copy_report(written: Path, dest: Path, names: Iterable[str] = ("report.md", "trials.csv")) -> None:
    """The files `reorder optimize` left beside its output `written` (in WRITTEN.reorder/)
    that exist, copied into `dest`."""
    import shutil

    dest.mkdir(parents=True, exist_ok=True)
    for name in names:
        src = written.with_suffix(".reorder") / name
        if src.exists():
            shutil.copy(src, dest / name)


def few_blocks(spec):
    """The spec launched with at most FEW_BLOCKS blocks along x (and one along y and z):
    the same buffers, fewer blocks, so elements the launch does not reach keep their
    poison in both kernels and every block runs alone."""
    import dataclasses

    return dataclasses.replace(spec, grid=(min(spec.grid[0], FEW_BLOCKS), 1, 1))


def suite_cubin(kernel: str) -> Path:
    """The suite's cubin that holds `kernel`."""
    from reorder.binary.cubin import read_cubin

    return next(
        p for p in sorted((SUITE / "cubin").glob("*.cubin")) if kernel in {k.name for k in read_cubin(p).kernels}
    )


def commit() -> str:
    """The checkout's short commit, '+dirty' when tracked files differ from it (a record names
    the code that made it)."""
    here = Path(__file__).parent

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], capture_output=True, text=True, cwd=here, check=False).stdout.strip()

    dirty = git("status", "--porcelain", "--untracked-files=no")
    return git("rev-parse", "--short", "HEAD") + ("+dirty" if dirty else "")


def optimize_command(cubin: Path, kernel: str, out: Path, *flags: str, **options: object) -> list[str]:
    """`reorder optimize CUBIN --kernel K -o OUT`, run by this Python, with `flags` (e.g.
    '--no-contributions') and `options` (budget=40 is '--budget 40', candidate_budget=1 is
    '--candidate-budget 1'): the one command line every study that runs the search builds."""
    cmd = [sys.executable, "-m", "reorder", "optimize", str(cubin), "--kernel", kernel, "-o", str(out)]
    for name, value in options.items():
        cmd += [f"--{name.replace('_', '-')}", str(value)]
    return cmd + list(flags)


def summary_head(title: str, stamps: dict, columns: Iterable[str], note: str = "") -> list[str]:
    """A study summary's first lines: the title with the GPU, date and commit, the note (what a
    ratio is), and a Markdown table's header."""
    columns = list(columns)
    head = [f"# {title} ({stamps['gpu']}, {stamps['date']}, built at {stamps['commit']})", ""]
    return [*head, *([note, ""] if note else []), "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]


def ratio_ci(row: dict, digits: int = 4) -> str:
    """'ratio [ci_low, ci_high]' of a timed row, or why it has none."""
    if isinstance(row.get("ratio"), float):
        return f"{row['ratio']:.{digits}f} [{row['ci_low']:.{digits}f}, {row['ci_high']:.{digits}f}]"
    return str(row.get("reason") or "-")


class LiveDevice:
    """Jobs in one isolated worker process on the GPU (a fault costs one job, not the run)."""

    def __init__(self) -> None:
        from timing.cli_support import worker_device
        from timing.worker import WorkerPool

        self.pool = WorkerPool(devices=[worker_device()])

    def close(self) -> None:
        self.pool.close()

    def job(self, fn: Any, *args: Any, timeout_s: float, **kw: Any) -> dict:
        """Run `fn` (a function or an importable 'module:name') in the worker; its result with
        the job's status ('ok', 'timeout', 'crashed', ...)."""
        from timing.evaluate import describe_status
        from timing.worker import Job

        return describe_status(self.pool.run(Job.of(fn, *args, timeout_s=timeout_s, **kw)))

    def gpu_name(self) -> str:
        import cupy

        return cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()


class ProcessDevice(LiveDevice):
    """The device of a study whose GPU work is mostly processes of its own (`reorder optimize`
    runs): its worker starts at the first job, not before, and `release` ends it, so a search
    never shares the GPU with an idle worker's context."""

    def __init__(self) -> None:
        self.pool = None

    def close(self) -> None:
        self.release()

    def release(self) -> None:
        if self.pool is not None:
            self.pool.close()
            self.pool = None

    def job(self, fn: Any, *args: Any, timeout_s: float, **kw: Any) -> dict:
        if self.pool is None:
            LiveDevice.__init__(self)
        return LiveDevice.job(self, fn, *args, timeout_s=timeout_s, **kw)


class DryDevice(LiveDevice):
    """No GPU: every step walked with made-up numbers (never measurements), for tests and for a
    study's rehearsal on the CPU. A study's dry device answers its own calls through `made_up`."""

    def __init__(self) -> None:
        self.pool = None

    def close(self) -> None:
        pass

    def job(self, fn: Any, *args: Any, timeout_s: float, **kw: Any) -> dict:
        raise NotImplementedError(f"a dry run has no worker for {fn}; the study's dry device answers it")

    @staticmethod
    def made_up(key: str, base: float = 0.9, spread: int = 200) -> dict:
        """A ratio drawn from `key` (the same key, the same number) with a CI of +-0.01."""
        r = base + int(hashlib.sha256(key.encode()).hexdigest()[:4], 16) % spread / 1000
        return {"ratio": r, "ci_low": r - 0.01, "ci_high": r + 0.01, "a_us": 10.0, "b_us": 10.0 * r}

    def gpu_name(self) -> str:
        return "none (dry run)"


@dataclasses.dataclass
class Record:
    """The rows of one run, each table written to OUT/<prefix>_<table>.csv as rows come (a run
    cut short keeps what it measured). A study's record subclasses this with its tables as list
    fields; `out`, `deadline` (time.monotonic) and `stamps` (gpu, date, commit) it must have."""

    prefix: ClassVar[str] = "study"
    files: ClassVar[dict[str, str]] = {}  # a table's file when not <prefix>_<table>.csv (a kept name)
    failures: list = dataclasses.field(default_factory=list, kw_only=True)

    def left(self) -> float:
        return self.deadline - time.monotonic()  # type: ignore[attr-defined]

    def add(self, table: str, row: dict) -> None:
        rows = getattr(self, table)
        rows.append({**self.stamps, **row})  # type: ignore[attr-defined]
        write_rows(self.out / self.files.get(table, f"{self.prefix}_{table}.csv"), rows)  # type: ignore[attr-defined]


@dataclasses.dataclass
class ScreenedRecord(Record):
    """The record of a study that screens candidates and times winners again: its build folder,
    the seconds of paired timing for a screen and for a final, and the device."""

    build: Path
    out: Path
    deadline: float
    screen_s: float
    final_s: float
    device: LiveDevice
    stamps: dict
    screen: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class BuildRecord(Record):
    """The record of a study whose steps need only its build folder, its device and the deadline."""

    build: Path
    out: Path
    deadline: float
    device: LiveDevice
    stamps: dict


@dataclasses.dataclass
class DeviceRecord(Record):
    """The record of a study that builds nothing ahead (its `manifest` says what it runs): its
    out folder, its device and the deadline."""

    out: Path
    deadline: float
    device: LiveDevice
    stamps: dict


def record_of(cls: Callable[..., Record]) -> Callable[[Run], Record]:
    """A study's `record`: `cls` made from the run's out, deadline, device and stamps, with its
    build folder first for a BuildRecord."""
    if isinstance(cls, type) and issubclass(cls, DeviceRecord):
        return lambda run: cls(run.args.out, run.deadline, run.device, run.stamps)
    return lambda run: cls(run.args.build, run.args.out, run.deadline, run.device, run.stamps)


def attempt(step: Callable[..., dict], *args: Any, **kw: Any) -> dict:
    """`step`'s row, or {'status': 'error', 'reason': ...} when it raised: one candidate's or
    one job's failure is a row, and the run goes on."""
    try:
        return step(*args, **kw)
    except Exception as exc:  # noqa: BLE001 - a failure is a row
        return {"status": "error", "reason": error_line(exc)}


def lanes(
    record: Record,
    table: str,
    items: Iterable[Any],
    step: Callable[[Any], None],
    *,
    key: Callable[[Any], dict],
    reserve_s: float | Callable[[Any], float] = 0.0,
    after: Callable[[], None] | None = None,
) -> None:
    """Each item through `step` while the deadline leaves `reserve_s` for it; an item not begun
    is a row 'skipped: deadline', an item whose step raised is a row 'error' (both in `table`,
    named by `key(item)`). `after` runs after each begun item (a summary rewritten as it goes)."""
    for item in items:
        need = reserve_s(item) if callable(reserve_s) else reserve_s
        if record.left() < need:
            record.add(table, {**key(item), "status": "skipped", "reason": "deadline"})
            continue
        try:
            step(item)
        except Exception as exc:  # noqa: BLE001 - an item's failure is a row
            record.add(table, {**key(item), "status": "error", "reason": error_line(exc)})
        if after:
            after()


@dataclasses.dataclass(frozen=True)
class Run:
    """What the runner hands a study's steps: the command line, the build's manifest, the
    device, the run's stamps and its deadline (time.monotonic)."""

    args: argparse.Namespace
    manifest: dict
    device: LiveDevice
    stamps: dict
    started: float
    deadline: float

    def log(self, text: str) -> None:
        """A progress line on stderr, stamped with the seconds since the start."""
        print(f"[{time.monotonic() - self.started:.0f} s] {text}", file=sys.stderr, flush=True)


@dataclasses.dataclass(frozen=True)
class Study:
    """One GPU study, declared: its name, the CPU build (`prepare(folder, args)` with its
    `build_options`, or a `build(argv) -> int` of its own; either writes a folder with
    manifest.json), the GPU step (check and time, rows into the record it returns first:
    `record(run)` makes it, `check_and_time(run, record)` fills it), the summary and figures
    (`plot(record, out) -> summary text`), its own options and the defaults of the common ones.
    A study that builds nothing ahead (its steps build as they go) declares `manifest(args)`
    instead: the runner then asks for no build folder."""

    name: str
    record: Callable[[Run], Record]
    check_and_time: Callable[[Run, Record], None]
    plot: Callable[[Record, Path], str]
    doc: str = ""
    build: Callable[[list[str] | None], int] | None = None
    prepare: Callable[[Path, argparse.Namespace], None] | None = None
    build_options: Callable[[argparse.ArgumentParser], None] = lambda parser: None
    build_dir: Path = Path("gpu_build")
    deadline_s: float = 220.0
    options: Callable[[argparse.ArgumentParser], None] = lambda parser: None
    manifest: Callable[[argparse.Namespace], dict] | None = None
    select: Callable[[dict, argparse.Namespace], dict] = lambda manifest, args: manifest
    stamps: Callable[[dict], dict] = lambda manifest: {"commit": manifest.get("commit")}
    live: Callable[[], LiveDevice] = LiveDevice
    dry: Callable[[], LiveDevice] = DryDevice
    verdict: Callable[[Record], int] = lambda record: 0  # a study's own exit code from its rows (1: a finding)

    def run(self, argv: list[str] | None = None) -> int:
        """This study through the runner (`main`), from a command line."""
        return main(self, argv)

    def build_main(self, argv: list[str] | None) -> int:
        """The CPU side: `build`'s own command line, or `prepare` into a folder (`folder_build`)."""
        if self.build is not None:
            return self.build(argv)
        assert self.prepare is not None, f"study {self.name} has neither build nor prepare"
        return folder_build(self.name, self.prepare, self.build_dir, self.doc, self.build_options)(argv)


# a study module's names by the convention of benchmarks/studies: Study field <- module name
CONVENTION = {
    "prepare": "prepare",
    "build_options": "build_options",
    "options": "options",
    "manifest": "manifest",
    "check_and_time": "check_and_time",
    "plot": "summary",
    "live": "Live",
    "dry": "Dry",
}


def declared(module: str, **fields: Any) -> Study:
    """The `Study` a module declares by the convention (CONVENTION: its `prepare`,
    `build_options`, `options`, `manifest`, `check_and_time`, `summary`, `Live` and `Dry`
    where it has them; its record `record_of(Rows)`; its docstring), with `fields` (name,
    build_dir, deadline_s, ...) added or overriding: a study module then ends at one line of
    what is its own."""
    names = vars(sys.modules[module])
    found: dict[str, Any] = {field: names[name] for field, name in CONVENTION.items() if name in names}
    if "Rows" in names:
        found["record"] = record_of(names["Rows"])
    return Study(doc=names.get("__doc__") or "", **{**found, **fields})


def parser(study: Study) -> argparse.ArgumentParser:
    """The common options, then the study's own."""
    p = argparse.ArgumentParser(prog=f"benchmarks.studies {study.name}", description=study.doc.splitlines()[0])
    if study.manifest is None:
        p.add_argument("--build", type=Path, default=study.build_dir, help=f"the CPU build (default {study.build_dir})")
    p.add_argument("--out", type=Path, default=Path("out") / study.name, help="where the rows and summary go")
    p.add_argument(
        "--deadline", type=float, default=study.deadline_s, help="seconds; what is not begun by then is skipped"
    )
    p.add_argument("--dry-run", action="store_true", help="no GPU: made-up results, every step walked")
    study.options(p)
    return p


def folder_build(
    name: str,
    prepare: Callable[[Path, argparse.Namespace], None],
    default: Path,
    doc: str,
    options: Callable[[argparse.ArgumentParser], None] = lambda parser: None,
) -> Callable[[list[str] | None], int]:
    """A study's `build` from `prepare(folder, args)`, which writes the cubins and manifest.json
    into the folder: the folder given as `--out DIR` or as a bare `DIR` (default `default`).
    A ValueError from `prepare` (bad input, raised before it writes) is one line and exit 2."""

    def build(argv: list[str] | None = None) -> int:
        p = argparse.ArgumentParser(
            prog=f"benchmarks.studies {name} --prepare", description=f"the CPU side: {doc.splitlines()[0]}"
        )
        p.add_argument("folder", type=Path, nargs="?", help=f"where the build goes (default {default})")
        p.add_argument("--out", type=Path, help="the same as FOLDER")
        options(p)
        args = p.parse_args(argv)
        folder = args.out or args.folder or default
        folder.mkdir(parents=True, exist_ok=True)
        try:
            prepare(folder, args)
        except ValueError as exc:
            print(f"{p.prog}: {exc}", file=sys.stderr)
            return 2
        return 0

    return build


def main(study: Study, argv: list[str] | None = None) -> int:
    """Run `study`: 0 when every step ran (a failing job is a row, not a failure), 1 when a
    whole step failed (its row in <prefix>_failures.csv) or the study's verdict says so, 2 for
    bad input (one line), a ReorderError's code when the device cannot start (one line)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--prepare" in argv and study.manifest is None:
        argv.remove("--prepare")
        return study.build_main(argv)
    args = parser(study).parse_args(argv)
    started = time.monotonic()
    manifest_path = Path(getattr(args, "build", "")) / "manifest.json"
    if study.manifest is None and not manifest_path.is_file():
        print(
            f"{study.name}: {manifest_path} not found (build it with python -m benchmarks.studies {study.name} "
            "--prepare)",
            file=sys.stderr,
        )
        return 2
    try:
        found = json.loads(manifest_path.read_text()) if study.manifest is None else study.manifest(args)
        manifest = study.select(found, args)
    except ValueError as exc:
        print(f"{study.name}: {exc}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    return _run(study, args, manifest, started)


def _run(study: Study, args: argparse.Namespace, manifest: dict, started: float) -> int:
    from reorder.base.errors import ReorderError

    try:
        device = study.dry() if args.dry_run else study.live()
    except ReorderError as exc:  # no GPU, most often: one line and its exit code
        print(f"{study.name}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    failed: list[str] = []
    try:
        stamps = {"gpu": device.gpu_name(), "date": time.strftime("%Y-%m-%d %H:%M:%S"), **study.stamps(manifest)}
        run = Run(args, manifest, device, stamps, started, started + args.deadline)
        record = study.record(run)
        _step(record, "check_and_time", lambda: study.check_and_time(run, record), failed)
    finally:
        device.close()
    summary = _step(record, "plot", lambda: study.plot(record, args.out), failed)
    if summary is not None:
        (args.out / "summary.md").write_text(summary)
        print(summary)
    run.log(f"wrote {args.out}/summary.md and {record.prefix}_*.csv")
    for name in failed:
        print(f"{study.name}: the {name} step failed ({args.out}/{record.prefix}_failures.csv)", file=sys.stderr)
    return max(1 if failed else 0, study.verdict(record))


def _step(record: Record, name: str, step: Callable[[], Any], failed: list[str]) -> Any:
    """`step`'s result, or None with a row in the failures table (and `name` in `failed`)."""
    try:
        return step()
    except Exception as exc:  # noqa: BLE001 - a failed step is a row and an exit code
        failed.append(name)
        record.add("failures", {"step": name, "status": "error", "reason": error_line(exc)})
        return None
