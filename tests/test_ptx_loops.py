"""Loop moves (Prefetch, UnrollBatch, speculative prefetch of early-exit loops) on Triton's
looped RMSNorm, nvcc's suite kernels and small loops, one rule each.

Correctness is checked by running the original and the moved kernel in a one-thread PTX
interpreter (tests/ptx_interp.py) at trip counts around the loop's step: the stores must be
the same and the moved kernel's global loads a subset of the original's, as many (never a
load the original would not perform). The negative cases: a store to the loaded buffer, a
barrier where the kernel writes the buffer, a shared load, an early exit without
--speculate; and a control that a prefetched load stripped of its guard is caught.
"""

from __future__ import annotations

import random
import re
import struct
import subprocess
import sys
from pathlib import Path

import ptx_sources  # tests/ptx_sources.py
import pytest
from ptx_interp import Memory, Thread, Unmodelled

from reorder.base.errors import NotApplicable
from reorder.binary.tools import have_tool
from reorder.build.ptxcandidate import write_and_compile
from reorder.ptx.analyses.analysis import Analysis
from reorder.ptx.model.model import Module, parse_module
from reorder.ptx.moves.loopfind import find_loop
from reorder.ptx.moves.loopload import loop_loads
from reorder.ptx.moves.prefetch import Prefetch
from reorder.ptx.moves.unroll import UnrollBatch

ROOT = Path(__file__).resolve().parent.parent
TRITON = ROOT / "reorder/suite/triton_kernels/sm_90/rmsnorm_looped_fp32.ptx"
SUITE = ROOT / "benchmarks/kernels/ptx_candidates/source"
SQUARES, NORMALISE = "$L__BB0_2", "$L__BB0_6"  # Triton's two passes over the row


