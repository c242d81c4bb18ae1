"""`reorder optimize`: search the move space, keep the best proven candidate, report.

With a GPU every figure is measured (byte check, then paired timing); without one the
same search runs on the static cost model and every figure is labelled predicted.
"""

from __future__ import annotations

import contextlib
import math
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

from legality.verify import verify_kernel
from reorder.base.errors import InputError, NoGpuError, ReorderError
from reorder.base.files import check_output, undone_on_failure, write_atomic
from reorder.base.lifetime import raise_if_terminated
from reorder.binary.cubin import parse_cubin, read_cubin
from reorder.build.ptxlevel import PtxLevel, ptx_level
from reorder.build.space import Choice, build_cached, search_space
from reorder.report.markdown import Report, failures_by_class, pruned_by_class, versions, write_report
from reorder.report.sassdiff import sass_diff
from reorder.sass.model import decode_kernel
from reorder.sass.readback import read_back
from reorder.search.scoring import GpuScorer, Rejected, Score, StaticScorer
from reorder.search.storagefail import storage_failures
from reorder.search.study import SearchConfig, ranked_choices, run_search, study_name_for

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
    compiled_from: str = ""  # where `cubin` came from when the input was PTX (reorder.ptx.compile)
    check_launches: tuple[Path, ...] = ()  # more launch specs the winner must serve (each batch size)
    build_cache: str | None = None  # this run's folder of built candidates (build_cached)
    recheck_sets: int = 20  # fresh input sets per launch in the winner's re-check
    ptx: Path | None = None  # the PTX the cubin was compiled from: the search then spans both levels
    ptx_level: PtxLevel | None = None  # set by optimize() from `ptx`


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


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


def optimize(args: OptimizeArgs) -> Report | None:
    """Run the search and write the output and report; the Report (None for a helper worker).
    A full disk, a read-only folder or a quota is one line naming the file it could not
    write, and what this run added to the output's folder (a new study database too) is
    removed; a resumed study's database stays as sqlite kept it."""
    folder = args.output.with_name(args.output.stem + ".reorder")
    undo = contextlib.nullcontext() if args.search_only else undone_on_failure(folder)
    with undo, storage_failures(args.storage or _default_storage(folder, args.workers)):
        return _optimize(args)


def _optimize(args: OptimizeArgs) -> Report | None:
    if not args.search_only:  # a folder, a device, a hard link to the input: refused before the search
        check_output(args.output, protect=[args.cubin])
    cubin = read_cubin(args.cubin)
    code = decode_kernel(cubin, args.kernel)
    kernel = code.kernel.name
    if args.ptx is not None:
        args = replace(args, ptx_level=ptx_level(args.ptx, kernel, args.noalias, code.arch))
    if args.check_launches and args.launch is None:
        raise InputError("--check-launch needs --launch (the launch trials are timed at)")
    if args.launch is not None:  # a wrong spec is refused before anything is said or searched
        from timing.cli_support import validated_spec

        for path in (args.launch, *args.check_launches):
            validated_spec(path, [args.cubin], kernel)
    space = replace(search_space(code, args.noalias), ptx=args.ptx_level)
    if not args.search_only:
        _say(f"{kernel} (sm_{code.arch}): {space.size_line()}")
    on_gpu = _choose_device(args)
    folder = args.output.with_name(args.output.stem + ".reorder")
    folder.mkdir(parents=True, exist_ok=True)
    storage = args.storage or _default_storage(folder, args.workers)
    helpers = [] if args.search_only else _start_helpers(args, kernel, on_gpu, storage)
    with contextlib.ExitStack() as stack:
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
        )
        if not args.search_only:
            _say(f"study {config.study_name} in {storage} ({args.workers} worker(s))")
        started = time.monotonic()
        study = run_search(
            config, space, scorer, progress=(lambda _: None) if args.search_only else (lambda line: _say(line))
        )
        raise_if_terminated()  # a SIGTERM whose raise was swallowed ends the run here, not after it
        if args.search_only:
            return None
        _wait(helpers, args.seconds + 300)
        searched = time.monotonic()
        study = _reload(config)
        report = _conclude(args, code, space, study, scorer, folder, deadline=started + args.seconds)
        report.notes.append(
            f"phases: search {searched - started:.0f} s (--time {args.seconds:.0f} s); finalists, "
            f"re-check and pruning {time.monotonic() - searched:.0f} s"
        )
        if args.timeline:
            try:
                _timeline(args, code, scorer, folder, report)
            except ReorderError as exc:  # the search's result stands without its picture
                report.notes.append(f"timeline: not drawn: {str(exc).splitlines()[0]}")
    md, csv = write_report(folder, report, study)
    _say(f"report: {md}\ntrials: {csv}")
    return report


