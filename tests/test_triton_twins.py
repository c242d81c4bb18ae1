"""Twins (reorder.triton.twins) and the one line around them: `rt.with_reorder` marks K twins
per config, the stages hook gives each the K-th build of its config's list, `rt.verify`
names what it proved per build, `rt.pruned` keeps the user's pruning; through Triton's own
compile for sm_90 without a GPU, on a `tl.range` kernel under `@triton.heuristics`."""

from __future__ import annotations

import pytest

from reorder.triton import twins
from reorder.triton.request import Request, parse_token, split_options
from reorder.triton.tune import pruned, twin_of, with_reorder

triton = pytest.importorskip("triton")


@pytest.fixture
def triton_env(tmp_path, monkeypatch):
    """Private Triton and reorder caches, and the hook slot restored afterwards."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    monkeypatch.setenv("REORDER_CACHE", str(tmp_path / "reorder-cache"))
    previous = triton.knobs.runtime.add_stages_inspection_hook
    yield tmp_path
    triton.knobs.runtime.add_stages_inspection_hook = previous


def _args(n: int = 4096):
    from reorder.suite.triton_kernels import StandInTensor, TensorArg

    return StandInTensor(TensorArg((64, n), "float32"), 0x10000), StandInTensor(TensorArg((64,), "float32"), 0x20000), n


# ---------------------------------------------------------------- markers and configs


def test_a_twin_marker_reads_back_and_out_of_range_ranks_are_one_line():
    from reorder.base.errors import InputError

    ask = Request("twin", noalias=True, rank=2).stamped()
    assert parse_token(ask.token()) == ask and ask.token().startswith("--reorder=twin:2,noalias,rev:")
    for bad in ("--reorder=twin:0", "--reorder=twin:17", "--reorder=twin:x"):
        with pytest.raises(InputError, match="twin:K"):
            parse_token(bad)


def test_with_reorder_gives_each_config_k_twins_and_a_cluster_config_none(capsys):
    configs = [triton.Config({"BLOCK": 256}, num_warps=4), triton.Config({"BLOCK": 256}, num_warps=4, num_ctas=2)]
    axis = with_reorder(configs, Request(noalias=True))
    assert axis[:2] == configs and len(axis) == 2 + twins_count()
    asks = [split_options(c.kwargs["ptx_options"])[0] for c in axis[2:]]
    assert [a.rank for a in asks] == [1, 2, 3] and all(a.mode == "twin" and a.noalias and a.rev for a in asks)
    assert "num_ctas = 2" in capsys.readouterr().err
    assert len(with_reorder(configs[:1], twins=0)) == 2  # the one static `moves` twin of before
    (search,) = with_reorder(configs[:1], Request("search", budget=2))[1:]
    assert split_options(search.kwargs["ptx_options"])[0].mode == "search"


def twins_count() -> int:
    from reorder.triton.tune import TWINS

    return TWINS


def test_pruned_lets_the_users_pruning_decide_among_originals_and_keeps_their_twins():
    configs = [triton.Config({"BLOCK": b}, num_warps=4) for b in (128, 256, 512)]
    axis = with_reorder(configs)
    seen = []

    def early(cs, named_args, **kwargs):
        seen.append(len(cs))
        return [c for c in cs if c.kwargs["BLOCK"] != 512]

    def model(**kwargs):
        assert "ptx_options" not in kwargs  # the perf model sees originals only
        return kwargs["BLOCK"]

    kept = pruned({"early_config_prune": early, "perf_model": model, "top_k": 1})["early_config_prune"](axis, {})
    assert seen == [3]  # the user's function saw the three originals, not the twins
    assert [c.kwargs["BLOCK"] for c in kept] == [128] * (1 + twins_count())
    assert sum(twin_of(c) for c in kept) == twins_count()


# ---------------------------------------------------------------- the list


def test_twin_k_compiles_menus_until_it_has_k_builds_of_their_own_bytes(tmp_path, monkeypatch):
    """The list is lazy: twin 2 compiles the first menus only, a menu that compiles to the
    config's own bytes or an earlier build's is skipped, a menu ptxas refuses too, and what
    was compiled is read back without a compiler."""
    monkeypatch.setenv("REORDER_CACHE", str(tmp_path))
    moved = tuple(twins.Moved(f"m{k}", f"ptx {k}") for k in range(6))
    monkeypatch.setattr(twins, "moved_menus", lambda ptx, noalias: iter(moved))
    made = {"ptx 0": b"own", "ptx 1": b"A", "ptx 2": b"A", "ptx 3": None, "ptx 4": b"B", "ptx 5": b"C"}
    asked = []

    def stage(text: str) -> bytes:
        asked.append(text)
        if made[text] is None:
            raise RuntimeError("ptxas refused it")
        return made[text]

    first_two = twins.ranked(b"own", "ptx", stage, True, upto=2)
    assert [(b.name, b.data) for b in first_two] == [("m1", b"A"), ("m4", b"B")]
    assert asked == ["ptx 0", "ptx 1", "ptx 2", "ptx 3", "ptx 4"]  # m5 never compiled
    assert [b.name for b in twins.ranked(b"own", "ptx", None, True)] == ["m1", "m4"]  # kept, no compiler
    assert [b.name for b in twins.ranked(b"own", "ptx", stage, True)] == ["m1", "m4", "m5"]
    assert asked[-1] == "ptx 5" and len(asked) == 6
    assert twins.describe(first_two[0], 1).startswith("twin 1: m1, PTX moves compiled by the config's own ptxas")


@pytest.fixture
def one_menu(monkeypatch):
    """The twin list built from one loop menu (the whole space takes a minute per config)."""
    monkeypatch.setattr(twins, "MENUS", (twins.Menu("loop:unroll2", (("loop", "unroll2"),)),))


def test_the_hook_serves_each_twin_its_build_and_rt_verify_says_what_it_checked(triton_env, one_menu):
    """Through autotune(heuristics(jit)): the heuristic's EVEN_N is computed for the compile
    (it failed to bind before), twin 1 is the unrolled build, verified legal, twin 2 has no
    build and keeps the compiler's cubin; without a GPU rt.verify is not ok and says why."""
    import reorder.triton as rt
    from reorder.triton.compile import compile_call
    from tests.triton_twin_kernels import row_sums

    rt.install(say=None)
    configs = [triton.Config({"BLOCK": 256}, num_warps=1)]
    kernel = triton.autotune(rt.with_reorder(configs, rt.Request(noalias=True), twins=2), key=["n"])(row_sums)
    plain, first, second = (compile_call(kernel, *_args(), arch=90, **c.all_kwargs()) for c in kernel.configs)
    assert plain.values["EVEN_N"] is True
    assert first.cubin != plain.cubin and first.kernel.metadata.reorder.startswith("twin 1: loop:unroll2")
    assert second.cubin == plain.cubin and "has 1 build(s) of its own bytes" in second.kernel.metadata.reorder
    from reorder.triton.confirm import Confirmation

    kernel.reorder_confirmations = [Confirmation("BLOCK256-num_warps1 twin:1", None, "RuntimeError: no GPU")]
    checked = rt.verify(kernel, *_args(), grid=(64,), arch=90, outputs=["y_ptr"])
    one, two = checked
    assert one.legal and one.request == "twin:1" and one.check.startswith("not checked: no GPU")
    assert two.same_binary and two.check == "same binary" and two.ok
    assert not checked.ok and "NOT ok" in checked.table()
    assert "confirmed against its config: BLOCK256-num_warps1 twin:1: not kept, not confirmed" in checked.table()


