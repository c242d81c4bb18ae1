"""Build cost near-linear in kernel length, and the fast paths equal to what they replaced.

The guard: the whole SASS pipeline (slice batches, load batches, stall cuts, each step
written, read back and verified) and the PTX move space on an nvcc kernel of about 830
and about 3,800 instructions (benchmarks.kernels.fma_chain: one long block), in CPU time.
Linear work gives about 3x for the 4.6x longer kernel; one pass quadratic in a block's
length gives 20x (before: 0.7 CPU-s then 50 and more). The bound, 8x, is far from both.

The equalities: each index that replaced a scan answers as the scan did, on the corpus or
on random kernels (the old scans live on here as references).
"""

from __future__ import annotations

import random
import shutil
import time
from pathlib import Path

import ptx_sources  # tests/ptx_sources.py
import pytest

from legality.graph import dependency, order_edges
from reorder.analysis.cfg import basic_blocks
from reorder.analysis.webs import ENTRY, Writers, _collect, named_registers
from reorder.binary.cubin import read_cubin
from reorder.ptx.analyses.analysis import Analysis
from reorder.ptx.model.model import parse_module
from reorder.ptx.moves.reuse import Twins, _shape
from reorder.sass.model import decode_kernel

ROOT = Path(__file__).resolve().parent.parent
SMALL, LARGE = 200, 800  # fma_chain steps: 832 and 3,840 instructions (CUDA 13.0)
GROWTH_BOUND = 8.0


def _kernels(corpus, limit: int = 400):
    """Each corpus kernel (decoded once per test run) with its blocks of at most `limit`."""
    for _, code in corpus:
        yield code, [b for b in basic_blocks(code.instructions) if b.end - b.start <= limit]


def _pipeline_seconds(cubin: Path, ptx: Path) -> float:
    """CPU seconds of batch-loads, the stall cut, the final verdict and the PTX move space."""
    from legality.verify import clear_caches, verify_kernel
    from reorder.build.pipeline import batch_loads, cut_stalls
    from reorder.build.pipeline import clear_caches as forget_steps
    from reorder.ptx.space.registry import MoveOptions
    from reorder.ptx.space.searchspace import first_stage

    code = decode_kernel(read_cubin(cubin), "fma_chain")  # nvdisasm: another process, not counted
    clear_caches()
    forget_steps()
    start = time.process_time()
    batched = batch_loads(code, False)
    cut = cut_stalls(batched.after)
    assert verify_kernel(cut.after, original=code.instructions).ok
    module = parse_module(ptx.read_text())
    first_stage(module, MoveOptions("fma_chain"))
    assert Analysis(module.function("fma_chain")).memory_graph.number_of_nodes() > 0
    return time.process_time() - start


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc here")
def test_build_cost_grows_about_linearly_with_the_kernel(tmp_path):
    from benchmarks.kernels.fma_chain import build

    small, large = build(SMALL, tmp_path), build(LARGE, tmp_path)
    n_small = len(decode_kernel(read_cubin(small[0]), "fma_chain").instructions)
    n_large = len(decode_kernel(read_cubin(large[0]), "fma_chain").instructions)
    assert n_large > 4 * n_small
    t_small = min(_pipeline_seconds(*small) for _ in range(2))  # the first pays imports and tables
    t_large = _pipeline_seconds(*large)
    assert t_large < GROWTH_BOUND * t_small, (
        f"{n_small} instructions: {t_small:.2f} CPU-s, {n_large}: {t_large:.2f} CPU-s "
        f"({t_large / t_small:.1f}x for {n_large / n_small:.1f}x the instructions)"
    )


def _closure(n: int, edges) -> list[int]:
    """Ancestors of each node as a bit set (edges go forward)."""
    preds: list[list[int]] = [[] for _ in range(n)]
    for a, b in edges:
        assert a < b
        preds[b].append(a)
    ancestors = [0] * n
    for b in range(n):
        for a in preds[b]:
            ancestors[b] |= ancestors[a] | 1 << a
    return ancestors


