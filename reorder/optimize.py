"""`reorder optimize`: search the move space, keep the best proven candidate, report.

With a GPU every figure is measured (byte check, then paired timing); without one the
same search runs on the static cost model and every figure is labelled predicted.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

from legality.verify import verify_kernel
from reorder.base.deadline import Deadline, move_on_at
from reorder.base.errors import InputError, NoGpuError, ReorderError
from reorder.base.files import check_output, undone_on_failure, write_atomic
from reorder.base.lifetime import Terminated, raise_if_terminated, shielded, signal_wins
from reorder.base.stderr import say
from reorder.binary.cubin import parse_cubin, read_cubin
from reorder.build.listing import list_space
from reorder.build.ptxlevel import PtxLevel, ptx_level
from reorder.build.space import Choice, build_cached
from reorder.ptx.toolchain.compile import Recipe
from reorder.report.contributions import overlaps, settle
from reorder.report.markdown import Report, failures_by_class, pruned_by_class, versions, write_report
from reorder.report.sassdiff import sass_diff
from reorder.sass.model import decode_kernel
from reorder.sass.readback import read_back
from reorder.search import budget
from reorder.search.progress import phase_line
from reorder.search.scoring import GpuScorer, Rejected, Score, StaticScorer
from reorder.search.storagefail import storage_failures
from reorder.search.study import SearchConfig, ranked_choices, search, study_name_for

FINALISTS = 3


@dataclass(frozen=True, kw_only=True)
class OptimizeArgs:
    """Everything one optimize run is told (keywords only: 23 fields are too many to pass by
    position without mixing two of them up)."""

    cubin: Path
    output: Path
    kernel: str | None
    launch: Path | None
    budget: int
    seconds: float
    jobs: int
    storage: str | None
    l2: str
    device: str  # auto | gpu | cpu
    noalias: bool
    seed: int
    candidate_budget_s: float = 2.0
    workers: int = 1  # search processes sharing one study (one per GPU on a GPU host)
    search_only: bool = False  # a helper worker: search, then leave reporting to worker 0
    worker_index: int = 0
    finalists: int = FINALISTS  # the best distinct binaries scored again before one is chosen
    final_budget_s: float = 5.0  # seconds of paired timing per finalist
    contributions: bool = True  # re-score the winner without each of its moves, dropping those that do not pay
    timeline: bool = False  # probe original and winner where they differ (GPU), timeline.png in the report
    compiled_from: str = ""  # where `cubin` came from when the input was PTX (reorder.ptx.toolchain.compile)
    check_launches: tuple[Path, ...] = ()  # more launch specs the winner must serve (each batch size)
    build_cache: str | None = None  # this run's folder of built candidates (build_cached)
    recheck_sets: int = 20  # fresh input sets per launch in the winner's re-check
    ptx: Path | None = None  # the PTX the cubin was compiled from: the search then spans both levels
    ptx_level: PtxLevel | None = None  # set by optimize() from `ptx`
    ptx_recipe: Recipe | None = None  # the ptxas and flags that made `cubin` from `ptx` (a Triton config's own)
    started: float | None = None  # when --time starts counting (time.monotonic); None: at this call
    families: tuple[str, ...] | None = None  # the SASS families listed (reorder.build.listing); None: all
    unmeasured_arch: bool = False  # without a GPU, write a result for an arch never measured on silicon
    more_launches: tuple[Path, ...] = ()  # more --launch shapes: every trial timed at each (reorder.search.shapes)
    weights: tuple[float, ...] = ()  # --weights, one per --launch (default: all 1)
    per_shape: bool = False  # --per-shape: one binary per group of shapes and a dispatch manifest


class Clock:
    """The run's time: its Deadline, the phase rule (reorder.search.budget) and the costs
    measured so far, which move the phase ends as they come in; and the phase it is in."""

    def __init__(self, deadline: Deadline, rule: budget.Rule, costs: budget.Costs) -> None:
        self.deadline, self.rule, self.costs = deadline, rule, costs
        self.phase = "start"
        self.spent: list[tuple[str, float]] = []  # (phase, seconds) of the phases after the listing
        self._since = time.monotonic()

    def enter(self, phase: str) -> None:
        """Begin `phase`; the one before it is booked in `spent` (from the search on)."""
        now = time.monotonic()
        if self.phase not in ("start", "listing"):
            self.spent.append((self.phase, now - self._since))
        self.phase, self._since = phase, now

    def ends(self) -> budget.Ends:
        return budget.ends(self.rule, self.costs, self.deadline.start, self.deadline.hard_end)

    def say(self, what: str, end: float) -> None:
        _say(phase_line(self.phase, what, end, self.deadline.end))


def _say(line: str) -> None:
    say(line)


def _choose_device(args: OptimizeArgs) -> bool:
    """True for the GPU. 'auto' falls back to the static model with a loud line."""
    if args.device == "cpu":
        return False
    from timing.cli_support import gpu_unavailable_reason

    reason = gpu_unavailable_reason()
    if not reason:
        if args.launch is None:
            raise InputError(
                "a GPU is present: --launch SPEC is needed to check and time candidates "
                "(or --device cpu for the static model)"
            )
        return True
    if args.device == "gpu":
        raise NoGpuError(f"no CUDA GPU available: {reason}")
    _say(f"no GPU ({reason}): searching on the static cost model; every figure below is PREDICTED, not measured")
    return False


def _refuse_unmeasured(args: OptimizeArgs, arch: int) -> None:
    """No GPU and an arch whose latency facts were never measured on its silicon: nothing checks a
    candidate on hardware and the tables rest on the compiler and on Hopper, so nothing is written
    unless the user says so (`--unmeasured-arch`); one line, before any file is made."""
    from legality.latency import unmeasured_arch
    from timing.cli_support import gpu_unavailable_reason

    if args.unmeasured_arch or not unmeasured_arch(arch):
        return
    if args.device == "cpu" or gpu_unavailable_reason():
        raise InputError(
            f"{args.cubin}: sm_{arch}: no latency fact of this arch was measured on its silicon and there is no GPU "
            f"to check candidates on; calibrate on its GPU (reorder latency-probe --arch sm_{arch}, then "
            f"REORDER_TABLES=<its --out folder>) or pass --unmeasured-arch to write an unchecked result anyway"
        )


def optimize(args: OptimizeArgs) -> Report | None:
    """Run the search and write the output and report; the Report (None for a helper worker).
    The whole command keeps to --time (reorder.search.budget): a SIGTERM or Ctrl-C ends it
    within seconds, in any phase, with nothing half-written and no trial left RUNNING. A full
    disk, a read-only folder or a quota is one line naming the file it could not write, and
    what this run added (the output, its sidecars, the folder beside it with a new study database) is removed; a
    resumed study's database stays as sqlite kept it."""
    deadline = Deadline(args.started if args.started is not None else time.monotonic(), args.seconds)
    clock = Clock(deadline, _rule(args, False), budget.Costs())
    folder = args.output.with_name(args.output.stem + ".reorder")
    undo = contextlib.nullcontext() if args.search_only else undone_on_failure(folder, outputs=[args.output])
    try:
        with signal_wins(), undo, storage_failures(args.storage or _default_storage(folder, args.workers)):
            return _optimize(args, clock)
    except Terminated:
        raise Terminated(f"during the {clock.phase}; {_unwritten(args)}") from None
    except KeyboardInterrupt:
        raise KeyboardInterrupt(f"during the {clock.phase}; {_unwritten(args)}") from None


