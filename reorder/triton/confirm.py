"""A twin the autotuner would pick over its own config must first beat it in paired rounds.

Why. Triton's autotuner times every config once with its do_bench and keeps the fastest.
On kernels of 10-20 us that bench moves more than two builds of one config differ
(2026-12-04_triton_kinds: in one run of three the autotuner kept a recurrence twin 0.88x as
fast as its own config; in run 1 the plain autotuner itself kept a config 1.94x slower than
its neighbour), and each twin is one more draw: the more twins, the likelier that a slower
one wins by chance. So whenever a twin's time beats its own config's, `rt.install()` has the
two timed against each other before the autotuner compares anything:

- ROUNDS paired rounds (fewer when BUDGET_S runs out first, never fewer than MIN_ROUNDS), each
  in a random order, each config launched as the autotuner launches it (its pre_hook and the
  autotuner's reset_to_zero / restore_value around it): once after a launch of itself (L2
  warm) and once after Triton's cache clear (L2 cold), each between two CUDA events that a
  GPU spin precedes, so that the host's work for the launch (Triton's launcher, a noalias
  twin's argument check) is done before the first event and only the GPU's time is
  measured (without the spin, a 20 us kernel's twin measured slower by its host-side check);
- the twin keeps its time only when the 95% bootstrap interval of time(twin) / time(config)
  lies below MARGIN (0.99) in one L2 state and does not lie above 1 in the other
  (timing.stats): a gain under 1% is not worth a build the bench and the user's launch may
  rank apart (a branch-hoist twin measured 0.3% faster here was 0.6% slower in the study's
  own paired timing);
- otherwise its time becomes the config's times a hair more, so the autotuner's minimum never
  picks it over the config it was built from (it may still beat the other configs' times,
  then its own config wins: both are the same kernel but for reorder's moves).

A kept twin whose time also beats the fastest plain config timed so far in this run (the
plain autotuner's pick: `rt.with_reorder` lists every config before any twin), when that is
another config, is timed against it too, and is not kept when slower beyond the interval in
either L2 state: Triton's do_bench ranks with a cold L2, so a twin of one config can win the
autotuner's ranking over another config cold and lose to it warm (cumsum 1024 x 4096 in
2026-12-04_triton_confirm_diag: 1.050x cold, 0.974x warm against the plain pick).

A twin that does not beat its config's time is left as the autotuner timed it (the minimum
already prefers the config: configs come first in `rt.with_reorder`'s list). Nothing else
changes: plain configs, configs of other autotuners, the user's do_bench. What it costs: at
most BUDGET_S per pair of builds timed (a twin and its config, a twin and the fastest plain
config) and RUN_BUDGET_S per key (a twin judged after that is not kept), once per key (the
autotuner caches its pick).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from reorder.triton.compile import config_kwargs
from reorder.triton.request import split_options
from reorder.triton.tune import label_of, original_key, original_of, twin_of
from timing.stats import RatioEstimate, paired_ratio_ci

ROUNDS = 40
MIN_ROUNDS = 10
BUDGET_S = 1.0
RUN_BUDGET_S = 10.0  # per autotuner run (one key): twins past it are not kept, so the autotune stays bounded
SEED = 20261204
MARGIN = 0.99  # a twin must be shown at least 1% faster: the autotuner's bench is not the user's launch
NUDGE = 1 + 1e-6  # a rejected twin's times: its config's, a hair more
HEAD_START_CYCLES = 400_000  # a GPU spin before each timed launch (~0.2 ms): the host's launch work is done by then
Round = tuple[float, float, float, float]  # config warm, twin warm, config cold, twin cold (ms)
clock = time.monotonic  # the budgets' clock


@dataclass(frozen=True, slots=True)
class Verdict:
    """The paired rounds' result: time(twin) / time(config) warm and cold, and the decision."""

    warm: RatioEstimate
    cold: RatioEstimate

    @property
    def keeps(self) -> bool:
        return keeps(self.warm, self.cold)