@pytest.mark.parametrize("noalias", [False, True], ids=["alias", "noalias"])
def test_order_edges_order_a_block_as_every_pairwise_dependency_does(corpus, noalias):
    from reorder.analysis.buffers import address_parameters

    blocks = 0
    for code, kept in _kernels(corpus, limit=96):
        buffers = address_parameters(code) if noalias else None
        for b in kept:
            region = code.instructions[b.start : b.end]
            n = len(region)
            pairwise = [
                (i, j) for i in range(n) for j in range(i + 1, n) if dependency(region[i], region[j], noalias, buffers)
            ]
            sparse = order_edges(region, noalias, buffers)
            assert set(sparse) <= set(pairwise)  # every edge is a real dependency
            assert _closure(n, sparse) == _closure(n, pairwise), (code.kernel.name, b)
            blocks += 1
    assert blocks > 500


def _scan_reaching(defs, pos: int, reg: str, guard) -> frozenset[int]:
    """The scan over every def of the block that Writers.reaching replaced."""
    found = set()
    for d in range(len(defs) - 1, -1, -1):
        df = defs[d]
        if df.pos >= pos or reg not in df.regs:
            continue
        found.add(d)
        if df.guard is None or (
            df.guard == guard and not any(df.pos <= e.pos < pos and guard[0] in e.regs for e in defs)
        ):
            return frozenset(found)
    return frozenset(found | {ENTRY})


def test_reaching_writers_answer_as_the_scan_over_every_def(corpus):
    checked = 0
    for code, kept in _kernels(corpus):
        universe = named_registers(code.instructions)
        for b in kept:
            defs, uses, _ = _collect(code.instructions, b, universe)
            writers = Writers.of(defs)
            for use in uses:
                for reg in use.regs:
                    assert writers.reaching(use.pos, reg, use.guard) == _scan_reaching(defs, use.pos, reg, use.guard)
                    checked += 1
            for reg in universe:
                assert writers.reaching(b.end - b.start, reg, None) == _scan_reaching(defs, b.end - b.start, reg, None)
    assert checked > 10_000


def _ptx_functions():
    for path in sorted((ROOT / "tests" / "corpus").rglob("*.ptx")):
        yield from parse_module(path.read_text()).kernels


def _walked(defuse, block, i: int, reg: str) -> frozenset[int]:
    """The definitions of `reg` reaching statement i, by walking its block from the entry's."""
    defs = defuse.entry_defs(block.index, reg)
    for k in block.instructions:
        if k == i:
            break
        if reg in defuse.effects[k].defs:
            defs = frozenset({k}) if defuse.body[k].ins.guard is None else defs | {k}
    return defs


def test_ptx_reaching_definitions_answer_as_the_walk_of_the_block():
    checked = 0
    for function in _ptx_functions():
        defuse = Analysis(function).defuse
        for block in defuse.cfg.blocks:
            for i in block.instructions:
                for reg in defuse.effects[i].uses:
                    assert defuse.reaching(i, reg) == _walked(defuse, block, i, reg)
                    checked += 1
    assert checked > 3_000


