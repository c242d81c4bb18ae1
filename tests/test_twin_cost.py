"""What makes Triton builds cheaper keeps every result: words listed before are not listed
again, a SASS-moved build keeps the listing its verifier judged, and a menu walks only its own
kinds."""

from __future__ import annotations

from pathlib import Path

import pytest

from reorder.binary.cubin import parse_cubin
from reorder.binary.tools import have_tool
from reorder.sass import model, rename

ROOT = Path(__file__).resolve().parent.parent
TRITON = ROOT / "reorder" / "suite" / "triton_kernels" / "sm_90"
NVCC = ROOT / "tests" / "corpus" / "cubin" / "sm_90"

needs_nvdisasm = pytest.mark.skipif(not have_tool("nvdisasm"), reason="nvdisasm not installed")


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """No listing held from elsewhere: every listing below is made here."""
    monkeypatch.setenv("REORDER_CACHE", str(tmp_path))
    monkeypatch.setattr(model, "_PRIMED", {})
    monkeypatch.setattr("reorder.sass.readback._RAW", {})
    model._disassemble_cached.cache_clear()
    calls: list[str] = []
    real = model.nvdisasm_json

    def counted(data, suffix, *options):
        calls.append(suffix)
        return real(data, suffix, *options)

    monkeypatch.setattr(model, "nvdisasm_json", counted)
    monkeypatch.setattr(rename, "nvdisasm_json", counted)  # its own binding of the name
    yield calls
    model._disassemble_cached.cache_clear()


def test_a_menu_walks_its_own_kinds_only_and_makes_the_same_ptx():
    """Walking only the menu's kinds (the others would be decided OFF everywhere), with the
    instances kept across menus, makes each menu's PTX exactly as the walk over every kind."""
    from reorder.ptx.model.model import parse_module
    from reorder.ptx.space.registry import OFF, MoveOptions
    from reorder.ptx.space.searchspace import walk
    from reorder.triton import twins

    module = parse_module((TRITON / "ffn_swiglu_fp16.ptx").read_text())  # loop and wgmma moves
    options = MoveOptions(module.kernels[0].name, True)
    offers: dict = {}
    moved = 0
    for menu in twins.MENUS:
        if menu.plan:
            continue
        wanted = dict(menu.choices)

        def decide(i, wanted=wanted):
            return wanted[i.kind] if wanted.get(i.kind) in i.choices else OFF

        whole = walk(module, options, decide)
        own = walk(module, options, decide, kinds=wanted.keys(), offers=offers)
        assert own.module.text == whole.module.text and own.applied == whole.applied and own.picks == whole.picks
        moved += bool(own.applied)
    assert moved >= 6 and offers


@needs_nvdisasm
def test_words_listed_alone_before_are_read_again_without_a_process(fresh):
    """A rename's final check lists the word it chose from its candidates, listed a moment
    before: those records are taken again (the same records), a new word still goes to nvdisasm."""
    disassemble_guarded = rename.disassemble_guarded
    code = model.decode_kernel(parse_cubin((TRITON / "rmsnorm_row_fp32.cubin").read_bytes()))
    named = {"CALL", "RET", "BRX", "JMX", "JMP"}  # control flow: its record depends on its address
    plain = [i.word for i in code.instructions if i.target is None and i.base not in named][:12]
    first = disassemble_guarded(plain, 90)
    runs = len(fresh)
    assert disassemble_guarded(plain[3:9], 90) == first[3:9] and len(fresh) == runs
    fresh_word = plain[0] ^ 1 << 24  # another register in Ra: never listed
    disassemble_guarded([plain[1], fresh_word], 90)
    assert len(fresh) == runs + 1


@needs_nvdisasm
def test_a_sass_moved_build_is_predicted_from_the_listing_its_verifier_judged(fresh):
    """moves_binary holds the read-back listing of what it returns; it equals nvdisasm's own."""
    from reorder.triton.builds import moves_binary

    data = (TRITON / "softmax_fp16.cubin").read_bytes()
    moved = moves_binary(data, False)
    assert moved != data, "the SASS moves change this kernel"
    runs = len(fresh)
    held = model.disassemble(moved)
    assert len(fresh) == runs  # held, not listed again
    assert model._listing(moved) == held  # nvdisasm's own listing of the returned bytes