def _unwritten(args: OptimizeArgs) -> str:
    if args.search_only:
        return "this helper's trials stay in the study"
    return f"nothing written to {args.output}; the study keeps every finished trial (rerun to resume)"


def _rule(args: OptimizeArgs, on_gpu: bool) -> budget.Rule:
    return budget.Rule(
        limit_s=args.seconds,
        gpu=on_gpu,
        finalists=max(1, args.finalists),
        final_budget_s=args.final_budget_s,
        recheck_sets=args.recheck_sets,
        launches=1 + len(args.more_launches) + len(args.check_launches),
        trial_launches=1 + len(args.more_launches) + bool(args.check_launches),
    )


def _optimize(args: OptimizeArgs, clock: Clock) -> Report | None:
    if not args.search_only:  # a folder, a device, a hard link to the input: refused before the search
        check_output(args.output, protect=[args.cubin])
    cubin = read_cubin(args.cubin)
    code = decode_kernel(cubin, args.kernel)
    kernel = code.kernel.name
    _refuse_unmeasured(args, code.arch)
    if args.ptx is not None:
        args = replace(args, ptx_level=ptx_level(args.ptx, kernel, args.noalias, code.arch, args.ptx_recipe))
    if args.check_launches and args.launch is None:
        raise InputError("--check-launch needs --launch (the launch trials are timed at)")
    if args.launch is not None:  # a wrong spec is refused before anything is said or searched
        from timing.cli_support import validated_spec

        for path in (args.launch, *args.more_launches, *args.check_launches):
            validated_spec(path, [args.cubin], kernel)
    on_gpu = _choose_device(args)
    clock.rule = _rule(args, on_gpu)
    clock.costs = budget.Costs(timing_s=args.candidate_budget_s if on_gpu else 0.0)
    clock.enter("listing")
    ends = clock.ends()
    listed = list_space(code, args.noalias, args.ptx_level, until=min(ends.listing, ends.search))
    import pandas  # noqa: F401  (the report's table needs it: imported now, not in the closing reserve)

    clock.costs = replace(clock.costs, slowdown=budget.slowdown(clock.deadline.used(), _cpu_s()))
    space = listed.space
    args = replace(args, ptx_level=space.ptx, families=space.families)
    if not args.search_only:
        _say(f"{kernel} (sm_{code.arch}, {len(code.instructions)} instructions): {space.size_line()}")
        for line in listed.cut:
            _say(f"listing: {line} (the search goes on without it)")
    folder = args.output.with_name(args.output.stem + ".reorder")
    folder.mkdir(parents=True, exist_ok=True)
    storage = args.storage or _default_storage(folder, args.workers)
    with contextlib.ExitStack() as stack:
        helpers = [] if args.search_only else _start_helpers(args, kernel, on_gpu, storage, clock)
        stack.callback(_stop, helpers)
        args = replace(args, build_cache=stack.enter_context(tempfile.TemporaryDirectory(prefix="reorder-builds-")))
        scorer = _scorer(args, kernel, on_gpu, stack)
        config = SearchConfig(
            args.cubin,
            kernel,
            args.noalias,
            args.budget,
            args.seconds,
            args.jobs,
            storage,
            study_name_for(args.cubin, kernel, args.noalias, on_gpu, args.ptx_level),
            args.seed + args.worker_index,
            ptx=args.ptx_level,
            build_cache=args.build_cache,
            until=(lambda c: clock.deadline.end) if args.search_only else (lambda c: _search_end(clock, c)),
            limit_end=clock.deadline.end,
        )
        if not args.search_only:
            _say(f"study {config.study_name} in {storage} ({args.workers} worker(s))")
        clock.enter("search")
        started = time.monotonic()
        searched = search(
            config, space, scorer, progress=(lambda _: None) if args.search_only else _say, costs=clock.costs
        )
        raise_if_terminated()  # a SIGTERM whose raise was swallowed ends the run here, not after it
        clock.costs = searched.costs
        if args.search_only:
            return None
        if searched.stopped:
            _say(f"search: stopped: {searched.stopped}")
        _wait(helpers, clock.ends().search + 5.0)
        study = _reload(config)
        report = _conclude(args, code, space, study, scorer, folder, clock)
        if args.more_launches:
            _conclude_shapes(args, kernel, scorer, study, report, folder, clock)
        report.notes.append(_phases_note(clock, started, searched.stopped))
        for line in listed.cut:
            report.notes.append(f"move space: {line} of --time {args.seconds:g} s; the search ran without it")
        if args.timeline and time.monotonic() < clock.ends().close:
            try:
                with move_on_at(clock.ends().closing_cut()) as cut:
                    _timeline(args, code, scorer, folder, report)
                if cut.reached:
                    report.notes.append("timeline: not drawn: --time reached")
            except ReorderError as exc:  # the search's result stands without its picture
                report.notes.append(f"timeline: not drawn: {str(exc).splitlines()[0]}")
    md, csv = write_report(folder, report, study)
    _say(f"report: {md}\ntrials: {csv}")
    _say(report.outcome)
    return report