def _f32(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def _triton() -> Module:
    return parse_module(TRITON.read_text())


def _run_rmsnorm(module: Module, n: int, tid: int):
    """One thread of rmsnorm_looped on a row of n columns (x, w and y exactly n floats)."""
    rnd, memory = random.Random(n), Memory()
    x, w, y = 0x100000, 0x200000, 0x300000
    for base in (x, w):
        memory.buffers.append((base, 4 * n))
        memory.words.update({base + 4 * i: _f32(rnd.uniform(-2, 2)) for i in range(n)})
    memory.buffers.append((y, 4 * n))
    return Thread(module.kernels[0], [x, w, y, n, n, n, _f32(1e-5), 0, 0], memory, tid=tid).run()


def _same_work(original: Module, moved: Module, run, cases) -> None:
    for case in cases:
        a, b = run(original, *case), run(moved, *case)
        assert b.stores == a.stores, case
        assert set(b.loads) <= set(a.loads) and len(b.loads) == len(a.loads), case


# Triton assumes n_cols % 16 == 0; 1024 columns per iteration (BLOCK 1024, 128 threads x 8)
ROWS = [(n, tid) for n in (16, 1008, 1040, 3008) for tid in (0, 127)]


def test_triton_loops_found_and_the_store_rule():
    analysis = Analysis(_triton().kernels[0], noalias=False)
    squares, normalise = find_loop(analysis, SQUARES), find_loop(analysis, NORMALISE)
    assert [(x.register, x.immediate) for x in squares.inductions] == [("%r88", 1024)]
    assert [e.bound for e in squares.exits] == [True] and not squares.early_exit
    assert len(loop_loads(analysis, squares).movable) == 2
    kept = loop_loads(analysis, normalise)  # y[...] = ... may alias x and w: nothing moves
    assert not kept.movable and all("st.global" in reason for _, reason in kept.refused)
    assumed = Analysis(_triton().kernels[0], noalias=True)  # x, w and y distinct: x and w load early
    assert len(loop_loads(assumed, find_loop(assumed, NORMALISE)).movable) == 4
    with pytest.raises(NotApplicable, match="no load can run early"):
        Prefetch("rmsnorm_looped", NORMALISE, 1, False).apply(_triton())


@pytest.mark.parametrize(
    "move",
    [Prefetch("rmsnorm_looped", SQUARES, d, True) for d in (1, 2, 3, 4)]
    + [Prefetch("rmsnorm_looped", NORMALISE, 2, True)]
    + [UnrollBatch("rmsnorm_looped", label, k, True) for label in (SQUARES, NORMALISE) for k in (2, 4)],
    ids=lambda m: m.describe(),
)
def test_triton_moves_compute_the_same_and_load_nothing_more(move):
    module = _triton()
    _same_work(module, move.apply(module), _run_rmsnorm, ROWS)


def _guard_leaves(function, guard: str) -> set[str]:
    """The codes of the setp instructions a predicate is built from (through and/not/mov.pred,
    every definition of a predicate written more than once)."""
    defs: dict[str, list] = {}
    for s in function.body:
        if (
            s.kind == "instruction"
            and s.ins.base in ("setp", "and", "not", "mov")
            and s.ins.modifiers[-1:] in (("pred",), ("s32",), ("u32",), ("s64",), ("u64",), ("b32",), ("f32",))
        ):
            defs.setdefault(s.ins.operands[0], []).append(s.ins)
    leaves, seen, work = set(), set(), [guard.lstrip("!")]
    while work:
        reg = work.pop()
        if reg in seen:
            continue
        seen.add(reg)
        for ins in defs.get(reg, ()):
            if ins.base == "setp":
                leaves.add(" ".join(ins.operands))
            else:
                work += [o for o in ins.operands[1:] if o.startswith("%")]
    return leaves


@pytest.mark.parametrize("distance", [1, 3])
def test_every_prefetched_load_is_predicated_by_the_loop_bound(distance):
    """Structural: each load into fresh registers is guarded, and its guard is built from a
    comparison with the trip bound (%r7 = n_cols) on an advanced induction and from the load's
    own mask: the original's loop condition and guard for that iteration."""
    moved = Prefetch("rmsnorm_looped", SQUARES, distance, True).apply(_triton()).kernels[0]
    prefetched = [
        s.ins for s in moved.body if s.kind == "instruction" and s.ins.base == "ld" and "%lp" in s.ins.operands[0]
    ]
    assert len(prefetched) == 2 * (distance + distance)  # prologue and one refill per copy, two loads each
    for ins in prefetched:
        assert ins.guard and not ins.guard_negated
        leaves = _guard_leaves(moved, ins.guard)
        assert any(leaf.endswith(" %r7") and "%lp" in leaf for leaf in leaves), leaves


def test_a_prefetched_load_without_its_guard_is_caught():
    """The control: the interpreter check fails when a prefetched load loses its predicate."""
    module = _triton()
    moved = Prefetch("rmsnorm_looped", SQUARES, 2, True).apply(module)
    function = moved.kernels[0]
    index = next(
        i
        for i, s in enumerate(function.body)
        if s.kind == "instruction" and s.ins.base == "ld" and "%lp" in s.ins.operands[0] and s.ident.endswith(".pf0.5")
    )
    bad = function.body[index].retext(re.sub(r"@%\w+ ", "", function.body[index].text))
    broken = moved.with_function(function.with_body(function.body[:index] + (bad,) + function.body[index + 1 :]))
    with pytest.raises((AssertionError, Unmodelled)):
        _same_work(module, broken, _run_rmsnorm, [(1040, 0)])


# ---- small loops: the memory rules --------------------------------------------------------

LOOP = """
	setp.lt.s32 	%p1, %r5, 1;
	mov.f32 	%f1, 0f00000000;
	@%p1 bra 	$L__BB0_3;
	mov.u32 	%r2, 0;
	mov.u64 	%rd8, %rd6;
$L__BB0_2:
	ld.global.f32 	%f2, [%rd8];
	add.f32 	%f1, %f1, %f2;
{inside}
	add.s64 	%rd8, %rd8, 512;
	add.s32 	%r2, %r2, 128;
	setp.lt.s32 	%p2, %r2, %r5;
	@%p2 bra 	$L__BB0_2;
$L__BB0_3:
{after}
	st.global.f32 	[%rd7], %f1;
"""


def _loop(inside: str = "", after: str = "") -> Module:
    return parse_module(ptx_sources.kernel(LOOP.format(inside=inside, after=after)))


def _movable(module: Module, noalias) -> list:
    analysis = Analysis(module.kernels[0], noalias)
    return [reason for _, reason in loop_loads(analysis, find_loop(analysis, "$L__BB0_2")).refused]


def _run_small(module: Module, n: int, tid: int):
    memory = Memory()
    x, y = 0x100000, 0x200000
    memory.buffers += [(x, 4 * (n + 128)), (y, 4 * (n + 128))]
    memory.words.update({x + 4 * i: _f32(i * 0.5) for i in range(n + 128)})
    return Thread(module.kernels[0], [x, y, 0, n], memory, tid=tid).run()


def test_a_loop_with_a_store_to_the_loaded_buffer_is_refused():
    module = _loop(inside="\tst.global.f32 \t[%rd8+4], %f1;")
    for noalias in (False, True):
        assert any("memory dependence" in r for r in _movable(module, noalias))
        with pytest.raises(NotApplicable, match="no load can run early"):
            Prefetch("k", "$L__BB0_2", 1, noalias).apply(module)


def test_a_store_to_another_parameter_only_under_noalias():
    module = _loop(inside="\tst.global.f32 \t[%rd7+4], %f1;")
    assert _movable(module, False) and not _movable(module, True)
    moved = Prefetch("k", "$L__BB0_2", 2, True).apply(module)
    _same_work(module, moved, _run_small, [(n, t) for n in (1, 128, 129, 600) for t in (0, 5)])


def test_barriers_shared_loads_and_unknown_trip_counts():
    shared = _loop(inside="\tbar.sync \t0;\n\tld.shared.f32 \t%f3, [smem];\n\tadd.f32 \t%f1, %f1, %f3;")
    reasons = _movable(shared, True)
    assert any("shared load" in r for r in reasons)
    unaligned = _loop(inside="\tbarrier.sync \t0;", after="\tst.global.f32 \t[%rd6], %f1;")  # x written somewhere
    assert any("barrier dependence" in r for r in _movable(unaligned, True))
    plain = _loop()
    for move in (Prefetch("k", "$L__BB0_2", 3), UnrollBatch("k", "$L__BB0_2", 4)):
        moved = move.apply(plain)  # n is a parameter: the trip count is not known, every prefetched load guarded
        loads = [
            s.ins
            for s in moved.kernels[0].body
            if s.kind == "instruction" and s.ins.base == "ld" and "%lp" in s.ins.operands[0]
        ]
        assert loads and all(ins.guard for ins in loads[1:])  # the first (iteration 0 at the top) runs when entered
        _same_work(plain, moved, _run_small, [(n, t) for n in (1, 127, 128, 129, 256, 700) for t in (0, 100)])


def test_a_buffer_written_only_after_the_loop_is_read_early_across_its_barrier():
    """A read of a buffer rises above an aligned barrier when no write to it can run before
    the barrier (reorder.ptx.analyses.phases): written after the loop, x's reads run early;
    written before the loop, in the loop, or across an unaligned barrier, they stay."""
    after = _loop(inside="\tbar.sync \t0;", after="\tst.global.f32 \t[%rd6], %f1;")
    assert not _movable(after, True)
    assert any("barrier dependence" in r for r in _movable(after, False))  # noalias still needed
    moved = Prefetch("k", "$L__BB0_2", 2, True).apply(after)
    _same_work(after, moved, _run_small, [(n, t) for n in (1, 128, 129, 600) for t in (0, 5)])
    before = parse_module(
        ptx_sources.kernel(
            "\tst.global.f32 \t[%rd6+4096], 0f3F800000;\n" + LOOP.format(inside="\tbar.sync \t0;", after="")
        )
    )
    assert any("barrier dependence" in r for r in _movable(before, True))
    inside = _loop(inside="\tbar.sync \t0;\n\tst.global.f32 \t[%rd6+4096], %f1;")
    assert _movable(inside, True)
    arrive = _loop(inside="\tbar.arrive \t0, 128;", after="\tst.global.f32 \t[%rd6], %f1;")
    assert any("barrier dependence" in r for r in _movable(arrive, True))


# ---- early exit: find_index ---------------------------------------------------------------


def _particlefilter() -> Module:
    return parse_module((SUITE / "particlefilter.ptx").read_text())


def _run_find_index(module: Module, n: int, tid: int, target: float):
    memory = Memory()
    ax, ay, cdf, u, xj, yj, w = (0x100000 * k for k in range(1, 8))
    for base in (ax, ay, cdf, u, xj, yj, w):
        memory.buffers.append((base, 4 * n))
    memory.words.update({cdf + 4 * i: _f32((i + 1) / n) for i in range(n)})
    memory.words.update({u + 4 * i: _f32(target) for i in range(n)})
    thread = Thread(module.function("find_index"), [ax, ay, cdf, u, xj, yj, w, n], memory, tid=tid)
    return thread.run(), cdf


def test_early_exit_needs_speculate_and_stays_in_bounds():
    module = _particlefilter()
    with pytest.raises(NotApplicable, match="left early on loaded data"):
        Prefetch("find_index", "$L__BB1_4", 2).apply(module)
    for move in (
        Prefetch("find_index", "$L__BB1_4", 2, speculate=True),
        UnrollBatch("find_index", "$L__BB1_4", 4, speculate=True),
    ):
        moved = move.apply(module)
        for n in (1, 3, 8, 13):
            for target in (0.0, 0.5, 2.0):  # first element, the middle, never found
                (a, cdf), (b, _) = _run_find_index(module, n, 0, target), _run_find_index(moved, n, 0, target)
                assert b.stores == a.stores, (move, n, target)
                scanned = {cdf + 4 * i for i in range(n)}
                assert set(b.loads) - set(a.loads) <= scanned  # speculative, in bounds only


# ---- compiled and verified; the command line ----------------------------------------------


@pytest.mark.skipif(not have_tool("ptxas"), reason="needs ptxas")
def test_candidates_compile_with_their_producers_ptxas_and_verify(tmp_path):
    cases = [
        (TRITON, "rmsnorm_looped", Prefetch("rmsnorm_looped", SQUARES, 2, True)),
        (TRITON, "rmsnorm_looped", UnrollBatch("rmsnorm_looped", NORMALISE, 4, True)),
        (SUITE / "rmsnorm.ptx", "rms_norm_f32", Prefetch("rms_norm_f32", "$L__BB0_2", 1)),
        (SUITE / "particlefilter.ptx", "find_index", UnrollBatch("find_index", "$L__BB1_4", 2, speculate=True)),
    ]
    for k, (source, kernel, move) in enumerate(cases):
        moved = move.apply(parse_module(source.read_text()))
        built = write_and_compile(source, kernel, moved, [move.describe()], tmp_path / f"c{k}.ptx")
        assert built.verdict.ok, (move, built.verdict.violations)
        assert ("triton" in built.recipe) == (source == TRITON)


@pytest.mark.skipif(not have_tool("ptxas"), reason="needs ptxas")
def test_ptx_loops_command(tmp_path):
    def cli(*args):
        return subprocess.run(
            [sys.executable, "-m", "reorder", "ptx-loops", *map(str, args)],
            capture_output=True,
            text=True,
            check=False,
            cwd=ROOT,
        )

    listed = cli(TRITON, "--list")
    assert listed.returncode == 0 and "loop $L__BB0_6" in listed.stdout and "prefetch:$L__BB0_2@4" in listed.stdout
    made = cli(TRITON, "--loop", "L__BB0_2", "--prefetch", "2", "-o", tmp_path / "p.ptx")
    assert made.returncode == 0 and "verify rmsnorm_looped: legal" in made.stdout, made.stderr
    refused = cli(TRITON, "--loop", "L__BB0_6", "--unroll", "2", "-o", tmp_path / "u.ptx")
    assert refused.returncode != 0 and "Traceback" not in refused.stderr and "st.global" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1


def test_the_loop_kind_is_registered_and_every_alternative_applies():
    import reorder.ptx.space.kinds  # noqa: F401  (registers every kind)
    from reorder.ptx.space.registry import MoveOptions, Pick, kind_named

    kind, module = kind_named("loop"), _triton()
    assert kind.instances(module, MoveOptions("rmsnorm_looped", False)) and [
        i.key for i in kind.instances(module, MoveOptions("rmsnorm_looped", False))
    ] == [SQUARES]
    instances = kind.instances(module, MoveOptions("rmsnorm_looped", True))
    assert [i.key for i in instances] == [SQUARES, NORMALISE]
    for instance in instances:
        for choice in instance.choices[1:]:
            moved, done = kind.apply(module, MoveOptions("rmsnorm_looped", True), [Pick("loop", instance.key, choice)])
            assert len(done) == 1 and moved.text != module.text
    both, done = kind.apply(
        module,
        MoveOptions("rmsnorm_looped", True),
        [Pick("loop", SQUARES, "prefetch2"), Pick("loop", NORMALISE, "unroll2")],
    )
    assert done == (f"prefetch:{SQUARES}@2", f"unroll:{NORMALISE}@2")
    _same_work(module, both, _run_rmsnorm, ROWS[:4])


def test_a_cubin_gets_its_loops_named_and_the_need_for_ptx(tmp_path):
    cubin = ROOT / "reorder/suite/triton_kernels/sm_90/rmsnorm_looped_fp32.cubin"
    listed = subprocess.run(
        [sys.executable, "-m", "reorder", "ptx-loops", str(cubin), "--list"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert listed.returncode == 0, listed.stderr
    assert "rmsnorm_looped: 2 loops in its SASS" in listed.stdout and "need the kernel's PTX" in listed.stdout
    asked = subprocess.run(
        [
            sys.executable,
            "-m",
            "reorder",
            "ptx-loops",
            str(cubin),
            "--loop",
            "x",
            "--prefetch",
            "1",
            "-o",
            str(tmp_path / "out.ptx"),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert asked.returncode != 0 and "loop moves need the kernel's PTX" in asked.stderr
    assert not (tmp_path / "out.ptx").exists()


POST = """
	setp.lt.s32 	%p1, %r5, 1;
	mov.f32 	%f1, 0f00000000;
	@%p1 bra 	$L__BB0_3;
	mov.u32 	%r2, 0;
$L__BB0_2:
	add.s32 	%r2, %r2, 128;
	mul.wide.s32 	%rd9, %r2, 4;
	add.s64 	%rd10, %rd6, %rd9;
	ld.global.f32 	%f2, [%rd10+-512];
	add.f32 	%f1, %f1, %f2;
	setp.lt.s32 	%p2, %r2, %r5;
	@%p2 bra 	$L__BB0_2;
$L__BB0_3:
	st.global.f32 	[%rd7], %f1;
"""


def test_an_induction_updated_before_the_load():
    """The load's address reads the induction after this iteration's update: advanced from the
    value the register holds where each early load is issued (before the loop, at a copy's top,
    after the update)."""
    module = parse_module(ptx_sources.kernel(POST))
    for move in (Prefetch("k", "$L__BB0_2", 1), Prefetch("k", "$L__BB0_2", 3), UnrollBatch("k", "$L__BB0_2", 2)):
        _same_work(module, move.apply(module), _run_small, [(n, t) for n in (1, 128, 129, 300, 640) for t in (0, 7)])


def _run_rms_norm_f32(module: Module, n: int, tid: int, threads: int):
    rnd, memory = random.Random(n), Memory()
    x, w, y = 0x100000, 0x200000, 0x300000
    for base in (x, w):
        memory.buffers.append((base, 4 * n))
        memory.words.update({base + 4 * i: _f32(rnd.uniform(-2, 2)) for i in range(n)})
    memory.buffers.append((y, 4 * n))
    return Thread(module.function("rms_norm_f32"), [x, w, y, n, _f32(1e-5)], memory, tid=tid, ntid=threads).run()


@pytest.mark.parametrize(
    "move",
    [
        Prefetch("rms_norm_f32", "$L__BB0_2", 2),
        Prefetch("rms_norm_f32", "$L__BB0_11", 3, True),
        UnrollBatch("rms_norm_f32", "$L__BB0_11", 4, True),
    ],
    ids=lambda m: m.describe(),
)
def test_nvcc_loops_stepping_by_a_register(move):
    """nvcc's strided loops (`col += blockDim.x`): the step is a register, advanced by a multiply."""
    module = parse_module((SUITE / "rmsnorm.ptx").read_text())
    _same_work(
        module,
        move.apply(module),
        _run_rms_norm_f32,
        [(n, tid, threads) for n in (1, 5, 33) for tid, threads in ((0, 1), (3, 4), (2, 32))],
    )


def test_only_wrapping_integer_adds_are_inductions():
    """A float accumulator stepping by a register is not an induction (k float adds are not one
    add of k steps), nor is an add that sets the carry flag: a load addressed through either stays."""
    body = LOOP.format(
        inside="\tadd.f32 \t%f3, %f3, %f4;\n\tcvt.rzi.s32.f32 \t%r3, %f3;\n"
        "\tmul.wide.s32 \t%rd9, %r3, 4;\n\tadd.s64 \t%rd10, %rd7, %rd9;\n"
        "\tld.global.f32 \t%f5, [%rd10];\n\tadd.cc.u32 \t%r4, %r4, 1;",
        after="",
    )
    body = body.replace(
        "\tmov.u32 \t%r2, 0;",
        "\tmov.u32 \t%r2, 0;\n\tmov.f32 \t%f3, 0f00000000;\n\tmov.f32 \t%f4, 0f3F800000;\n\tmov.u32 \t%r4, 0;",
    )
    module = parse_module(ptx_sources.kernel(body))
    analysis = Analysis(module.kernels[0])
    loop = find_loop(analysis, "$L__BB0_2")
    assert sorted(x.register for x in loop.inductions) == ["%r2", "%rd8"]
    loads = loop_loads(analysis, loop)
    assert len(loads.movable) == 1 and any("%f3" in reason or "%r3" in reason for _, reason in loads.refused)


def test_loop_moves_compose_with_the_other_kinds():
    """Walks over every registered kind (peel, loop, hoist, reuse) with a loop move always
    taken: the same work as the original, and each rebuilt byte for byte from its picks."""
    from reorder.ptx.space.registry import MoveOptions
    from reorder.ptx.space.searchspace import rebuild, walk

    module, options, rng = _triton(), MoveOptions("rmsnorm_looped", True), random.Random(3)
    for _ in range(3):
        done = walk(module, options, lambda inst: rng.choice(inst.choices[1:] if inst.kind == "loop" else inst.choices))
        assert any(a.startswith(("prefetch", "unroll")) for a in done.applied)
        assert rebuild(module, options, done.picks).module.text == done.module.text
        _same_work(module, done.module, _run_rmsnorm, ROWS[::2])


def test_the_optimize_note_for_a_cubin_names_its_loops():
    from reorder.analysis.loops import loops_note
    from reorder.binary.cubin import read_cubin
    from reorder.sass.model import decode_kernel

    code = decode_kernel(read_cubin(ROOT / "reorder/suite/triton_kernels/sm_90/rmsnorm_looped_fp32.cubin"))
    note = loops_note(code)
    assert note.startswith("loops seen in the SASS: 2 (at 0x") and "need the kernel's PTX" in note


def _run_normalize_weights(module: Module, n: int, tid: int):
    """Thread `tid` of normalize_weights on n weights (thread 0 builds the CDF serially)."""
    rnd, memory = random.Random(n), Memory()
    weights, sums, norm, cdf, u, seed = (0x100000 * k for k in range(1, 7))
    for base, count in ((weights, n), (sums, 1), (norm, n), (cdf, n), (u, n), (seed, 1)):
        memory.buffers.append((base, 4 * count))
    memory.words.update({weights + 4 * i: _f32(rnd.uniform(0.0, 1.0)) for i in range(n)})
    memory.words.update({sums: _f32(n / 2), seed: 12345})
    function = module.function("normalize_weights")
    return Thread(function, [weights, n, sums, norm, cdf, u, seed], memory, tid=tid, ntid=64).run()


@pytest.mark.parametrize(
    "move",
    [
        Prefetch("normalize_weights", "$L__BB0_8", 1, True),
        Prefetch("normalize_weights", "$L__BB0_8", 4, True),
        UnrollBatch("normalize_weights", "$L__BB0_8", 2, True),
        UnrollBatch("normalize_weights", "$L__BB0_8", 4, True),
        UnrollBatch("normalize_weights", "$L__BB0_8", 8, True),
        Prefetch("normalize_weights", "$L__BB0_8", 2, True),
    ],
    ids=lambda m: m.describe(),
)
def test_a_pointer_stepped_through_a_copy_is_an_induction(move):
    """nvcc's 4x unrolled CDF loop steps its pointers as `add t, p, 16` ... `mov p, t`: without
    that form its loads stayed put (the suite's normalize_weights 1.00x: only the remainder loop
    moved). Under noalias the next iterations' weights are loaded early; the stores stay the same."""
    module = parse_module((SUITE / "particlefilter.ptx").read_text())
    loop = find_loop(Analysis(module.function("normalize_weights")), "$L__BB0_8")
    assert {x.register for x in loop.inductions} >= {"%rd30", "%rd31"}
    cases = [(n, 0) for n in (1, 2, 4, 5, 6, 8, 9, 13, 22, 37, 70)] + [(9, 3)]
    _same_work(module, move.apply(module), _run_normalize_weights, cases)