def test_an_in_place_loop_is_left_to_the_search(triton_env, one_menu):
    """A kernel that overwrites its rows chunk by chunk: the affine proof opens its loop (the
    search and `reorder ptx-loops` may move it), and the menus leave it alone (Prefetch on an
    in-place pass measured slower), so its twin keeps the compiler's cubin."""
    import reorder.triton as rt
    from reorder.ptx.model.model import parse_module
    from reorder.ptx.moves.prefetch import in_place_loops, movable_loops
    from reorder.suite.triton_kernels import StandInTensor, TensorArg
    from reorder.triton.compile import compile_call
    from tests.triton_twin_kernels import scale_in_place

    rt.install(say=None)
    configs = [triton.Config({"BLOCK": 512}, num_warps=4)]
    kernel = triton.autotune(rt.with_reorder(configs, rt.Request(noalias=True), twins=1), key=["n"])(scale_in_place)
    args = (StandInTensor(TensorArg((64, 4096), "float32"), 0x10000), 4096)
    plain, twin = (compile_call(kernel, *args, arch=90, **c.all_kwargs()) for c in kernel.configs)
    function = parse_module(plain.kernel.asm["ptx"]).kernels[0]
    assert in_place_loops(function, True) == frozenset(movable_loops(function, True, False)) != frozenset()
    assert twin.cubin == plain.cubin


def test_a_failing_heuristic_is_one_line(triton_env):
    from reorder.base.errors import InputError
    from reorder.triton.compile import compile_call
    from tests.triton_twin_kernels import row_sums_broken

    with pytest.raises(InputError, match=r"heuristics value 'EVEN_N' failed.*KeyError"):
        compile_call(row_sums_broken, *_args(), arch=90, BLOCK=256)