def _conclude_shapes(args: OptimizeArgs, kernel: str, scorer, study, report: Report, folder: Path, clock) -> None:
    """The per-shape tables and, with --per-shape, the per-shape binaries (reorder.report.shapereport);
    a per-shape binary's re-check starts only if it fits before closing."""
    from reorder.report.shapereport import RunFacts, conclude_shapes

    facts = RunFacts(
        kernel,
        args.cubin,
        args.output,
        check_specs(args, kernel),
        args.recheck_sets,
        args.per_shape,
        recheck_first_set(),
        until=clock.ends().closing_cut(),
        recheck_s=budget.recheck_s(clock.rule, clock.costs),
    )
    conclude_shapes(scorer, study, report, folder, facts)


def _cpu_s() -> float:
    """CPU seconds this process (and the children it waited for) has used."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _search_end(clock: Clock, costs: budget.Costs) -> float:
    clock.costs = costs
    return clock.ends().search


def _phases_note(clock: Clock, search_started: float, stopped: str) -> str:
    spent = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in clock.spent)
    why = f" ({stopped})" if stopped else ""
    return (
        f"phases of --time {clock.rule.limit_s:g} s (rule: docs/time_budget.md): start and listing "
        f"{search_started - clock.deadline.start:.1f} s, {spent}{why}; ended {clock.deadline.used():.1f} s after "
        "the command started"
    )


def _list_unmeasured(report: Report, code, after, baseline) -> None:
    """On an arch never measured on its silicon, every table fact the winner's verdict rests on
    that no silicon measured, in the report (legality.evidence.unmeasured_facts)."""
    from legality.evidence import unmeasured_facts
    from legality.latency import unmeasured_arch

    if unmeasured_arch(code.arch):
        report.unmeasured = list(unmeasured_facts(after, after.instructions, original=baseline))


def _default_storage(folder: Path, workers: int) -> str:
    """SQLite for one worker; for several on one host Optuna's journal file (many writers to
    one SQLite file is what the journal exists to avoid). Many hosts: pass --storage postgresql://."""
    if workers > 1:
        return f"journal:{(folder / 'study.journal').resolve()}"
    return f"sqlite:///{(folder / 'study.db').resolve()}"