def _random_body(rng: random.Random) -> str:
    """Loads of a few addresses, computed again and again, with stores, guards, barriers and
    branches between (what the twin search must tell apart)."""
    rd = ["%rd3", "%rd4", "%rd6", "%rd7"] + [f"%rd{i}" for i in range(8, 16)]
    r = ["%r1", "%r2", "%r3", "%r4", "%r5"]
    lines, labels = [], []
    for _ in range(rng.randint(3, 30)):
        c = rng.random()
        if c < 0.2:
            lines.append(f"\tmul.wide.u32 \t{rng.choice(rd[4:])}, {rng.choice(r)}, {rng.choice([4, 8])};")
        elif c < 0.4:
            lines.append(f"\tadd.s64 \t{rng.choice(rd[4:])}, {rng.choice(rd)}, {rng.choice(rd)};")
        elif c < 0.65:
            guard = "@%p1 " if rng.random() < 0.1 else ""
            lines.append(
                f"\t{guard}ld.global.f32 \t%f{rng.randint(1, 12)}, [{rng.choice(rd)}+{rng.choice([0, 4, 8])}];"
            )
        elif c < 0.72:
            lines.append(f"\tst.global.f32 \t[{rng.choice(rd)}+{rng.choice([0, 4])}], %f{rng.randint(1, 12)};")
        elif c < 0.78:
            lines.append(f"\tadd.s32 \t{rng.choice(r[1:4])}, {rng.choice(r)}, {rng.choice(['1', '%r5'])};")
        elif c < 0.83:
            lines.append(f"\tsetp.ne.s32 \t%p1, {rng.choice(r)}, 0;")
        elif c < 0.86:
            lines.append("\tbar.sync \t0;")
        elif c < 0.92:
            labels.append(f"$L__BB0_{len(labels) + 1}")
            lines.append(f"\t@%p1 bra \t{labels[-1]};")
        elif labels and c < 0.97:
            lines.append(f"{labels.pop(0)}:")
        else:
            lines.append(f"\tld.global.f32 \t%f{rng.randint(1, 12)}, [%rd6+4];")
    lines += [f"{label}:" for label in labels]
    return "\n".join(lines) + "\n\tadd.f32 \t%f3, %f1, %f2;\n\tst.global.f32 \t[%rd7], %f3;\n"


def _every_earlier(twins: Twins, load: int) -> int | None:
    """The search over every other load that Twins.earlier's candidates replaced."""
    a = twins.analysis
    cfg, body = a.cfg, a.function.body
    for e in sorted((x for x in twins.loads if x != load), reverse=True):
        if body[e].ins.guard is not None or _shape(body[e].ins.opcode) != _shape(body[load].ins.opcode):
            continue
        be, bl = cfg.block_of[e], cfg.block_of[load]
        if not ((be == bl and e < load) or (be != bl and cfg.dominates(be, bl))):
            continue
        if twins._same_address(e, load) and twins._clear(e, load):
            return e
    return None


def test_the_twin_search_finds_what_trying_every_load_finds():
    rng = random.Random(7)
    found = 0
    for _ in range(400):
        function = parse_module(ptx_sources.kernel(_random_body(rng))).kernels[0]
        for noalias in (False, True):
            twins = Twins(Analysis(function, noalias))
            for load in twins.loads:
                twin = twins.earlier(load)
                assert twin == _every_earlier(twins, load)
                found += twin is not None
    assert found > 100


def _random_pending(rng: random.Random):
    from legality.verify import ELAPSED_CAP, Pending

    elapsed = rng.choice([ELAPSED_CAP, ELAPSED_CAP, rng.randint(0, ELAPSED_CAP)])
    cover = tuple((rng.randint(0, 5), rng.choice([0, 0, rng.randint(0, elapsed)])) for _ in range(rng.randint(0, 2)))
    return Pending(rng.randint(-1, 5), 16 * rng.randint(0, 99), "LDG.E", elapsed, cover=cover)


def test_aging_skips_only_what_aging_leaves_as_it_was():
    from legality.verify import State, _advance

    rng = random.Random(11)
    skipped = 0
    for _ in range(3_000):
        tables = [
            {
                f"R{r}": frozenset(_random_pending(rng) for _ in range(rng.randint(1, 3)))
                for r in range(rng.randint(1, 4))
            }
            for _ in range(2)
        ]
        stall = rng.choice([0, 1, 2, 5, 15, 70])
        state = State(writes=dict(tables[0]), reads=dict(tables[1]), clock=3)
        _advance(state, stall)
        every = [{res: frozenset(p.aged(stall) for p in ps) for res, ps in t.items()} for t in tables]
        assert (state.writes, state.reads, state.clock) == (every[0], every[1], 3 + stall)
        skipped += sum(all(p.settled() for p in ps) for t in tables for ps in t.values())
    assert skipped > 500
