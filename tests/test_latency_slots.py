"""The compiler's own distances are reused only for the operand slot it scheduled."""

from __future__ import annotations

from pathlib import Path

import tomllib

from legality.latency import TABLE_DIR, load_table, read_slot
from reorder.binary.cubin import read_cubin
from reorder.sass.model import decode_kernel

SUITE = Path(__file__).parent.parent / "benchmarks" / "kernels" / "cubin"


def _ins(cubin: str, kernel: str, offset: int):
    code = decode_kernel(read_cubin(SUITE / cubin), kernel)
    return next(i for i in code.instructions if i.offset == offset)


def test_slots_name_the_operand_and_the_half() -> None:
    ldg = _ins("embedding_bag.cubin", "embedding_bag_sum", 0x07F0)  # LDG.E.64 R16, desc[UR8][R6.64]
    assert (read_slot("UR8", ldg), read_slot("R6", ldg), read_slot("R7", ldg)) == ("1", "1.2", "1.3")
    guarded = _ins("embedding_bag.cubin", "embedding_bag_sum", 0x0800)  # @!P0 LDG.E.64 R8, desc[UR8][R6.64+0x8]
    assert read_slot("P0", guarded) == "g"


def test_an_exact_pair_lowers_only_its_own_slot() -> None:
    table = load_table(90)
    pairs = {k: e for k, e in table.pairs.items() if k[2].startswith("raw#")}
    assert pairs, "the ptxas-observed reads are keyed by slot"
    (producer, consumer, kind), entry = next(iter(sorted(pairs.items())))
    slot = kind.split("#")[1]
    args = (producer, consumer, "FXU", "MIO", "raw")
    assert table.lookup_pair(*args, slot).cycles == min(entry.cycles, table.lookup("FXU", "MIO", "raw").cycles)
    assert table.lookup_pair(*args, slot + "x").cycles == table.lookup("FXU", "MIO", "raw").cycles


def test_no_class_wide_read_minimum_is_loaded() -> None:
    """A class-wide minimum mixes operands read at different stages (LEA.HI.X -> LDG's
    address took a conversion's 4 and gave an illegal address on the H200)."""
    doc = tomllib.loads((TABLE_DIR / "ptxas_sm_90.toml").read_text())
    assert not [e for e in doc["entry"] if e["kind"].startswith("raw")]
    table = load_table(90)
    assert table.lookup("FXU", "MIO", "raw").cycles >= 5
