"""PTX analyses on nvcc's RMSNorm PTX and small kernels: CFG, dominators, natural loops,
def-use over virtual registers, address provenance, the dependency graph's memory,
barrier and control edges, and the conditions under which a block runs."""

from __future__ import annotations

from pathlib import Path

import ptx_sources  # tests/ptx_sources.py
import pytest
from sweeps import at_least, sample  # tests/sweeps.py

from reorder.ptx.analyses.analysis import Analysis
from reorder.ptx.analyses.guards import reach_condition, simplify
from reorder.ptx.model.model import parse_module

ROOT = Path(__file__).resolve().parent.parent
RMSNORM = ROOT / "benchmarks/kernels/ptx_candidates/source/rmsnorm.ptx"


@pytest.fixture(scope="module")
def rmsnorm() -> Analysis:
    return Analysis(parse_module(RMSNORM.read_text()).function("rmsnorm_triton_style"), noalias=True)


def _index(analysis: Analysis, code_start: str, nth: int = 0) -> int:
    body = analysis.function.body
    return [i for i, s in enumerate(body) if s.kind == "instruction" and s.code.startswith(code_start)][nth]


def _block(analysis: Analysis, label: str) -> int:
    return analysis.cfg.label_block(label)


def test_blocks_loops_and_dominators(rmsnorm):
    cfg = rmsnorm.cfg
    assert cfg.reducible
    headers = sorted(cfg.blocks[loop.header].labels[0] for loop in cfg.loops)
    assert headers == ["$L__BB1_3", "$L__BB1_37"]  # pass 1 (unrolled by 2) and the normalise pass
    normalise = next(loop for loop in cfg.loops if "$L__BB1_37" in cfg.blocks[loop.header].labels)
    assert len(normalise.blocks) == 9 and normalise.latches == {max(normalise.blocks)}
    reduction, barrier = _block(rmsnorm, "$L__BB1_29"), cfg.block_of[_index(rmsnorm, "bar.sync")]
    assert cfg.dominates(reduction, normalise.header) and not cfg.dominates(barrier, normalise.header)
    assert cfg.ipdom[reduction] == _block(rmsnorm, "$L__BB1_35")  # every path from the reduction joins there


def test_def_use_across_blocks(rmsnorm):
    load = _index(rmsnorm, "ld.global.v4.f32 \t{%f250")
    (address,) = rmsnorm.effects[load].address
    (writer,) = rmsnorm.defuse.reaching(load, address)
    assert rmsnorm.function.body[writer].code.startswith("add.s64 \t%rd11")
    # %rd32 is set before the normalise loop and stepped in its latch: both reach the w load
    w = _index(rmsnorm, "ld.global.v4.f32 \t{%f258")
    assert len(rmsnorm.defuse.reaching(w, "%rd32")) == 2
    assert "%rd32" in rmsnorm.defuse.live_before(_index(rmsnorm, "add.s64 \t%rd11"))


def test_addresses_trace_back_to_kernel_parameters(rmsnorm):
    by_code = {
        rmsnorm.function.body[i].code.split("\t")[1][:6]: o
        for i, o in rmsnorm.origins.items()
        if rmsnorm.effects[i].space == "global"
    }
    assert by_code["{%f250"] == {0} and by_code["{%f258"] == {1} and by_code["[%rd13"] == {2}
    shared = [o for i, o in rmsnorm.origins.items() if rmsnorm.effects[i].space == "shared"]
    assert shared and all(o == {"sym:_ZZ20rmsnorm_triton_styleE5slots"} for o in shared)


def test_barrier_edges_follow_noalias_and_what_the_kernel_writes():
    function = parse_module(RMSNORM.read_text()).function("rmsnorm_triton_style")
    for noalias, crosses in ((False, False), (True, True), ((0, 1), True), ((2,), False)):
        analysis = Analysis(function, noalias)
        bar, x = _index(analysis, "bar.sync"), _index(analysis, "ld.global.v4.f32 \t{%f250")
        shared = _index(analysis, "ld.shared.f32")
        assert analysis.graph.has_edge(bar, shared) and analysis.graph.edges[bar, shared]["kind"] == "barrier"
        assert analysis.graph.has_edge(bar, x) != crosses, noalias
        store = _index(analysis, "st.global.v4.f32")
        assert analysis.graph.edges[bar, store]["kind"] == "barrier"  # a global write never crosses