def _default_storage(folder: Path, workers: int) -> str:
    """SQLite for one worker; for several on one host Optuna's journal file (many writers to
    one SQLite file is what the journal exists to avoid). Many hosts: pass --storage postgresql://."""
    if workers > 1:
        return f"journal:{(folder / 'study.journal').resolve()}"
    return f"sqlite:///{(folder / 'study.db').resolve()}"


def _start_helpers(args: OptimizeArgs, kernel: str, on_gpu: bool, storage: str) -> list:
    """Workers 1..N-1 as processes running the same search on the same study; on a GPU host
    worker i gets GPU i (worker 0 is this process, on GPU 0)."""
    import os
    import subprocess

    procs = []
    for i in range(1, args.workers):
        cmd = [
            sys.executable,
            "-m",
            "reorder",
            "optimize",
            str(args.cubin),
            "-o",
            str(args.output),
            "--kernel",
            kernel,
            "--budget",
            str(args.budget),
            "--time",
            f"{args.seconds}s",
            "--jobs",
            str(args.jobs),
            "--storage",
            storage,
            "--l2",
            args.l2,
            "--device",
            "gpu" if on_gpu else "cpu",
            "--seed",
            str(args.seed),
            "--candidate-budget",
            str(args.candidate_budget_s),
            "--search-only",
            "--worker-index",
            str(i),
            "--parent-pid",
            str(os.getpid()),
        ]
        cmd += ["--launch", str(args.launch)] if args.launch else []
        cmd += [x for c in args.check_launches for x in ("--check-launch", str(c))]
        cmd += ["--assume-noalias"] if args.noalias else []
        cmd += ["--ptx", str(args.ptx)] if args.ptx else []
        env = dict(os.environ, **({"CUDA_VISIBLE_DEVICES": str(i)} if on_gpu else {}))
        procs.append(subprocess.Popen(cmd, env=env))
    return procs


def _wait(procs: list, timeout_s: float) -> None:
    import subprocess

    for p in procs:
        try:
            if p.wait(timeout=timeout_s) != 0:
                _say(f"worker pid {p.pid} exited with {p.returncode}; its trials stay in the study")
        except subprocess.TimeoutExpired:
            p.kill()
            _say(f"worker pid {p.pid} did not finish in time and was stopped")


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


