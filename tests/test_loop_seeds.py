"""Each loop move alone, at each distance or factor, is a seed of a search with PTX at hand:
whether a loop pays, and how far ahead, depends on the launch shape, so every alternative is
measured from the start (reorder.build.ptxlevel.loop_seed_params)."""

from __future__ import annotations

from pathlib import Path

from reorder.build.ptxlevel import loop_seed_params, picks_of, ptx_level, seed_params
from reorder.build.space import SearchSpace
from reorder.ptx.space.loopkinds import CHOICES
from reorder.search import study

PTX = Path(__file__).resolve().parent.parent / "benchmarks/kernels/ptx_candidates/source/embedding_bag.ptx"


def test_every_loop_alternative_is_a_seed_and_the_study_starts_with_them() -> None:
    level = ptx_level(PTX, "embedding_bag_sum", True, 90)
    seeds = loop_seed_params(level)
    picks = [picks_of(s, level) for s in seeds]
    assert all(len(p) == 1 and p[0].kind == "loop" for p in picks)
    assert sorted(p[0].choice for p in picks) == sorted(CHOICES)  # one loop: each alternative once
    everything = study.seed_params(SearchSpace((), (), (), (), ptx=level))
    assert all(s in everything for s in seeds)
    assert everything.index(seeds[0]) < everything.index(seed_params(level)[-1])  # before the placements with cuts


def test_each_other_ptx_kind_alone_is_a_seed_and_a_wgmma_only_space_starts_with_it() -> None:
    """A Triton GEMM whose only PTX decision is the wgmma step: the study's first trial takes
    it, so a search of a few trials measures it (it never sampled it before)."""
    from reorder.build.ptxlevel import kind_seed_params

    ptx = Path(__file__).resolve().parent.parent / "reorder/suite/triton_kernels/sm_90/ffn_swiglu_fp16.ptx"
    level = ptx_level(ptx, "ffn_swiglu", True, 90)
    (seed,) = kind_seed_params(level)
    assert {p.kind for p in picks_of(seed, level)} == {"wgmma"}
    assert study.seed_params(SearchSpace((), (), (), (), ptx=level))[0] == seed
    assert kind_seed_params(ptx_level(PTX, "embedding_bag_sum", True, 90)) == []  # loops are seeded apart


def test_the_loop_seeds_come_before_the_sass_only_seeds() -> None:
    """A search of big launches scores a dozen trials: it must reach the loop moves (the wins
    measured on Triton's kernels) before the SASS-only combinations."""
    level = ptx_level(PTX, "embedding_bag_sum", True, 90)
    space = SearchSpace((), ("a stall-cut block",), (), ptx=level)  # type: ignore[arg-type]
    everything = study.seed_params(space)
    sass_only = [k for k, s in enumerate(everything) if s.get("sc0") == 1 and not picks_of(s, level)]
    loops = [everything.index(s) for s in loop_seed_params(level)]
    assert sass_only and loops
    assert max(loops) < min(sass_only)