@dataclass(frozen=True, slots=True)
class Against:
    """The twin timed against the fastest plain config of the run (another config than its own)."""

    plain: str  # that config's label
    verdict: Verdict | None
    failed: str = ""

    @property
    def allows(self) -> bool:
        return self.verdict is not None and not slower(self.verdict.warm, self.verdict.cold)

    def words(self) -> str:
        if self.verdict is None:
            return f"against the fastest plain config {self.plain}: not timed ({self.failed})"
        return f"against the fastest plain config {self.plain} {_ratios(self.verdict)}"


@dataclass(frozen=True, slots=True)
class Confirmation:
    """One twin judged at one launch, kept on the autotuner (`kernel.reorder_confirmations`,
    in the order judged): the twin's name, the verdict, or why there is none, and where it was
    also timed against the fastest plain config, that verdict."""

    twin: str
    verdict: Verdict | None
    failed: str
    against: Against | None = None

    @property
    def kept(self) -> bool:
        return self.verdict is not None and self.verdict.keeps and (self.against is None or self.against.allows)

    def line(self) -> str:
        if self.verdict is None:
            return f"{self.twin}: not kept, not confirmed ({self.failed})"
        more = f"; {self.against.words()}" if self.against is not None else ""
        return f"{self.twin}: time / its config's {_ratios(self.verdict)}{more}: " + (
            "kept" if self.kept else "not kept"
        )


def _ratios(v: Verdict) -> str:
    w, c = v.warm, v.cold
    return (
        f"{w.ratio:.3f} [{w.low:.3f}, {w.high:.3f}] warm, {c.ratio:.3f} [{c.low:.3f}, {c.high:.3f}] cold, "
        f"{w.n_rounds} rounds"
    )


def twin_label(config: Any) -> str:
    """A twin's name: its config's label and its rank (`BLOCK1024-num_warps4 twin:2`)."""
    kwargs = config_kwargs(config)
    request = split_options(kwargs.get("ptx_options"))[0]
    rank = f" twin:{request.rank}" if request is not None and request.mode == "twin" else " (reorder)"
    return label_of(kwargs) + rank


def keeps(warm: RatioEstimate, cold: RatioEstimate) -> bool:
    """At least MARGIN faster beyond the interval in one L2 state, not slower beyond it in the other."""
    return (warm.high < MARGIN or cold.high < MARGIN) and not slower(warm, cold)


def slower(warm: RatioEstimate, cold: RatioEstimate) -> bool:
    """Slower beyond the interval in either L2 state."""
    return warm.low > 1.0 or cold.low > 1.0


def nudged(config_times: Any) -> Any:
    """Times a hair above the config's (a float or do_bench's quantile list)."""
    if isinstance(config_times, (int, float)):
        return config_times * NUDGE
    return [t * NUDGE for t in config_times]


def first(times: Any) -> float:
    """The figure the autotuner's minimum compares first (do_bench's median)."""
    if isinstance(times, (int, float)):
        return float(times)
    return float(times[0]) if len(times) else math.inf


def judge(rounds: Sequence[Round]) -> Verdict:
    """Verdict from rounds of (config warm, twin warm, config cold, twin cold) times."""
    cw, tw, cc, tc = zip(*rounds)
    return Verdict(paired_ratio_ci(cw, tw, rng=SEED), paired_ratio_ci(cc, tc, rng=SEED))


def paired_rounds(config_call: Callable[[], None], twin_call: Callable[[], None]) -> list[Round]:
    """Time the two launches in paired rounds (see the module docstring), on the device and
    stream Triton's own benchmark uses."""
    from triton import runtime

    driver = runtime.driver.active
    device = driver.get_device_interface()
    cache = driver.get_empty_cache_for_benchmark()
    order = random.Random(SEED)
    calls = (config_call, twin_call)
    config_call()
    twin_call()
    device.synchronize()
    head_start = getattr(device, "_sleep", None) or (lambda cycles: None)
    out: list[Round] = []
    started = clock()
    while len(out) < ROUNDS and (len(out) < MIN_ROUNDS or clock() - started < BUDGET_S):
        events = {}
        for which in order.sample((0, 1), 2):
            warm = [device.Event(enable_timing=True) for _ in range(2)]
            cold = [device.Event(enable_timing=True) for _ in range(2)]
            calls[which]()
            head_start(HEAD_START_CYCLES)
            warm[0].record()
            calls[which]()
            warm[1].record()
            driver.clear_cache(cache)
            head_start(HEAD_START_CYCLES)
            cold[0].record()
            calls[which]()
            cold[1].record()
            events[which] = (warm, cold)
        device.synchronize()
        (cw, cc), (tw, tc) = events[0], events[1]
        out.append(
            (cw[0].elapsed_time(cw[1]), tw[0].elapsed_time(tw[1]), cc[0].elapsed_time(cc[1]), tc[0].elapsed_time(tc[1]))
        )
    return out