def _conclude(args: OptimizeArgs, code, space, study, scorer, folder: Path, deadline: float = math.inf) -> Report:
    import optuna

    trials = study.trials
    failed = sum(t.state == optuna.trial.TrialState.FAIL for t in trials)
    dups = sum(bool(t.user_attrs.get("duplicate")) for t in trials)  # a pruned kind, also named on its own
    ranked = ranked_choices(study, space, max(1, args.finalists))
    source = f"{args.cubin} ({args.compiled_from})" if args.compiled_from else str(args.cubin)
    report = Report(
        code.kernel.name,
        f"sm_{code.arch}",
        source,
        space.size_line(),
        len(trials),
        failed,
        dups,
        "(none)",
        None,
        l2=args.l2,
        versions=versions(),
        failures=failures_by_class(study),
        pruned=pruned_by_class(study),
    )
    if args.ptx_level is None:
        report.notes.append(
            "PTX moves: unavailable (the input is a cubin and no --ptx was given): the search ran on SASS moves only"
        )
        from reorder.analysis.loops import loops_note

        report.notes.append(loops_note(code))
    if args.launch is not None:
        report.notes.append(
            f"tuned at the launch of {args.launch}: the winner is this shape's; another launch shape "
            "(batch size) gets its own run with its own --launch"
        )
    if not ranked:
        write_atomic(args.output, args.cubin.read_bytes(), protect=[args.cubin])
        report.notes.append("no candidate completed: the output is a copy of the input")
        return report
    with tempfile.TemporaryDirectory() as tmp:
        picked = _pick_finalist(args, code.kernel.name, ranked, scorer, Path(tmp), report)
        if picked is None:
            write_atomic(args.output, args.cubin.read_bytes(), protect=[args.cubin])
            report.notes.append(
                "every finalist failed its final scoring or its re-check: the output is a copy of the input"
            )
            return report
        choice, built, final = picked
        if args.contributions:
            choice, built, final = _prune(args, code.kernel.name, picked, scorer, Path(tmp), report, deadline)
        report.best_moves = choice.label()
        report.result = final
    after = read_back(parse_cubin(built.data, "best"), code)
    baseline = _ptx_report(args, choice, folder, report) if choice.ptx else code.instructions
    verdict = verify_kernel(after, original=baseline)
    report.verifier = verdict.verdict()
    report.check = (
        _check_line(final.detail, bool(args.check_launches))
        if final.measured
        else "not run: no GPU (the candidate is verified, not executed)"
    )
    if args.noalias:
        report.notes.append("assumed: pointer parameters do not alias (--assume-noalias)")
    better = final.high < 1.0 if final.measured else final.value < 1.0
    if verdict.ok and better:
        write_atomic(args.output, built.data, protect=[args.cubin])
        report.notes.append(f"wrote the best candidate to {args.output}")
    else:
        write_atomic(args.output, args.cubin.read_bytes(), protect=[args.cubin])
        report.notes.append("the best candidate is not proven faster: the output is a copy of the input")
    diff = folder / "changes.diff"
    write_atomic(diff, ("\n".join(sass_diff(code, after)) + "\n").encode())
    kept = "the output" if verdict.ok and better else "the best candidate (not kept)"
    report.notes.append(f"SASS diff of {kept} against the original: {diff.name}")
    return report


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


def _pick_finalist(args, kernel: str, ranked, scorer, tmp: Path, report: Report):
    """Score the search's best few binaries again, longer, and keep the best of those
    scores: a single short timing that won among a hundred is biased low. On a GPU the
    best-scoring finalist must then pass the re-check (every launch, many fresh input
    sets); one that fails is never the winner, and the next is re-checked instead."""
    builds = _build_all(args, kernel, [choice for choice, _ in ranked])
    scored = []
    for rank, ((choice, search_value), built) in enumerate(zip(ranked, builds)):
        path = tmp / f"finalist{rank}.cubin"
        final, why = _score_built(built, path, lambda p: _final_score(scorer, p, args.final_budget_s))
        report.finalists.append(
            {"moves": choice.label(), "search": f"{search_value:.4f}", "final": final.line() if final else why}
        )
        if final:
            scored.append((final.value, rank, choice, built, final, path))
    launches = check_specs(args, kernel) if isinstance(scorer, GpuScorer) else ()
    for _, rank, choice, built, final, path in sorted(scored, key=lambda s: s[:2]):
        if not isinstance(scorer, GpuScorer):
            return choice, built, final
        checked, why = _recheck(scorer, path, launches, args.recheck_sets)
        report.finalists[rank]["final"] += f"; {checked or why}"
        if checked:
            return choice, built, replace(final, detail={**final.detail, "recheck": checked})
    return None


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
            build_cached(args.build_cache, str(args.cubin), kernel, args.noalias, c, args.ptx_level) for c in choices
        ]
    return parallel(min(args.jobs, len(choices)))(
        delayed(build_cached)(args.build_cache, str(args.cubin), kernel, args.noalias, c, args.ptx_level)
        for c in choices
    )


