"""WgmmaAsync (reorder.ptx.moves.wgmma): the fused feed-forward's serialized HGMMA loop.

Triton's PTX of reorder/suite/triton_kernels/ffn.py has a `wgmma.wait_group 0` after the K loop
and zeroes the accumulators on the path that skips the loop, so ptxas serializes every
HGMMA. The move must: find that wait; lower exactly the waits that PTX's register rules
need (gate and up share A fragments, so Triton's wait 7 after each dot leaves the up dot of
the previous iteration pending when the next iteration rewrites its A); leave the
simulation with nothing broken; refuse what it cannot judge; and, compiled by Triton's
ptxas, give a K loop whose HGMMAs are no longer followed by a wait of 0.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import reorder.ptx.space.kinds  # noqa: F401 - registers every kind
from reorder.base.errors import NotApplicable
from reorder.binary.cubin import read_cubin
from reorder.ptx.model.model import parse_module
from reorder.ptx.moves.wgmma import WgmmaAsync, exit_waits, loop_breaks, sink_exit_wait, wait_count
from reorder.ptx.space.registry import MoveOptions, kind_named
from reorder.sass.model import decode_kernel

ROOT = Path(__file__).resolve().parent.parent
SM90 = ROOT / "reorder/suite/triton_kernels/sm_90"
FFN = SM90 / "ffn_swiglu_fp16.ptx"
KERNEL = "ffn_swiglu"


@pytest.fixture(scope="module")
def ffn():
    return parse_module(FFN.read_text())


def _waits(module) -> list[tuple[str, int]]:
    body = module.function(KERNEL).body
    return [(s.ident, wait_count(s)) for s in body if wait_count(s) is not None]


def test_the_exit_wait_is_found_and_triton_breaks_the_register_rule(ffn):
    function = ffn.function(KERNEL)
    waits = exit_waits(function)
    assert len(waits) == 1 and wait_count(function.body[waits[0]]) == 0
    # with the exit wait moved but Triton's loop waits kept, the next iteration rewrites the A
    # fragment of an up dot that may still be pending
    broken = loop_breaks(sink_exit_wait(function, waits[0]))
    assert broken
    assert all(b.wait is not None and b.newer == 3 for b in broken)


def test_the_move_lowers_four_waits_and_moves_one(ffn):
    move = WgmmaAsync.instances(ffn, KERNEL)
    assert len(move) == 1
    moved, lowered = move[0].made(ffn)
    assert len(lowered) == 4 and all(note.endswith("7->3") for note in lowered)
    before, after = dict(_waits(ffn)), dict(_waits(moved))
    changed = {k for k in before if k in after and before[k] != after[k]}
    assert len(changed) == 4 and all(before[k] == 7 and after[k] == 3 for k in changed)
    assert move[0].wait in before and move[0].wait not in after  # the exit wait left the join...
    added = [k for k in after if k not in before]
    assert len(added) == 1 and after[added[0]] == 0  # ...and sits on the loop's way out
    assert not loop_breaks(moved.function(KERNEL))
    # only wait lines changed: the same instructions otherwise, in the same order
    strip = [s.ins for s in ffn.function(KERNEL).body if s.ins is not None and wait_count(s) is None]
    kept = [s.ins for s in moved.function(KERNEL).body if s.ins is not None and wait_count(s) is None]
    assert strip == kept


def test_the_registered_kind_offers_and_rebuilds_it(ffn):
    kind = kind_named("wgmma")
    options = MoveOptions(KERNEL, True)
    (instance,) = kind.instances(ffn, options)
    assert instance.choices == ("off", "on")
    from reorder.ptx.space.registry import Pick

    made, notes = kind.apply(ffn, options, [Pick("wgmma", instance.key, "on")])
    again, _ = kind.apply(ffn, options, [Pick("wgmma", instance.key, "on")])
    assert made.text == again.text != ffn.text
    assert notes and notes[0].startswith(f"wgmma:{instance.key}")


@pytest.mark.parametrize("name", sorted(p.name for p in SM90.glob("*.ptx") if p.name != FFN.name))
def test_no_other_triton_kernel_is_offered_it(name):
    module = parse_module((SM90 / name).read_text())
    kernel = module.kernels[0].name
    assert kind_named("wgmma").instances(module, MoveOptions(kernel, True)) == []


def _loop_ptx(body: str, before: str = "", after: str = "\twgmma.wait_group.sync.aligned 0;\n") -> str:
    """A minimal sm_90a kernel: a counted loop around `body` (one block), `before` it and
    `after` it (the join every path reaches)."""
    return (
        ".version 8.7\n.target sm_90a\n.address_size 64\n\n"
        ".visible .entry k(\n\t.param .u32 k_param_0\n)\n{\n"
        "\t.reg .pred %p<4>;\n\t.reg .b32 %r<40>;\n\t.reg .b64 %rd<4>;\n\n"
        "\tld.param.u32 %r1, [k_param_0];\n\tmov.b32 %r2, 0;\n\tmov.b64 %rd1, 0;\n"
        f"{before}"
        "\tsetp.lt.s32 %p1, %r1, 1;\n\t@%p1 bra $L__SKIP;\n"
        "$L__LOOP:\n"
        f"{body}"
        "\tadd.s32 %r2, %r2, 1;\n\tsetp.lt.s32 %p2, %r2, %r1;\n\t@%p2 bra $L__LOOP;\n\tbra.uni $L__JOIN;\n"
        "$L__SKIP:\n\tmov.b32 %r10, 0;\n\tmov.b32 %r11, 0;\n"
        "$L__JOIN:\n"
        f"{after}"
        "\tret;\n}\n"
    )


MMA = "\twgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {{%r10,%r11}}, {{{a}}}, %rd1, %p3, 1, 1, 1;\n"
STEP = "\twgmma.fence.sync.aligned;\n" + MMA + "\twgmma.commit_group.sync.aligned;\n"


def test_a_shared_fragment_gets_the_wait_it_needs():
    # two dots share A (%r20..%r23); the fragment is rewritten at the top of each iteration
    body = (
        "\tmov.b32 %r20, %r2;\n\tmov.b32 %r21, %r2;\n\tmov.b32 %r22, %r2;\n\tmov.b32 %r23, %r2;\n"
        + STEP.format(a="%r20,%r21,%r22,%r23")
        + "\twgmma.wait_group.sync.aligned 1;\n"
        + STEP.format(a="%r20,%r21,%r22,%r23")
        + "\twgmma.wait_group.sync.aligned 1;\n"
    )
    module = parse_module(_loop_ptx(body))
    (move,) = WgmmaAsync.instances(module, "k")
    moved, lowered = move.made(module)
    assert lowered == (f"wait@{_waits_of(module, 'k')[-2]} 1->0",)
    assert not loop_breaks(moved.function("k"))


def _waits_of(module, kernel: str) -> list[str]:
    return [s.ident for s in module.function(kernel).body if wait_count(s) is not None]


def test_a_fragment_rewritten_with_no_wait_in_between_is_refused():
    # the fragment is rewritten right after the dot that reads it, before any wait
    body = STEP.format(a="%r20,%r21,%r22,%r23") + "\tmov.b32 %r20, %r2;\n\twgmma.wait_group.sync.aligned 1;\n"
    module = parse_module(_loop_ptx(body))
    assert WgmmaAsync.instances(module, "k") == []
    wait = module.function("k").body[exit_waits(module.function("k"))[0]].ident
    with pytest.raises(NotApplicable, match="no wait between"):
        WgmmaAsync("k", wait).made(module)


def test_a_wgmma_outside_a_loop_is_refused():
    before = STEP.format(a="%r20,%r21,%r22,%r23") + "\twgmma.wait_group.sync.aligned 0;\n"
    body = STEP.format(a="%r24,%r25,%r26,%r27") + "\twgmma.wait_group.sync.aligned 1;\n"
    module = parse_module(_loop_ptx(body, before=before))
    wait = module.function("k").body[exit_waits(module.function("k"))[0]].ident
    with pytest.raises(NotApplicable, match="outside a straight loop"):
        WgmmaAsync("k", wait).made(module)


def test_a_join_whose_clean_way_writes_no_accumulator_is_not_offered():
    ptx = _loop_ptx(STEP.format(a="%r20,%r21,%r22,%r23") + "\twgmma.wait_group.sync.aligned 1;\n")
    ptx = ptx.replace("\tmov.b32 %r10, 0;\n\tmov.b32 %r11, 0;\n", "\tmov.b32 %r30, 0;\n")
    assert WgmmaAsync.instances(parse_module(ptx), "k") == []


def _triton_ptxas() -> bool:
    try:
        from reorder.binary.tools import triton_bin_dir

        return (triton_bin_dir() / "ptxas").is_file()
    except Exception:  # noqa: BLE001 - no Triton here
        return False


@pytest.mark.skipif(not _triton_ptxas(), reason="Triton's bundled ptxas is not installed")
def test_ptxas_keeps_the_moved_loop_asynchronous(ffn, tmp_path):
    """Compiled as Triton compiles (reorder.ptx.toolchain.compile picks Triton's ptxas and flags for
    Triton's PTX): the original has a wait of 0 after each of the loop's 8 HGMMAs; the moved
    one has one wait of 0, on the way out of the loop, and the verifier accepts it."""
    from reorder.build.ptxcandidate import verdict
    from reorder.ptx.toolchain.compile import compile_ptx

    (move,) = WgmmaAsync.instances(ffn, KERNEL)
    moved_path = tmp_path / "moved.ptx"
    moved_path.write_text(move.apply(ffn).text)

    def zero_waits(path: Path) -> tuple[int, int, Path]:
        cubin = compile_ptx(path).cubin
        code = decode_kernel(read_cubin(cubin), KERNEL)
        texts = [i.text for i in code.instructions]
        zero = sum(bool(re.search(r"WARPGROUP\.DEPBAR\.LE gsb0, 0x0\b", t)) for t in texts)
        return zero, sum(t.startswith("HGMMA") for t in texts), cubin

    original_zero, hgmma, _ = zero_waits(FFN)
    moved_zero, moved_hgmma, cubin = zero_waits(moved_path)
    assert hgmma == moved_hgmma == 8
    assert original_zero == 8 and moved_zero == 1
    assert verdict(cubin, KERNEL).ok


def test_a_wait_without_a_count_is_judged_not_guessed():
    body = STEP.format(a="%r20,%r21,%r22,%r23") + "\twgmma.wait_group.sync.aligned %r3;\n"
    module = parse_module(_loop_ptx(body))
    assert WgmmaAsync.instances(module, "k") == []
    with pytest.raises(NotApplicable, match="without a count"):
        loop_breaks(module.function("k"))