def _start_helpers(args: OptimizeArgs, kernel: str, on_gpu: bool, storage: str, clock: Clock) -> list:
    """Workers 1..N-1 as processes running the same search on the same study; on a GPU host
    worker i gets GPU i (worker 0 is this process, on GPU 0). Each is given, as its --time,
    the search's time as the phase rule plans it now."""
    import os
    import subprocess

    search_s = max(1.0, clock.ends().search - time.monotonic())
    procs = []
    for i in range(1, args.workers):
        cmd = [sys.executable, "-m", "reorder", "optimize", str(args.cubin), "-o", str(args.output)]
        cmd += ["--kernel", kernel, "--budget", str(args.budget), "--time", f"{search_s:.1f}s"]
        cmd += ["--jobs", str(args.jobs), "--storage", storage, "--l2", args.l2]
        cmd += ["--device", "gpu" if on_gpu else "cpu", "--seed", str(args.seed)]
        cmd += ["--candidate-budget", str(args.candidate_budget_s), "--search-only", "--worker-index", str(i)]
        cmd += ["--parent-pid", str(os.getpid())]
        cmd += [x for c in (args.launch, *args.more_launches) if c for x in ("--launch", str(c))]
        cmd += ["--weights", ",".join(map(str, args.weights))] if args.weights else []
        cmd += [x for c in args.check_launches for x in ("--check-launch", str(c))]
        cmd += ["--assume-noalias"] if args.noalias else []
        cmd += ["--unmeasured-arch"] if args.unmeasured_arch else []
        cmd += ["--ptx", str(args.ptx)] if args.ptx else []
        env = dict(os.environ, **({"CUDA_VISIBLE_DEVICES": str(i)} if on_gpu else {}))
        procs.append(subprocess.Popen(cmd, env=env))
    return procs


def _wait(procs: list, until: float) -> None:
    """Wait for the helper searches until `until` (time.monotonic); one still running then
    is stopped (_stop), its trials settled by its own SIGTERM handling."""
    import subprocess

    for p in procs:
        try:
            if p.wait(timeout=max(0.0, until - time.monotonic())) != 0:
                _say(f"worker pid {p.pid} exited with {p.returncode}; its trials stay in the study")
        except subprocess.TimeoutExpired:
            _say(f"worker pid {p.pid} did not finish its search in time and was stopped")
    _stop(procs)


STOP_WAIT_S = 1.0  # a helper told to stop settles its trials in this long, or is killed


def _stop(procs: list) -> None:
    """SIGTERM every helper still running, then SIGKILL the ones not gone within STOP_WAIT_S."""
    import subprocess

    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def _reload(config: SearchConfig):
    import optuna

    from reorder.search.study import open_storage

    return optuna.load_study(study_name=config.study_name, storage=open_storage(config.storage))


def _scorer(args: OptimizeArgs, kernel: str, on_gpu: bool, stack: contextlib.ExitStack):
    if not on_gpu:
        return StaticScorer(args.cubin, kernel)
    from timing.cli_support import validated_spec, worker_device
    from timing.worker import WorkerPool

    assert args.launch is not None  # on a GPU a launch spec is required (checked with the arguments)
    spec = validated_spec(args.launch, [args.cubin], kernel)
    more = check_specs(args, kernel)
    pool = stack.enter_context(WorkerPool(devices=[worker_device()]))
    if args.more_launches:
        from reorder.search.shapescorer import shape_scorer

        paths = (args.launch, *args.more_launches)
        kw = {"l2": args.l2, "budget_s": args.candidate_budget_s, "fill": fill_launch(more)}
        return shape_scorer(args.cubin.resolve(), paths, args.weights, kernel, pool, **kw)
    return GpuScorer(
        args.cubin.resolve(), spec, pool, l2=args.l2, budget_s=args.candidate_budget_s, fill=fill_launch(more)
    )


def check_specs(args: OptimizeArgs, kernel: str) -> tuple:
    """The --check-launch specs, validated against the kernel."""
    from timing.cli_support import validated_spec

    return tuple(validated_spec(path, [args.cubin], kernel) for path in args.check_launches)


def fill_launch(specs: tuple):
    """The launch with the most blocks: every trial is checked there too (a race that needs
    many blocks, or other blocks on the same SM, shows there). None when there is none."""
    import math

    return max(specs, key=lambda s: math.prod(s.grid), default=None)


