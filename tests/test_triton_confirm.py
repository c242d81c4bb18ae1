"""The autotuner's confirmation of a twin (reorder.triton.confirm): the decision on paired
rounds, and the wrapper around Autotuner._bench, on a stand-in autotuner (no GPU)."""

from __future__ import annotations

import math

import pytest

from reorder.triton import confirm
from timing.stats import RatioEstimate


def _est(ratio: float, low: float, high: float) -> RatioEstimate:
    return RatioEstimate(ratio, low, high, 0.95, 40, 2000)


FAST = _est(0.9, 0.88, 0.92)
SLOW = _est(1.1, 1.08, 1.12)
SAME = _est(1.0, 0.99, 1.01)
HAIR = _est(0.995, 0.993, 0.997)  # faster beyond its interval, by less than 1%


@pytest.mark.parametrize(
    ("warm", "cold", "kept"),
    [
        (FAST, FAST, True),
        (FAST, SAME, True),
        (SAME, FAST, True),
        (SAME, SAME, False),  # not shown faster
        (HAIR, HAIR, False),  # not shown 1% faster
        (FAST, SLOW, False),  # faster warm, slower cold: the cumsum case of the one-line study
        (SLOW, FAST, False),
        (SLOW, SLOW, False),
    ],
)
def test_a_twin_is_kept_only_when_faster_in_one_l2_state_and_not_slower_in_the_other(warm, cold, kept):
    assert confirm.keeps(warm, cold) is kept


def _rounds(warm: float, cold: float, n: int = 30) -> list:
    """Rounds where the twin takes `warm` / `cold` times the config, with +-1% alternating jitter."""
    out = []
    for k in range(n):
        jitter = 1 + (0.01 if k % 2 else -0.01)
        out.append((10.0, 10.0 * warm * jitter, 20.0, 20.0 * cold / jitter))
    return out


def test_the_verdict_on_rounds_follows_the_times():
    assert confirm.judge(_rounds(0.9, 0.9)).keeps
    assert not confirm.judge(_rounds(0.9, 1.1)).keeps
    assert not confirm.judge(_rounds(1.0, 1.0)).keeps
    verdict = confirm.judge(_rounds(0.8, 1.0))
    assert verdict.warm.high < 1 and verdict.keeps


def test_a_rejected_twin_gets_times_just_above_its_configs():
    assert confirm.nudged([1.0, 0.9, 1.1]) == [1.0 * confirm.NUDGE, 0.9 * confirm.NUDGE, 1.1 * confirm.NUDGE]
    assert confirm.nudged(2.0) == 2.0 * confirm.NUDGE
    assert min([[1.0, 0.9, 1.1], confirm.nudged([1.0, 0.9, 1.1])]) == [1.0, 0.9, 1.1]
    assert confirm.first([3.0, 2.0, 4.0]) == 3.0 and confirm.first(5) == 5.0 and confirm.first([]) == math.inf


class _Config:
    """A stand-in triton.Config: keyword arguments and a pre_hook."""

    def __init__(self, kwargs: dict, pre_hook=None) -> None:
        self.kwargs = dict(kwargs)
        self.pre_hook = pre_hook

    def all_kwargs(self) -> dict:
        return dict(self.kwargs)


class _Tuner:
    """What the wrapper reads of Triton's Autotuner: nargs, fn.run, pre_hook, post_hook."""

    def __init__(self) -> None:
        self.nargs = {"x": 1}
        self.launched: list = []
        tuner = self

        class _Fn:
            def run(self, *args, **kwargs):
                tuner.launched.append(kwargs.get("ptx_options"))

        self.fn = _Fn()

    def pre_hook(self, nargs, reset_only=False):
        pass

    def post_hook(self, nargs, exception=None):
        pass


def _twin_of(config: _Config, rank: int = 1) -> _Config:
    from reorder.triton.request import Request
    from reorder.triton.tune import marked_config

    return marked_config(config, Request("twin", rank=rank))


@pytest.fixture
def wrapped(monkeypatch):
    """Autotuner._bench wrapped around a bench that returns the times in `times` (by marker),
    with the paired rounds replaced by a verdict the test sets."""
    state = {"times": {}, "verdict": None, "asked": 0, "queue": []}  # queue: rounds given first, in order

    def bench(self, *args, config, **meta):
        return state["times"][config.kwargs.get("ptx_options")]

    def rounds(config_call, twin_call):
        state["asked"] += 1
        config_call()
        twin_call()
        if state["queue"]:
            return state["queue"].pop(0)
        if state["verdict"] is None:
            raise RuntimeError("no GPU")
        return state["verdict"]

    monkeypatch.setattr(confirm, "paired_rounds", rounds)
    return state, confirm.confirming(bench)


