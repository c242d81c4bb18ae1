"""Compiler patterns the verifier once misread, each with its reproducer.

- A result issued without a scoreboard, covered by a later op of the same in-order queue
  (POPC, then FLO.U32 on SB0, then a wait on SB0 before the POPC's reader): legal, and
  without that wait a rejection naming the POPC.
- Complementary guards on a pending write (@!P0 MUFU.RCP R8, then @P0 FFMA R8): at most one
  runs, so the FFMA need not wait for the MUFU.
- Class-wide compiler minima never lower a requirement: MIO -> FXU `untracked` at 31 let a
  load whose scoreboard a mutant dropped be read 49 cycles later.
"""

from __future__ import annotations

from pathlib import Path

from legality.latency import Entry, class_table, load_table
from legality.verify import verify_instructions
from reorder.binary.cubin import read_cubin
from reorder.sass.model import decode_kernel

CORPUS = Path(__file__).resolve().parent / "corpus"


def _without_wait(instructions, offset: int, sb: int):
    return tuple(
        ins.with_ctrl(ins.ctrl.with_(wait=ins.ctrl.wait & ~(1 << sb))) if ins.offset == offset else ins
        for ins in instructions
    )


def test_an_unscoreboarded_op_is_covered_by_the_next_scoreboard_of_its_queue() -> None:
    code = decode_kernel(read_cubin(CORPUS / "cubin" / "sm_80" / "int64.cubin"), "bit_ops")
    at = {ins.offset: ins for ins in code.instructions}
    assert at[0xE0].text == "POPC R5, R4" and at[0xE0].ctrl.wbar == 7
    assert at[0x120].base == "FLO" and at[0x120].ctrl.wbar == 0 and at[0x150].ctrl.waits_on(0)
    assert not verify_instructions(code.instructions, 80)
    dropped = verify_instructions(_without_wait(code.instructions, 0x150, 0), 80)
    assert any(v.producer_offset == 0xE0 and v.consumer_offset == 0x180 and v.kind == "scoreboard" for v in dropped)


def test_complementary_guards_on_a_pending_write_are_not_a_dependency() -> None:
    code = decode_kernel(read_cubin(CORPUS / "heldout" / "cubin" / "sm_80_O1.cubin"), "softmax_row")
    at = {ins.offset: ins for ins in code.instructions}
    assert at[0x1350].text == "@!P0 MUFU.RCP R8, R7" and at[0x1360].text.startswith("@P0 FFMA R8,")
    assert not [v for v in verify_instructions(code.instructions, 80) if v.producer_offset == 0x1350]


def test_class_wide_compiler_minima_never_lower_a_requirement() -> None:
    observed = [
        Entry("MIO", "FXU", "untracked", 31, "ptxas-observed: POPC -> IADD3"),
        Entry("FXU", "FMAI", "waw", 1, "ptxas-observed"),
        Entry("BRU", "BRU", "waw", 28, "ptxas-observed"),
    ]
    for arch in (80, 90):
        table = class_table(arch, observed)
        assert table.lookup("MIO", "FXU", "untracked").cycles > 64  # never ready without a scoreboard
        assert table.lookup("FXU", "FMAI", "waw").cycles == 2
        assert table.lookup("BRU", "BRU", "waw").cycles == 28  # a pair the reference lacks is only filled upwards
        assert load_table(arch).lookup("MIO", "FXU", "untracked").cycles > 64