def recheck_first_set() -> int:
    """Where a winner's re-check starts drawing input sets: far past the ones the search used,
    and different in every run."""
    import secrets

    return 1_000_000 + secrets.randbelow(2**30)


def _conclude(args: OptimizeArgs, code, space, study, scorer, folder: Path, clock: Clock) -> Report:
    """The phases after the search, each within its end (reorder.search.budget): finalists,
    re-check, pruning, then closing (verify, write, diff). The output is always written: the
    best candidate that passed every check, or a copy of the input with the reason."""
    report = _report(args, code, space, study)
    clock.enter("finalists")
    count, per_s = budget.final_budget(clock.rule, clock.costs)
    ranked = ranked_choices(study, space, count)
    if args.more_launches:  # each shape's own best is a finalist too (reorder.search.shapetrials)
        from reorder.search.shapescorer import labels_for
        from reorder.search.shapetrials import finalist_choices

        assert args.launch is not None  # more launches come with a first one (checked with the arguments)
        ranked = finalist_choices(study, space, count, labels_for((args.launch, *args.more_launches)))
    picked, why = None, "no candidate was scored in the search"
    if ranked:
        with tempfile.TemporaryDirectory() as tmp:
            picked, why = _pick_finalist(args, code.kernel.name, ranked, scorer, Path(tmp), report, clock, per_s)
            if picked is not None and args.contributions:
                clock.enter("pruning")
                picked = _prune(args, code.kernel.name, picked, scorer, Path(tmp), report, clock, per_s)
    clock.enter("closing")
    with move_on_at(clock.ends().closing_cut()) as cut:
        _close(args, code, picked, why, folder, report)
    if cut.reached and not report.outcome:  # the verifier's walk did not finish: the original stands
        _write_copy(args, report, f"the winner's verification did not finish by --time {args.seconds:g} s")
    elif cut.reached:
        report.notes.append("closing was cut at --time after the output was written: the SASS diff may be missing")
    clock.enter("report")
    return report


def _report(args: OptimizeArgs, code, space, study) -> Report:
    import optuna

    trials = study.trials
    report = Report(
        code.kernel.name,
        f"sm_{code.arch}",
        f"{args.cubin} ({args.compiled_from})" if args.compiled_from else str(args.cubin),
        space.size_line(),
        len(trials),
        sum(t.state == optuna.trial.TrialState.FAIL for t in trials),
        sum(bool(t.user_attrs.get("duplicate")) for t in trials),  # a pruned kind, also named on its own
        "(none)",
        None,
        l2=args.l2,
        versions=versions(),
        failures=failures_by_class(study),
        pruned=pruned_by_class(study),
    )
    if args.ptx_level is None:
        report.notes.append(
            "PTX moves: unavailable (no PTX at hand, or its decisions not listed in time): the search ran on "
            "SASS moves only"
        )
        from reorder.analysis.loops import loops_note

        report.notes.append(loops_note(code))
    if args.more_launches:
        report.notes.append(
            f"tuned at {1 + len(args.more_launches)} launch shapes: the objective is the weighted geometric mean "
            "of the per-shape ratios (reorder.search.shapes); each shape's figures are in the tables below"
        )
    elif args.launch is not None:
        report.notes.append(
            f"tuned at the launch of {args.launch}: the winner is this shape's; another launch shape "
            "(batch size) gets its own run with its own --launch"
        )
    if args.noalias:
        report.notes.append("assumed: pointer parameters do not alias (--assume-noalias)")
    if not args.contributions:
        report.contributions_note = "not measured: --no-contributions"
    return report


def _write_copy(args: OptimizeArgs, report: Report, why: str) -> None:
    """The output is the input's bytes; the report and the last line say why."""
    with shielded():
        _write_output(args, report.kernel, args.cubin.read_bytes(), report.cubin)
        report.outcome = f"result: wrote {args.output}: a copy of the input ({why})"
    report.notes.append(f"the output is a copy of the input: {why}")