def _final_score(scorer, path: Path, budget_s: float) -> Score:
    if isinstance(scorer, GpuScorer):
        return scorer.score(path, budget_s=budget_s, target_ci_pct=0.5)
    return scorer.score(path)


MAX_PRUNE_ROUNDS = 3  # each round re-scores the winner without each move: bounded cost


def _prune(args, kernel: str, picked, scorer, tmp: Path, report: Report, deadline: float = math.inf):
    """Backward elimination over the winner's moves: score it without each move; while some
    removal scores no worse, drop the removal that scores best and repeat. A move that does
    not pay is a change with nothing to show for it. The contribution table of the last
    round goes into the report. On a GPU a pruned winner must pass the re-check too; if it
    fails, the unpruned winner (which passed) stands. It is an improvement, not a check, so
    it stops at `deadline` (the end of --time): removals not scored by then are listed as
    such and the winner found so far stands."""
    choice, built, final = picked
    for done in range(MAX_PRUNE_ROUNDS):
        if time.monotonic() >= deadline:
            report.notes.append(f"backward elimination stopped at --time after {done} round(s)")
            break
        rows, best = _without_each(args, kernel, choice, final, scorer, tmp, deadline)
        report.contributions = rows
        if best is None or best[2].value > final.value:
            break
        move, smaller, score, smaller_built = best
        report.notes.append(f"pruned {move}: without it the winner scored {score.line()}, with it {final.line()}")
        choice, built, final = smaller, smaller_built, score
    if choice is picked[0] or not isinstance(scorer, GpuScorer):
        return choice, built, final
    path = tmp / "pruned.cubin"
    write_atomic(path, built.data)  # a full disk names the file
    checked, why = _recheck(scorer, path, check_specs(args, kernel), args.recheck_sets)
    if checked:
        return choice, built, replace(final, detail={**final.detail, "recheck": checked})
    report.notes.append(f"the pruned winner failed its re-check ({why}): the unpruned winner stands")
    return picked


def _without_each(args, kernel: str, choice: Choice, final: Score, scorer, tmp: Path, deadline: float = math.inf):
    """(contribution rows, the best removal as (move, choice, score, built) or None); the
    removals are built and scored `--jobs` at a time while `deadline` is ahead."""
    rows: list[dict] = []
    best = None
    moves = choice.moves()
    if len(moves) < 2:
        return rows, None
    smaller = [choice.without(family, index) for family, index in moves]
    step = max(1, args.jobs)
    for start in range(0, len(moves), step):
        if time.monotonic() >= deadline:
            left = len(moves) - start
            rows.append({"move": f"{left} more move(s)", "without": "not scored: --time reached", "effect": "-"})
            break
        chunk = list(zip(moves[start : start + step], smaller[start : start + step]))
        built_chunk = _build_all(args, kernel, [less for _, less in chunk])
        best = _score_removals(args, choice, final, scorer, tmp, chunk, built_chunk, rows, best)
    return rows, best


def _score_removals(args, choice: Choice, final: Score, scorer, tmp: Path, chunk, builds, rows: list, best):
    """Score each removal of one chunk, append its contribution row; the best removal so far."""
    for ((family, index), less), built in zip(chunk, builds):
        score, why = _score_built(
            built, tmp / f"without_{family}_{index}.cubin", lambda path: _final_score(scorer, path, args.final_budget_s)
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
            }
        )
        if score and (best is None or score.value < best[2].value):
            best = (label, less, score, built)
    return best
