"""The Optuna search over a kernel's move space.

Each trial picks which load batches, stall-cut blocks and swaps to apply; candidates are
built and verified on the CPU in parallel (joblib) and each new binary is scored by the
Scorer (GPU: byte check then paired timing; no GPU: static model). What can be known
before scoring is not scored: a choice the verifier, the encoder or nvdisasm rejects, a
binary already scored, the original's own bytes. Such a trial is *pruned* (its reason in
the `pruned` user attribute) and does not count against the budget; a candidate the
scorer rejects (wrong bytes, a fault, a hang) becomes a FAIL trial with its reason in
`failure`. Neither is ever a crash. The study lives in Optuna
storage (SQLite in the output folder by default, or a shared database URL), so a killed
run resumes where it stopped and several workers can share one study.
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from reorder.base.deadline import DeadlineReached, checkpoint, move_on_at
from reorder.base.files import write_atomic
from reorder.base.lifetime import shielded
from reorder.base.stderr import say
from reorder.build import ptxlevel
from reorder.build.space import MAX_SWAPS, Built, Choice, SearchSpace, build_cached
from reorder.search import owners
from reorder.search.budget import Costs, fits
from reorder.search.progress import progress_line
from reorder.search.scoring import Rejected, Score, Scorer
from reorder.search.storagefail import storage_failure

PRUNED_PER_TRIAL = 2  # pruned trials allowed per budgeted one (+ PRUNED_SLACK): a tiny or
PRUNED_SLACK = 10  # mostly illegal space ends the run instead of building until --time
ORIGINAL = "the original's bytes (ratio 1 by definition)"
DUPLICATE = "a binary already scored"
HEARTBEAT_S = 10  # a worker's in-flight trials are marked alive this often
GRACE_S = 60  # a trial not marked alive for this long belonged to a killed worker


@dataclass(frozen=True)
class SearchConfig:
    cubin: Path
    kernel: str
    noalias: bool
    budget: int  # finished trials in the study, resumed ones included
    seconds: float  # wall-clock limit for this run
    jobs: int  # candidates built in parallel
    storage: str
    study_name: str
    seed: int = 0
    heartbeat_s: int = HEARTBEAT_S
    grace_s: int = GRACE_S
    ptx: ptxlevel.PtxLevel | None = None  # the PTX at hand: candidates may be PTX moves first
    build_cache: str | None = None  # the run's folder of built candidates (space.build_cached)
    until: Callable[[Costs], float] | None = None  # where the search must end (time.monotonic), given its costs
    limit_end: float | None = None  # where --time ends (time.monotonic), for the progress lines


def open_storage(url: str, heartbeat_s: int = HEARTBEAT_S, grace_s: int = GRACE_S):
    """Optuna storage for a URL. Databases (sqlite:///file for one host, postgresql://
    for many) get heartbeats: a trial whose worker died is failed after `grace_s` and run
    again once (RetryFailedTrialCallback). `journal:PATH` is Optuna's journal file for
    many processes of one host (no heartbeats there: a killed worker's trial stays RUNNING)."""
    import warnings

    import optuna

    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    if url.startswith("journal:"):
        from optuna.storages.journal import JournalFileBackend

        return optuna.storages.JournalStorage(JournalFileBackend(url[len("journal:") :]))
    return optuna.storages.RDBStorage(
        url,
        heartbeat_interval=heartbeat_s,
        grace_period=grace_s,
        heartbeat_stale_trial_callback=optuna.storages.RetryHeartbeatStaleTrialCallback(1),
    )


class _Heartbeat:
    """Marks this worker's in-flight trials alive from a background thread."""

    def __init__(self, storage, interval_s: int) -> None:
        import threading

        self.storage, self.interval = storage, interval_s
        self.trial_ids: set[int] = set()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        """Beat every interval until stopped. A beat the storage refuses (sqlite locked by
        another process's commit, or a commit cut short by a signal) is skipped, not raised
        out of the thread as a traceback: the next beat marks the trials alive again, well
        within the grace period after which a silent trial is called stale."""
        import optuna

        while not self.stop.wait(self.interval):
            try:
                self.beat()
            except optuna.exceptions.StorageInternalError:
                continue

    def beat(self) -> None:
        if hasattr(self.storage, "record_heartbeat"):
            for trial_id in list(self.trial_ids):
                self.storage.record_heartbeat(trial_id)

    def __enter__(self) -> _Heartbeat:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(timeout=5)


def _open_study(config: SearchConfig, attempts: int = 5):
    """Storage and study, tolerating workers that start together on a fresh database: the
    first creates the schema and the study, the others retry and find them."""
    import optuna
    from sqlalchemy.exc import SQLAlchemyError

    for attempt in range(attempts):
        try:
            storage = open_storage(config.storage, config.heartbeat_s, config.grace_s)
            study = optuna.create_study(
                study_name=config.study_name,
                storage=storage,
                direction="minimize",
                sampler=optuna.samplers.TPESampler(seed=config.seed),
                load_if_exists=True,
            )
            return storage, study
        except (SQLAlchemyError, optuna.exceptions.DuplicatedStudyError) as exc:
            if (refused := storage_failure(exc, config.storage)) is not None:
                raise refused from None  # a full disk is not a race: no retry
            if attempt == attempts - 1:
                raise
            time.sleep(0.5 * (attempt + 1))
    raise AssertionError("unreachable")


def finished_trials(study) -> int:
    """Trials that count against the budget: scored, or failed for a stated reason (a trial
    failed only because its worker died is retried, not counted; a pruned one was never
    scored)."""
    import optuna

    state = optuna.trial.TrialState
    return sum(
        (t.state == state.COMPLETE or (t.state == state.FAIL and "failure" in t.user_attrs))
        and "pruned" not in t.user_attrs
        for t in study.trials
    )


def pruned_trials(study) -> int:
    """Trials settled before scoring (unbuildable, a duplicate, the original)."""
    return sum("pruned" in t.user_attrs for t in study.trials)


def out_of_candidates(study, budget: int) -> bool:
    """True when pruned trials reach the allowance: the space holds too few new legal
    binaries to fill the budget, and building more would only spin until --time."""
    return pruned_trials(study) >= PRUNED_PER_TRIAL * budget + PRUNED_SLACK


def study_name_for(
    cubin: Path, kernel: str, noalias: bool, measured: bool, ptx: ptxlevel.PtxLevel | None = None
) -> str:
    """Stable across runs of the same input, so a rerun resumes the same study (a search with
    PTX at hand is another study than one without)."""
    digest = hashlib.sha256(cubin.read_bytes()).hexdigest()[:12]
    levels = f"-ptx{ptx.digest()}" if ptx else ""
    return f"{kernel}-{digest}{levels}-{'noalias' if noalias else 'alias'}-{'gpu' if measured else 'static'}"


def suggest(trial, space: SearchSpace) -> Choice:
    """The trial's parameters. With PTX at hand, first the PTX decisions (reorder.build.ptxlevel);
    a trial that takes a PTX move then picks one combination of SASS families for the cubin
    ptxas makes of it. Otherwise (and without PTX): one on/off per slice batch, load batch
    and stall-cut block, and up to MAX_SWAPS swap slots (each 'none' or an index)."""
    if space.ptx is not None:
        picks = ptxlevel.sample(trial, space.ptx)
        if picks:
            combo = trial.suggest_categorical(ptxlevel.SASS_PARAM, list(ptxlevel.SASS_COMBOS))
            return Choice(ptx=picks, sass="" if combo == "none" else combo)
    sb = tuple(i for i in range(len(space.slice_batches)) if trial.suggest_categorical(f"sb{i}", [0, 1]))
    lb = tuple(i for i in range(len(space.load_batches)) if trial.suggest_categorical(f"lb{i}", [0, 1]))
    sc = tuple(i for i in range(len(space.stall_cuts)) if trial.suggest_categorical(f"sc{i}", [0, 1]))
    bh = tuple(i for i in range(len(space.barrier_hoists)) if trial.suggest_categorical(f"bh{i}", [0, 1]))
    dh = tuple(i for i in range(len(space.dominator_hoists)) if trial.suggest_categorical(f"dh{i}", [0, 1]))
    swaps = []
    if space.swaps:
        for k in range(MAX_SWAPS):
            pick = trial.suggest_int(f"swap{k}", -1, len(space.swaps) - 1)
            if pick >= 0:
                swaps.append(pick)
    return Choice(lb, sc, tuple(sorted(set(swaps))), sb, barrier_hoists=bh, dominator_hoists=dh)


def choice_of(params: dict, space: SearchSpace) -> Choice:
    """Rebuild a Choice from a finished trial's parameters (for the best trial, on resume)."""
    if space.ptx is not None:
        picks = ptxlevel.picks_of(params, space.ptx)
        if picks:
            combo = str(params.get(ptxlevel.SASS_PARAM, "none"))
            return Choice(ptx=picks, sass="" if combo == "none" else combo)
    sb = tuple(i for i in range(len(space.slice_batches)) if params.get(f"sb{i}"))
    lb = tuple(i for i in range(len(space.load_batches)) if params.get(f"lb{i}"))
    sc = tuple(i for i in range(len(space.stall_cuts)) if params.get(f"sc{i}"))
    bh = tuple(i for i in range(len(space.barrier_hoists)) if params.get(f"bh{i}"))
    dh = tuple(i for i in range(len(space.dominator_hoists)) if params.get(f"dh{i}"))
    swaps = sorted({params[f"swap{k}"] for k in range(MAX_SWAPS) if params.get(f"swap{k}", -1) >= 0})
    return Choice(lb, sc, tuple(swaps), sb, barrier_hoists=bh, dominator_hoists=dh)


def seed_params(space: SearchSpace) -> list[dict]:
    """The hand-chosen configurations every study starts with: each load-grouping family
    alone (all its instances on), stall cuts alone, and each grouping family with the
    stall cuts; with PTX at hand, each PTX placement (reorder.build.ptxlevel.seed_params),
    each other PTX kind alone (reuse, wgmma: kind_seed_params), and each loop move alone at
    each distance or factor. The search then cannot end worse than the
    best single move it could have been told about (up to timing noise). The PTX seeds come
    before the SASS-only ones: on Triton's kernels the loop moves and the wgmma step gave
    1.1-1.8x where SASS-only builds measured 0.996-1.006 (2026-12-02_triton_one_line), and a
    search of big launches may score only a dozen trials."""
    families = {
        "sb": len(space.slice_batches),
        "lb": len(space.load_batches),
        "sc": len(space.stall_cuts),
        "bh": len(space.barrier_hoists),
        "dh": len(space.dominator_hoists),
    }
    off = {f"{f}{i}": 0 for f, n in families.items() for i in range(n)}
    off |= {f"swap{k}": -1 for k in range(MAX_SWAPS)} if space.swaps else {}

    def on(*names: str) -> dict:
        return off | {f"{f}{i}": 1 for f in names for i in range(families[f])}

    combos = [("sb",), ("lb",), ("sc",), ("sb", "sc"), ("lb", "sc"), ("bh",), ("bh", "sc"), ("bh", "sb", "sc")]
    combos += [("dh",), ("dh", "sc"), ("dh", "sb", "sc"), ("dh", "bh", "sb", "sc")]
    sass = [on(*c) for c in combos if all(families[f] for f in c)]
    if space.ptx is None:
        return sass
    ptx_seeds = ptxlevel.seed_params(space.ptx)  # each PTX placement, alone and with stall cuts
    loops = ptxlevel.loop_seed_params(space.ptx)  # each loop move alone, at each distance or factor
    kinds = ptxlevel.kind_seed_params(space.ptx)  # each other kind alone (reuse, wgmma)
    plain = ptxlevel.off_params(space.ptx)
    if not ptx_seeds:
        return [*kinds, *loops, *[plain | p for p in sass]]
    return [ptx_seeds[0], *kinds, *loops, *[plain | p for p in sass], *ptx_seeds[1:]]


def _seed(study, space: SearchSpace, budget: int) -> None:
    """Enqueue the seed configurations (no more than the budget) once, on a fresh study."""
    if study.trials:
        return
    for params in seed_params(space)[:budget]:
        study.enqueue_trial(params, skip_if_exists=True)


def _seen_scores(study) -> dict[str, float]:
    """sha256 -> value of every completed trial: a binary already scored is not scored again."""
    import optuna

    return {
        t.user_attrs["sha256"]: t.value
        for t in study.trials
        if t.state == optuna.trial.TrialState.COMPLETE and "sha256" in t.user_attrs
    }


@dataclass(frozen=True)
class Searched:
    """What a search left: the study, what it measured, and how it ended ('' when it
    reached its budget or ran out of candidates; else why it stopped)."""

    study: object
    costs: Costs
    stopped: str = ""


def run_search(
    config: SearchConfig,
    space: SearchSpace,
    scorer: Scorer,
    progress: Callable[[str], None] = say,
):
    """Run (or resume) the study until `budget` trials are finished or time runs out; return it."""
    return search(config, space, scorer, progress).study


def search(
    config: SearchConfig,
    space: SearchSpace,
    scorer: Scorer,
    progress: Callable[[str], None] = say,
    costs: Costs | None = None,
) -> Searched:
    """Run (or resume) the study until `budget` trials are finished, the space runs out, or the
    search's time is up: `config.until(costs)` (the phase rule, reorder.search.budget, fed
    what this search measures) or else `config.seconds` from now. A round of trials starts
    only when the longest round so far still fits; one in flight at the end is cut, and its
    trials settled (reorder.search.owners), as they are on a signal or any other way out."""
    import warnings

    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    # ask/tell with heartbeats is what we want (our own heartbeat thread keeps trials alive)
    warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed to be used with Study.optimize")
    storage, study = _open_study(config)
    settled = owners.reconcile(study, storage)
    if settled:
        progress(
            f"search: {settled} trial(s) of an earlier run that ended without finishing them: failed, queued again"
        )
    _seed(study, space, config.budget)
    seen = _seen_scores(study)
    original = hashlib.sha256(config.cubin.read_bytes()).hexdigest()
    started = time.monotonic()
    state = _Round(study, costs or Costs())
    with tempfile.TemporaryDirectory(prefix="reorder-search-") as tmp, _Heartbeat(storage, config.heartbeat_s) as beat:
        try:
            while not state.stopped:
                end = config.until(state.costs) if config.until else started + config.seconds
                _one_round(config, space, scorer, state, beat, end, seen, Path(tmp), original, progress)
        except BaseException as exc:
            owners.settle(study, state.open, _why(exc))
            raise
    return Searched(study, state.costs, "" if state.stopped is True else state.stopped)


class _Round:
    """The search loop's running state: the trials asked and not yet told, the costs measured,
    and why it stopped (False while it runs, True at its budget or out of candidates)."""

    def __init__(self, study, costs: Costs) -> None:
        self.study, self.costs = study, costs
        self.open: list = []
        self.stopped: bool | str = False


def _why(exc: BaseException) -> str:
    from reorder.base.lifetime import Terminated

    if isinstance(exc, Terminated):
        return "SIGTERM"
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted (SIGINT)"
    if isinstance(exc, DeadlineReached):
        return "--time reached"
    return f"the run failed: {type(exc).__name__}"


def _one_round(config, space, scorer, state: _Round, beat, end: float, seen, tmp: Path, original, progress) -> None:
    """Ask up to --jobs trials, build them in parallel, score and tell each; or set
    `state.stopped` when the budget is reached, the space is spent or the time is up."""
    import optuna
    from joblib import delayed

    from reorder.base.lifetime import parallel

    study = state.study
    checkpoint()
    optuna.storages.fail_stale_trials(study)
    n = min(config.jobs, config.budget - finished_trials(study))
    if n <= 0:
        state.stopped = True
        return
    if out_of_candidates(study, config.budget):
        progress(
            f"stopping: {pruned_trials(study)} trials pruned before scoring (unbuildable, duplicates, the "
            "original): the space holds too few new legal binaries for the budget"
        )
        state.stopped = True
        return
    if not fits(time.monotonic(), state.costs.round_s, end):
        state.stopped = _time_up(state.costs, end)
        return
    begun = time.monotonic()
    with move_on_at(end) as cut:
        with shielded():
            trials = [study.ask() for _ in range(n)]
            state.open += trials
            for t in trials:
                owners.claim(t)
        beat.trial_ids |= {t._trial_id for t in trials}
        beat.beat()
        choices = [suggest(t, space) for t in trials]
        built_at = time.monotonic()
        built = parallel(config.jobs)(  # workers that die with this process (reorder.base.lifetime)
            delayed(build_cached)(
                config.build_cache, str(config.cubin), config.kernel, config.noalias, c, config.ptx, space.families
            )
            for c in choices
        )
        state.costs = state.costs.seen_build(time.monotonic() - built_at)
        for trial, choice, b in zip(trials, choices, built):
            scored_at = time.monotonic()
            if _finish(study, trial, choice, b, scorer, seen, tmp, original):
                state.costs = state.costs.seen_score(time.monotonic() - scored_at)
            state.open.remove(trial)
            beat.trial_ids.discard(trial._trial_id)
            progress(progress_line(study, finished_trials(study), config.budget, end, config.limit_end))
    if cut.reached:
        settled = owners.settle(study, state.open, "--time reached")
        state.open.clear()
        state.stopped = f"the search's time ran out with {settled} trial(s) in flight (cut; queued for a resumed run)"
        return
    state.costs = state.costs.seen_round(time.monotonic() - begun)


def _time_up(costs: Costs, end: float) -> str:
    left = max(0.0, end - time.monotonic())
    if costs.round_s is None:
        return "no time was left for the search"
    return (
        f"the next round of trials ({costs.round_s:.1f} s, the longest so far) would not finish in the "
        f"{left:.1f} s left"
    )


def _finish(
    study, trial, choice: Choice, built: Built, scorer: Scorer, seen: dict[str, float], tmp: Path, original: str = ""
) -> bool:
    """Settle one built trial: pruned (unbuildable, the original, a duplicate), failed (the
    scorer rejected it) or scored. True when the scorer ran."""
    import optuna

    with shielded():
        trial.set_user_attr("moves", choice.label())
        if built.data is None:  # the verifier, the encoder or nvdisasm said no: nothing to score
            _prune(study, trial, f"build: {built.reason}")
            return False
        trial.set_user_attr("sha256", built.sha256)
        trial.set_user_attr("moved", built.moved)
        if built.sha256 == original:
            _prune(study, trial, ORIGINAL, value=1.0)
            return False
        if built.sha256 not in seen:
            seen.update(_seen_scores(study))  # another worker may have scored it since
        if built.sha256 in seen:
            _prune(study, trial, DUPLICATE, value=seen[built.sha256])
            return False
        if built.sha256 in _being_scored_elsewhere(study, trial):
            _prune(study, trial, "a binary another worker is scoring")
            return False
    path = tmp / f"{built.sha256[:16]}.cubin"
    write_atomic(path, built.data)  # a full disk names the file
    try:
        score = scorer.score(path)
    except Rejected as exc:
        with shielded():
            trial.set_user_attr("failure", str(exc))
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
        return True
    with shielded():
        trial.set_user_attr("ci_low", score.low)
        trial.set_user_attr("ci_high", score.high)
        trial.set_user_attr("measured", score.measured)
        for key, value in score.detail.get("trial_attrs", {}).items():  # a scorer's own record (per-shape ratios)
            trial.set_user_attr(key, value)
        seen[built.sha256] = score.value
        study.tell(trial, score.value)
    return True


def _prune(study, trial, reason: str, value: float | None = None) -> None:
    """Settle a trial without scoring it. With a known value (a duplicate's score, the
    original's 1.0) it completes with that value, so the sampler still learns from it;
    without one (unbuildable) it is Optuna's PRUNED state, which the sampler ranks low."""
    import optuna

    trial.set_user_attr("pruned", reason)
    if value is None:
        study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        return
    trial.set_user_attr("duplicate", True)
    study.tell(trial, value)


def _being_scored_elsewhere(study, trial) -> set[str]:
    """Binaries that an earlier trial (another worker's) is scoring now: the later trial of
    two that built the same binary at once steps aside, so no binary is scored twice."""
    import optuna

    running = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
    return {t.user_attrs["sha256"] for t in running if t.number < trial.number and "sha256" in t.user_attrs}


def best_choice(study, space: SearchSpace) -> tuple[Choice, float] | None:
    """The best completed trial's choice and value (None when nothing completed)."""
    ranked = ranked_choices(study, space, 1)
    return ranked[0] if ranked else None


def ranked_choices(study, space: SearchSpace, count: int) -> list[tuple[Choice, float]]:
    """The `count` best completed trials with distinct binaries, best first. The best of
    many noisy short timings is biased low (the winner's curse), so the finalists are
    timed again, longer, before one is chosen."""
    import optuna

    complete = sorted(
        (t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE), key=lambda t: (t.value, t.number)
    )
    out: list[tuple[Choice, float]] = []
    binaries: set[str] = set()
    for t in complete:
        sha = t.user_attrs.get("sha256", f"trial{t.number}")
        if sha in binaries or t.user_attrs.get("pruned") == ORIGINAL:
            continue
        binaries.add(sha)
        out.append((choice_of(t.params, space), t.value))
        if len(out) == count:
            break
    return out


__all__ = [
    "Score",
    "SearchConfig",
    "best_choice",
    "out_of_candidates",
    "pruned_trials",
    "ranked_choices",
    "run_search",
    "seed_params",
    "study_name_for",
    "suggest",
]