def _close(args: OptimizeArgs, code, picked, why: str, folder: Path, report: Report) -> None:
    """Verify the winner against its baseline, write it (or the input's copy), diff it."""
    if picked is None:
        _write_copy(args, report, why)
        return
    choice, built, final = picked
    report.best_moves = choice.label()
    report.result = final
    after = read_back(parse_cubin(built.data, "best"), code)
    baseline = _ptx_report(args, choice, folder, report) if choice.ptx else code.instructions
    verdict = verify_kernel(after, original=baseline, noalias=args.noalias)
    report.verifier = verdict.verdict()
    _list_unmeasured(report, code, after, baseline)
    report.check = (
        _check_line(final.detail, bool(args.check_launches or args.more_launches))
        if final.measured
        else "not run: no GPU (the candidate is verified, not executed)"
    )
    better = final.high < 1.0 if final.measured else final.value < 1.0
    if verdict.ok and better:
        kind = "measured, byte-identical at every launch checked" if final.measured else "PREDICTED, not measured"
        with shielded():
            _write_output(args, code.kernel.name, built.data, report.cubin, choice)
            figure = (
                f"{final.value:.4f} [{final.low:.4f}, {final.high:.4f}]" if final.measured else f"{final.value:.4f}"
            )
            report.outcome = (
                f"result: wrote {args.output}: time(optimized)/time(original) {figure} ({kind}; verifier: legal)"
            )
        report.notes.append(f"wrote the best candidate to {args.output}")
    else:
        reason = (
            "the verifier rejected the best candidate" if not verdict.ok else "the best candidate is not proven faster"
        )
        _write_copy(args, report, f"{reason}: {final.line()}")
    diff = folder / "changes.diff"
    write_atomic(diff, ("\n".join(sass_diff(code, after)) + "\n").encode())
    kept = "the output" if verdict.ok and better else "the best candidate (not kept)"
    report.notes.append(f"SASS diff of {kept} against the original: {diff.name}")


def _write_output(args: OptimizeArgs, kernel: str, data: bytes, source: str, choice: Choice | None = None) -> None:
    """The output, with its provenance record beside it (reorder.build.record): what
    `reorder verify OUT --against IN` needs to judge it by the route that made it."""
    from reorder.build.record import output_record, write_with_record

    record = output_record(data, kernel, args.cubin, source, args.ptx_level, choice)
    write_with_record(args.output, data, record, protect=(args.cubin,))


def _ptx_report(args: OptimizeArgs, choice: Choice, folder: Path, report: Report) -> tuple:
    """For a winner with PTX moves: its PTX diff (ptx.diff), the moves it made, and the
    instructions of ptxas's build of its PTX (what its SASS moves are verified against)."""
    from reorder.build.ptxlevel import compiled, moved_ptx, ptx_diff

    level = args.ptx_level
    assert level is not None  # a winner with PTX moves was searched at the PTX level
    module, applied = moved_ptx(level, choice.ptx)
    diff = folder / "ptx.diff"
    write_atomic(diff, ptx_diff(level, module).encode())
    report.notes.append(
        f"PTX moves of the winner: {' '.join(applied)}; compiled by the {level.producer} PTX's "
        f"ptxas; SASS families on ptxas's build: {choice.sass or 'none'}; PTX diff: {diff.name}"
    )
    return compiled(level, module).instructions


def _check_line(detail: dict, several: bool) -> str:
    """What the winner's byte checks covered, for the report."""
    line = (
        f"every trial: {detail.get('check_detail', '')}; the winner, before it was written: "
        f"{detail.get('recheck', 'not re-checked')}"
    )
    if not several:
        line += (
            "; only the --launch shape was checked: give --check-launch SPEC for every other launch the kernel "
            "will serve and one whose grid fills every SM"
        )
    return line


def _pick_finalist(args, kernel: str, ranked, scorer, tmp: Path, report: Report, clock: Clock, per_s: float):
    """Score the search's best few binaries again, longer, and keep the best of those
    scores: a single short timing that won among a hundred is biased low. On a GPU the
    best-scoring finalist must then pass the re-check (every launch, many fresh input
    sets); one that fails is never the winner, and the next is re-checked instead. Each step
    starts only if it fits before its phase's end (reorder.search.budget), and is cut there.
    ((choice, built, final) or None, why none)."""
    end = clock.ends().finalists
    clock.say(f"scoring up to {len(ranked)} binaries ({per_s:.1f} s of timing each)", end)
    scored = []
    with move_on_at(end) as cut:
        builds = _build_all(args, kernel, [choice for choice, _ in ranked])
        for rank, ((choice, search_value), built) in enumerate(zip(ranked, builds)):
            row = {"moves": choice.label(), "search": f"{search_value:.4f}", "final": "not scored: --time"}
            report.finalists.append(row)
            if not budget.fits(time.monotonic(), budget.finalist_s(clock.rule, clock.costs), clock.ends().finalists):
                continue
            path = tmp / f"finalist{rank}.cubin"
            final, why = _score_built(built, path, lambda p: _final_score(scorer, p, per_s))
            row["final"] = final.line() if final else why
            if final:
                scored.append((final.value, rank, choice, built, final, path))
    if cut.reached:
        clock.say(f"cut at its end with {len(scored)} finalist(s) scored", end)
    if not scored:
        return None, "no finalist was scored in the time left" if cut.reached or ranked else "no candidate was scored"
    if not isinstance(scorer, GpuScorer):
        _, rank, choice, built, final, _ = min(scored, key=lambda s: s[:2])
        return (choice, built, final), ""
    clock.enter("re-check")
    return _recheck_best(args, kernel, scorer, sorted(scored, key=lambda s: s[:2]), report, clock)