def test_the_wrapper_confirms_only_a_twin_that_beats_its_config(wrapped):
    state, bench = wrapped
    tuner, base = _Tuner(), _Config({"BLOCK": 64})
    twin = _twin_of(base)
    marker = twin.kwargs["ptx_options"]
    state["times"] = {None: [1.0, 0.9, 1.1], marker: [1.2, 1.1, 1.3]}
    assert bench(tuner, config=base) == [1.0, 0.9, 1.1]
    assert bench(tuner, config=twin) == [1.2, 1.1, 1.3] and state["asked"] == 0  # slower: left as timed

    state["times"][marker] = [0.8, 0.7, 0.9]
    state["verdict"] = _rounds(0.8, 0.8)
    assert bench(tuner, config=twin) == [0.8, 0.7, 0.9] and state["asked"] == 1  # confirmed: kept
    assert tuner.launched == [None, marker]  # the original launched without the marker, then the twin

    state["verdict"] = _rounds(1.0, 1.0)
    assert bench(tuner, config=twin) == confirm.nudged([1.0, 0.9, 1.1])  # not confirmed: just above its config

    state["verdict"] = None  # the rounds fail: not kept
    assert bench(tuner, config=twin) == confirm.nudged([1.0, 0.9, 1.1])
    lines = [c.line() for c in tuner.reorder_confirmations]
    assert len(lines) == 3 and all(line.startswith("BLOCK64 twin:1: ") for line in lines)
    assert lines[0].endswith(": kept") and lines[1].endswith(": not kept") and "no GPU" in lines[2]


def test_a_twin_whose_config_was_not_timed_in_this_run_needs_the_rounds_to_stay(wrapped):
    state, bench = wrapped
    base = _Config({"BLOCK": 64})
    twin = _twin_of(base, rank=2)
    marker = twin.kwargs["ptx_options"]
    state["times"] = {None: [1.0, 0.9, 1.1], marker: [0.5, 0.4, 0.6]}
    tuner = _Tuner()
    bench(tuner, config=base)
    tuner.nargs = {"x": 2}  # the autotuner's next run (another key): the config's earlier times do not count
    state["verdict"] = _rounds(1.0, 1.0)
    assert math.isinf(confirm.first(bench(tuner, config=twin)))
    state["verdict"] = _rounds(0.5, 0.5)
    assert bench(tuner, config=twin) == [0.5, 0.4, 0.6] and state["asked"] == 2


def test_plain_configs_and_other_autotuners_are_left_as_timed(wrapped):
    state, bench = wrapped
    tuner = _Tuner()
    a, b = _Config({"BLOCK": 64}), _Config({"BLOCK": 128})
    state["times"] = {None: [3.0, 2.0, 4.0]}
    assert bench(tuner, config=a) == [3.0, 2.0, 4.0] and bench(tuner, config=b) == [3.0, 2.0, 4.0]
    assert state["asked"] == 0


def test_the_original_of_a_twin_is_the_users_config():
    from reorder.triton.tune import original_of

    def hook(nargs):
        return None

    base = _Config({"BLOCK": 64, "ptx_options": "-O3"}, pre_hook=hook)
    from reorder.triton.request import Request
    from reorder.triton.tune import marked_config

    twin = marked_config(base, Request("twin", noalias=True, rank=1))
    assert twin.pre_hook is not hook  # the noalias guard wraps it
    back = original_of(twin)
    assert back.kwargs == base.kwargs and back.pre_hook is hook


def test_install_wraps_tritons_autotuner_once_and_uninstall_restores_it(monkeypatch):
    triton = pytest.importorskip("triton")
    from triton.runtime.autotuner import Autotuner

    import reorder.triton as rt

    runtime = triton.knobs.runtime
    monkeypatch.setattr(runtime, "add_stages_inspection_hook", runtime.add_stages_inspection_hook)
    monkeypatch.setattr(Autotuner, "_bench", Autotuner._bench)
    plain = Autotuner._bench
    rt.install(say=None)
    rt.install(say=None)
    assert Autotuner._bench.reorder_confirming and Autotuner._bench.wrapped is plain
    rt.uninstall()
    assert Autotuner._bench is plain
    rt.install(say=None, confirm=False)
    assert Autotuner._bench is plain


def test_install_refuses_a_confirm_that_is_not_a_bool():
    from reorder.base.errors import InputError
    from reorder.triton import hook

    with pytest.raises(InputError, match=r"^rt.install: confirm='yes': expected True or False$"):
        hook.install(confirm="yes")