def test_verification_is_ok_only_when_every_build_was_proven():
    from reorder.triton.prove import Verification, Verified

    def row(check: str) -> Verified:
        return Verified("c", "k", "twin:1", check == "same binary", True, "", check, "")

    assert Verification([row("identical"), row("same binary")]).ok
    assert not Verification([row("identical"), row("not checked: no GPU")]).ok
    assert not Verification([]).ok and not Verification([row("MISMATCH")]).ok


# ---------------------------------------------------------------- the search's PTX


def test_tune_compiles_tritons_ptx_with_the_configs_own_ptxas_and_flags(triton_env):
    from reorder.triton.compile import compile_call
    from reorder.triton.runs import _ptx_of
    from tests.triton_twin_kernels import row_sums

    call = compile_call(row_sums, *_args(), arch=90, BLOCK=256, num_warps=1)
    path, recipe, note = _ptx_of(call, triton_env)
    assert path.read_text() == call.kernel.asm["ptx"] and recipe.flags[-1] == "--gpu-name=sm_90a"
    assert note.startswith("Triton's PTX, compiled as the config is")
    odd = compile_call(row_sums, *_args(), arch=90, BLOCK=256, num_warps=1, ptx_options="--maxrregcount=64")
    (triton_env / "odd").mkdir()
    assert "--maxrregcount=64" in _ptx_of(odd, triton_env / "odd")[1].flags  # its PTX options too


def test_tune_counts_each_configs_time_from_its_own_start(triton_env, monkeypatch):
    """optimize's --time counts from the command's start unless told otherwise; rt.tune runs in a
    process that may have worked for minutes (an autotune, other configs' searches) before it,
    and its search had been left about a second of its 45 (the H200 run of 2026-12-01)."""
    import time
    from types import SimpleNamespace

    import reorder.optimize
    from reorder.triton.tune import tune
    from tests.triton_twin_kernels import row_sums

    seen = []

    def fake(args):
        seen.append(args)
        args.output.write_bytes(args.cubin.read_bytes())
        return SimpleNamespace(result=None, best_moves="(none)", check="", verifier="")

    monkeypatch.setattr(reorder.optimize, "optimize", fake)
    before = time.monotonic()
    tune(
        row_sums,
        *_args(),
        grid=(64,),
        configs=[{"BLOCK": 256, "num_warps": 1}],
        arch=90,
        device="cpu",
        folder=triton_env / "tune",
    )
    (args,) = seen
    assert args.started is not None and args.started >= before and args.ptx is not None


def test_with_reorder_and_request_refuse_what_they_cannot_use_in_one_line():
    """A generator of configs is read once (all its configs get twins); anything that is not
    configs, a Request or a twin count in range is one InputError naming it."""
    from reorder.base.errors import InputError

    made = with_reorder(triton.Config({"BLOCK": 256}, num_warps=w) for w in (4, 8))
    assert len(made) == 2 + 2 * twins_count()
    bad = {
        "configs: expected a list": lambda: with_reorder(None),
        "config 1 is a int": lambda: with_reorder([triton.Config({}), 3]),
        "twins=-1": lambda: with_reorder([triton.Config({})], twins=-1),
        "twins='3'": lambda: with_reorder([triton.Config({})], twins="3"),
        "twins=17": lambda: with_reorder([triton.Config({})], twins=17),
        "request 'fast'": lambda: with_reorder([triton.Config({})], "fast"),
        "noalias='yes'": lambda: Request(noalias="yes"),
        "mode 'fast'": lambda: Request("fast"),
        "budget=-2": lambda: Request("search", budget=-2),
    }
    for words, call in bad.items():
        with pytest.raises(InputError, match=words.replace("(", r"\(")):
            call()


def test_rt_verify_refuses_what_it_cannot_use_in_one_line():
    import reorder.triton as rt
    from reorder.base.errors import InputError
    from tests.triton_twin_kernels import row_sums

    kernel = triton.autotune(rt.with_reorder([triton.Config({"BLOCK": 256})], twins=1), key=["n"])(row_sums)
    bad = {
        "42 is not a Triton kernel": lambda: rt.verify(42, grid=(1,)),
        "sets=0": lambda: rt.verify(kernel, *_args(), grid=(64,), sets=0),
        "grid must be 1 to 3 positive ints": lambda: rt.verify(kernel, *_args(), grid="x"),
    }
    for words, call in bad.items():
        with pytest.raises(InputError, match=words):
            call()