def _recheck_best(args, kernel: str, scorer, scored: list, report: Report, clock: Clock):
    """The first finalist, best final score first, that passes the re-check in time."""
    launches = check_specs(args, kernel)
    end = clock.ends().recheck
    why = "no finalist's re-check finished in the time left"
    with move_on_at(end) as cut:
        for _, rank, choice, built, final, path in scored:
            if not budget.fits(time.monotonic(), budget.recheck_s(clock.rule, clock.costs), end):
                report.finalists[rank]["final"] += "; not re-checked: --time"
                continue
            clock.say(f"re-checking {choice.label()} ({args.recheck_sets} input sets per launch)", end)
            checked, failed = _recheck(scorer, path, launches, args.recheck_sets)
            report.finalists[rank]["final"] += f"; {checked or failed}"
            if checked:
                return (choice, built, replace(final, detail={**final.detail, "recheck": checked})), ""
            why = "every finalist re-checked failed its re-check"
    if cut.reached:
        clock.say("cut at its end: no finalist passed its re-check in time", end)
    return None, why


def _recheck(scorer: GpuScorer, path: Path, launches: tuple, sets: int) -> tuple[str, str]:
    """(what was checked, "") when the finalist is byte-identical at every launch on `sets`
    fresh input sets, else ("", why): a finalist that fails is never the winner."""
    try:
        return scorer.recheck(path, launches, sets, recheck_first_set()), ""
    except Rejected as exc:
        return "", f"rejected at the re-check: {exc}"


def _score_built(built, path: Path, score) -> tuple[Score | None, str]:
    """Write a built candidate and score it: (score, "") or (None, why it has none)."""
    if built.data is None:
        return None, f"unbuildable: {built.reason}"
    write_atomic(path, built.data)  # a full disk names the file
    try:
        return score(path), ""
    except Rejected as exc:
        return None, f"rejected: {exc}"


MAX_TIMELINE_POSITIONS = 160


def _timeline(args: OptimizeArgs, code, scorer, folder: Path, report: Report) -> None:
    """Sliding-probe timelines of the original and the winner over the instructions the
    moves changed, plotted together: where the winner stopped waiting."""
    if not isinstance(scorer, GpuScorer):
        report.notes.append("timeline: not drawn (it needs a GPU)")
        return
    from reorder.probe.run import run_probe
    from reorder.probe.timeline import plot, read_csv, write_csv

    winner = decode_kernel(read_cubin(args.output), code.kernel.name)
    changed = [k for k, (a, b) in enumerate(zip(code.instructions, winner.instructions)) if a.word != b.word]
    if not changed:
        report.notes.append("timeline: not drawn (the output is the original)")
        return
    first, last = changed[0], min(changed[-1], changed[0] + MAX_TIMELINE_POSITIONS)
    tables = []
    for name, cubin in (("original", args.cubin), ("optimized", args.output)):
        run = run_probe(cubin, scorer.spec, folder / f"probe_{name}", first, last, time_cost=False, jobs=args.jobs)
        csv_path = write_csv(folder / f"timeline_{name}.csv", run.points, run.found)
        tables.append((name, read_csv(csv_path)))
        report.notes.append(
            f"timeline ({name}): {len(run.points)} positions probed in {first}..{last}, "
            f"{len(run.found)} jumps, {len(run.failed)} variants failed"
        )
    report.timeline = plot(tables, folder / "timeline.png").name


def _build_all(args, kernel: str, choices: list[Choice]) -> list:
    """Build candidates in parallel on the CPU (the GPU then scores them one at a time), in
    workers that die with this process (reorder.base.lifetime)."""
    from joblib import delayed

    from reorder.base.lifetime import parallel

    if len(choices) <= 1 or args.jobs <= 1:
        return [
            build_cached(args.build_cache, str(args.cubin), kernel, args.noalias, c, args.ptx_level, args.families)
            for c in choices
        ]
    return parallel(min(args.jobs, len(choices)))(
        delayed(build_cached)(args.build_cache, str(args.cubin), kernel, args.noalias, c, args.ptx_level, args.families)
        for c in choices
    )


def _final_score(scorer, path: Path, budget_s: float) -> Score:
    if isinstance(scorer, GpuScorer):
        return scorer.score(path, budget_s=budget_s, target_ci_pct=0.5)
    return scorer.score(path)


MAX_PRUNE_ROUNDS = 3  # each round re-scores the winner without each move: bounded cost