def test_twins_past_a_keys_confirmation_budget_are_not_kept(wrapped, monkeypatch):
    """Judging stops at RUN_BUDGET_S per autotuner run: a later twin that beats its config
    is not kept and says why; the next run (another key) starts a new budget."""
    state, bench = wrapped
    clock = iter(range(0, 1000, 6))  # each judging takes 6 s of the monotonic clock
    monkeypatch.setattr(confirm, "clock", lambda: float(next(clock)))
    tuner = _Tuner()
    bases = [_Config({"BLOCK": b}) for b in (64, 128, 256)]
    twins = [_twin_of(b) for b in bases]
    state["times"] = {None: [1.0, 0.9, 1.1], twins[0].kwargs["ptx_options"]: [0.5, 0.4, 0.6]}
    state["verdict"] = _rounds(0.5, 0.5)
    for base in bases:
        bench(tuner, config=base)
    # the second twin's own rounds end at 12 s: its rounds against the fastest plain config are not run
    assert [bench(tuner, config=t) for t in twins] == [[0.5, 0.4, 0.6]] + [confirm.nudged([1.0, 0.9, 1.1])] * 2
    lines = [c.line() for c in tuner.reorder_confirmations]
    assert state["asked"] == 2 and "BLOCK64: not timed (this key's 10 s" in lines[1]
    assert "confirmation are spent" in lines[-1]
    tuner.nargs = {"x": 3}
    bench(tuner, config=bases[0])
    assert bench(tuner, config=twins[0]) == [0.5, 0.4, 0.6] and state["asked"] == 3


def _three_configs(state):
    """Configs BLOCK 64 / 128 / 256 and each one's first twin (all under one marker)."""
    bases = [_Config({"BLOCK": b}) for b in (64, 128, 256)]
    state["times"] = {None: None}
    return bases, [_twin_of(b) for b in bases]


def _timed(state, tuner, bench, bases, times):
    for base, t in zip(bases, times):
        state["times"][None] = t
        bench(tuner, config=base)


def test_a_twin_faster_cold_but_slower_warm_than_the_fastest_plain_config_is_not_kept(wrapped):
    """Triton ranks cold: a twin of BLOCK128 that beats its config and, cold, the fastest
    plain config BLOCK64, but is slower than BLOCK64 warm, would make the autotuner pick a
    build slower warm than the plain autotuner's pick."""
    state, bench = wrapped
    tuner = _Tuner()
    bases, twins = _three_configs(state)
    _timed(state, tuner, bench, bases, ([1.0, 0.9, 1.1], [1.2, 1.1, 1.3], [2.0, 1.9, 2.1]))
    state["times"][twins[1].kwargs["ptx_options"]] = [0.9, 0.8, 1.0]
    state["queue"] = [_rounds(0.8, 0.8), _rounds(1.05, 0.9)]  # against BLOCK128, then against BLOCK64
    assert bench(tuner, config=twins[1]) == confirm.nudged([1.2, 1.1, 1.3]) and state["asked"] == 2
    line = tuner.reorder_confirmations[-1].line()
    assert "against the fastest plain config BLOCK64 1.050" in line and line.endswith(": not kept")


def test_a_twin_not_slower_than_the_fastest_plain_config_in_either_state_is_kept(wrapped):
    state, bench = wrapped
    tuner = _Tuner()
    bases, twins = _three_configs(state)
    _timed(state, tuner, bench, bases, ([1.0, 0.9, 1.1], [1.2, 1.1, 1.3], [2.0, 1.9, 2.1]))
    state["times"][twins[1].kwargs["ptx_options"]] = [0.9, 0.8, 1.0]
    state["queue"] = [_rounds(0.8, 0.8), _rounds(1.0, 0.9)]
    assert bench(tuner, config=twins[1]) == [0.9, 0.8, 1.0] and state["asked"] == 2
    assert tuner.reorder_confirmations[-1].kept


def test_only_a_twin_that_would_be_the_pick_over_another_config_is_timed_against_it(wrapped):
    """No second rounds when the twin's own config is the fastest plain one, or when the twin's
    time does not beat the fastest plain config's (the autotuner would not pick it over that)."""
    state, bench = wrapped
    tuner = _Tuner()
    bases, twins = _three_configs(state)
    _timed(state, tuner, bench, bases, ([1.0, 0.9, 1.1], [1.2, 1.1, 1.3], [2.0, 1.9, 2.1]))
    state["verdict"] = _rounds(0.8, 0.8)
    state["times"][twins[0].kwargs["ptx_options"]] = [0.8, 0.7, 0.9]
    assert bench(tuner, config=twins[0]) == [0.8, 0.7, 0.9] and state["asked"] == 1  # its config is the fastest
    state["times"][twins[2].kwargs["ptx_options"]] = [1.5, 1.4, 1.6]
    assert bench(tuner, config=twins[2]) == [1.5, 1.4, 1.6] and state["asked"] == 2  # beats BLOCK256 only
    assert all(c.against is None for c in tuner.reorder_confirmations)