def test_store_edges_by_parameter():
    function = parse_module(RMSNORM.read_text()).function("rmsnorm_triton_style")
    for noalias in (False, True):
        analysis = Analysis(function, noalias)
        store = _index(analysis, "st.global.v4.f32")  # chunk 0's store to out (param 2)
        x_next = _index(analysis, "ld.global.v4.f32 \t{%f274")  # chunk 1's load of x (param 0)
        assert analysis.graph.has_edge(store, x_next) != noalias
        assert analysis.graph.edges[store, store]["kind"] == "memory"  # the same parameter, next iteration


def test_control_and_register_edges(rmsnorm):
    branch = _index(rmsnorm, "@%p31 bra")
    load = _index(rmsnorm, "ld.global.v4.f32 \t{%f250")
    assert rmsnorm.graph.edges[branch, load]["kind"] == "control"
    writer = _index(rmsnorm, "add.s64 \t%rd11")
    assert rmsnorm.graph.edges[writer, load]["kind"] == "raw"


def test_unknown_instructions_are_barriers_and_reported():
    body = """
	ld.global.f32 	%f1, [%rd6];
	tex.1d.v4.f32.s32 	{%f2, %f3, %f4, %f5}, [tex0, {%r1}];
	ld.global.f32 	%f6, [%rd7];
	st.global.f32 	[%rd6], %f6;
"""
    analysis = Analysis(parse_module(ptx_sources.kernel(body)).kernels[0], noalias=True)
    tex = _index(analysis, "tex.")
    assert analysis.unknown == ((analysis.function.body[tex].ident, "tex.1d.v4.f32.s32"),)
    assert analysis.graph.edges[tex, _index(analysis, "ld.global.f32 \t%f6")]["kind"] == "unknown"
    assert analysis.facts.writes_unknown


def test_reach_conditions(rmsnorm):
    cfg = rmsnorm.cfg
    top, loop_body = _block(rmsnorm, "$L__BB1_29"), _block(rmsnorm, "$L__BB1_37") + 1
    guard = reach_condition(cfg, top, loop_body)
    branches = sorted(rmsnorm.function.body[b].code.split()[0] for b, _ in guard.literals)
    assert branches == ["@%p31", "@%p36"] and not any(held for _, held in guard.literals)
    assert reach_condition(cfg, top, _block(rmsnorm, "$L__BB1_35")).literals == frozenset()  # a join
    assert simplify({frozenset({(1, True)}), frozenset({(1, False), (2, True)})}) == {
        frozenset({(1, True)}),
        frozenset({(1, False), (2, True)}),
    }
    assert simplify({frozenset({(1, True), (2, True)}), frozenset({(1, False), (2, True)})}) == {frozenset({(2, True)})}


CHECKED_IN_PTX = sorted(
    p
    for folder in ("benchmarks/kernels/ptx_candidates/source", "reorder/suite/triton_kernels/sm_90", "tests/corpus")
    for p in (Path(__file__).resolve().parent.parent / folder).rglob("*.ptx")
)


@pytest.mark.parametrize("noalias", [False, True])
def test_a_pair_asked_alone_is_the_memory_graphs_edge(noalias):
    """Analysis.memory_edge (what a hoist or a reuse asks about one load, without the graph)
    gives the edge the whole memory graph draws, for every pair of every function of the
    checked-in PTX (nvcc's and Triton's), under both assumptions."""
    checked = 0
    for path in sample(CHECKED_IN_PTX):
        for function in parse_module(path.read_text()).functions:
            alone, whole = Analysis(function, noalias), Analysis(function, noalias)
            nodes = sorted(whole.memory_graph.nodes)
            for a in nodes:
                for b in nodes:
                    edge = whole.memory_graph.get_edge_data(a, b)
                    assert alone.memory_edge(a, b) == (edge["kind"] if edge else None), (path.name, a, b)
            assert "memory_graph" not in alone.__dict__  # asked alone, the graph was never built
            checked += len(nodes) ** 2
    assert checked > at_least(100_000, 10_000)