def _prune(args, kernel: str, picked, scorer, tmp: Path, report: Report, clock: Clock, per_s: float):
    """Backward elimination over the winner's moves: score it without each move; while some
    removal scores no worse, drop the removal that scores best and repeat. A move that does
    not pay is a change with nothing to show for it. The contribution table of the last
    round goes into the report. On a GPU a pruned winner must pass the re-check too; if it
    fails, the unpruned winner (which passed) stands. It is an improvement, not a check: it
    runs only with time left before closing, a re-check's worth kept for the pruned winner,
    and removals not scored by then are listed as such; the winner found so far stands."""
    choice, built, final = picked
    ends = clock.ends()
    stop = ends.recheck - budget.recheck_s(clock.rule, clock.costs)  # a pruned winner's re-check fits after
    measured_on, pruned, stopped = None, "", f"the {MAX_PRUNE_ROUNDS} rounds of one removal each ran out"
    if len(choice.moves()) > 1:
        clock.say(f"scoring the winner without each of its {len(choice.moves())} moves", stop)
    with move_on_at(stop) as cut:
        for done in range(MAX_PRUNE_ROUNDS):
            if not budget.fits(time.monotonic(), budget.finalist_s(clock.rule, clock.costs), stop):
                if len(choice.moves()) > 1:
                    report.notes.append(f"backward elimination stopped at --time after {done} round(s)")
                stopped = f"--time reached after {done} round(s)"
                break
            rows, best = _without_each(args, kernel, choice, final, scorer, tmp, clock, stop, per_s)
            report.contributions, measured_on = rows, choice
            if best is None or best[2].value > final.value:
                stopped = "no scored removal scores as well"
                break
            move, smaller, score, smaller_built = best
            report.notes.append(f"pruned {move}: without it the winner scored {score.line()}, with it {final.line()}")
            choice, built, final, pruned = smaller, smaller_built, score, move
    if cut.reached:
        report.notes.append("backward elimination was cut at its end (--time); the winner found so far stands")
        stopped = "cut at --time"
    report.contributions = settle(report.contributions, measured_on is choice, pruned, stopped)
    if len(choice.moves()) < 2 and not report.contributions:
        report.contributions_note = (
            "one move: without it the kernel is the original, so the result above is its contribution"
        )
    if choice is picked[0] or not isinstance(scorer, GpuScorer):
        return choice, built, final
    path = tmp / "pruned.cubin"
    write_atomic(path, built.data)  # a full disk names the file
    with move_on_at(ends.recheck) as cut:
        checked, why = _recheck(scorer, path, check_specs(args, kernel), args.recheck_sets)
    if cut.reached:
        checked, why = "", "its re-check did not finish by --time"
    if checked:
        return choice, built, replace(final, detail={**final.detail, "recheck": checked})
    report.notes.append(f"the pruned winner failed its re-check ({why}): the unpruned winner stands")
    report.contributions = [
        {**row, "status": "of the pruned winner, which failed its re-check: not the output's"}
        for row in report.contributions
    ]
    return picked


def _without_each(args, kernel: str, choice: Choice, final: Score, scorer, tmp: Path, clock: Clock, stop, per_s):
    """(contribution rows, the best removal as (move, choice, score, built) or None); the
    removals are built and scored `--jobs` at a time while each still fits before `stop`."""
    rows: list[dict] = []
    best = None
    moves = choice.moves()
    if len(moves) < 2:
        return rows, None
    smaller = [choice.without(family, index) for family, index in moves]
    step = max(1, args.jobs)
    for start in range(0, len(moves), step):
        if not budget.fits(time.monotonic(), budget.finalist_s(clock.rule, clock.costs), stop):
            left = len(moves) - start
            rows.append({"move": f"{left} more move(s)", "without": "not scored: --time reached", "effect": "-"})
            break
        chunk = list(zip(moves[start : start + step], smaller[start : start + step]))
        built_chunk = _build_all(args, kernel, [less for _, less in chunk])
        best = _score_removals(args, choice, final, scorer, tmp, chunk, built_chunk, rows, best, per_s)
    return rows, best


def _score_removals(args, choice: Choice, final: Score, scorer, tmp: Path, chunk, builds, rows: list, best, per_s):
    """Score each removal of one chunk, append its contribution row; the best removal so far."""
    for ((family, index), less), built in zip(chunk, builds):
        score, why = _score_built(
            built, tmp / f"without_{family}_{index}.cubin", lambda path: _final_score(scorer, path, per_s)
        )
        label = (
            choice.ptx[index].describe()
            if family == "ptx"
            else f"SASS {choice.sass}"
            if family == "sass"
            else f"{family}#{index}"
        )
        rows.append(
            {
                "move": label,
                "without": score.line() if score else why,
                "effect": f"{score.value / final.value:.4f}" if score else "-",
                "ratio": score.value / final.value if score else None,
                "overlaps": overlaps(score, final) if score else False,
            }
        )
        if score and (best is None or score.value < best[2].value):
            best = (label, less, score, built)
    return best