def _launcher(tuner: Any, args: tuple, meta: dict, config: Any) -> Callable[[], None]:
    """One launch of `config` as Triton's Autotuner._bench makes it (hooks included)."""
    current = dict(meta, **config.all_kwargs())
    full = {**tuner.nargs, **current}

    def call() -> None:
        if config.pre_hook:
            config.pre_hook(full)
        tuner.pre_hook(full)
        tuner.fn.run(*args, **current)
        tuner.post_hook(full, exception=None)

    return call


def _judged(config_call: Callable[[], None], twin_call: Callable[[], None], spent: list) -> tuple[Verdict | None, str]:
    """The paired rounds' verdict on the two launches, or none and why (the key's RUN_BUDGET_S
    spent, a launch failed); `spent` counts the key's seconds of judging."""
    if spent[0] >= RUN_BUDGET_S:
        return None, f"this key's {RUN_BUDGET_S:g} s of confirmation are spent"
    started = clock()
    try:
        return judge(paired_rounds(config_call, twin_call)), ""
    except Exception as e:  # noqa: BLE001 - a twin that cannot be judged is not kept
        return None, f"{type(e).__name__}: {e}"
    finally:
        spent[0] += clock() - started


def confirming(bench: Callable[..., Any]) -> Callable[..., Any]:
    """Autotuner._bench wrapped: each config's times are kept per launch (the autotuner's
    `nargs` of this run), and a twin faster than its config is judged (module docstring)."""

    def _bench(self: Any, *args: Any, config: Any, **meta: Any) -> Any:
        times = bench(self, *args, config=config, **meta)
        seen = self.__dict__.get("_reorder_seen")
        if seen is None or seen[0] is not self.nargs:
            seen = (self.nargs, {}, [0.0])  # this run's launch, its configs' times, seconds spent judging
            self.__dict__["_reorder_seen"] = seen
        key = original_key(config)
        if not twin_of(config):
            seen[1][key] = (config, times)
            return times
        original_times = seen[1][key][1] if key in seen[1] else None  # None: its config was pruned away
        if not math.isfinite(first(times)) or (original_times is not None and first(times) >= first(original_times)):
            return times
        rejected = nudged(original_times) if original_times is not None else nudged([math.inf] * 3)
        record = self.__dict__.setdefault("reorder_confirmations", [])
        name = twin_label(config)
        twin_call = _launcher(self, args, meta, config)
        verdict, failed = _judged(_launcher(self, args, meta, original_of(config)), twin_call, seen[2])
        if verdict is None:
            record.append(Confirmation(name, None, failed))
            return rejected
        against = None
        fastest = min(seen[1].items(), key=lambda item: first(item[1][1]), default=None)
        if verdict.keeps and fastest is not None and fastest[0] != key and first(times) < first(fastest[1][1]):
            plain = fastest[1][0]
            against = Against(
                label_of(config_kwargs(plain)), *_judged(_launcher(self, args, meta, plain), twin_call, seen[2])
            )
        confirmation = Confirmation(name, verdict, "", against)
        record.append(confirmation)
        return times if confirmation.kept else rejected

    _bench.reorder_confirming = True  # type: ignore[attr-defined]
    _bench.wrapped = bench  # type: ignore[attr-defined]
    return _bench


def install_confirmation() -> None:
    """Wrap Triton's Autotuner._bench (idempotent)."""
    from triton.runtime.autotuner import Autotuner

    if not getattr(Autotuner._bench, "reorder_confirming", False):
        Autotuner._bench = confirming(Autotuner._bench)


def uninstall_confirmation() -> None:
    from triton.runtime.autotuner import Autotuner

    if getattr(Autotuner._bench, "reorder_confirming", False):
        Autotuner._bench = Autotuner._bench.wrapped
