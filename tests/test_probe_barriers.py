"""`reorder probe` on lastBlockSum<256> (benchmarks/kernels/structs, its zeros spec): it built
156 variants, then stopped with "probe after 160: originals changed at [], 1 verifier
violations", exit 1, and left the 156 in the build folder. Two causes, each fixed: the
barrier-window rule compared the `@P0 BRA` the probe re-targets by its raw bits (its new
immediate is not what the compiler placed, but the instruction is), and positions beside a
MEMBAR/ERRBAR (whose neighbours stay as compiled) were built, then refused. Those positions are
now left out before anything is built, and said to be; a build that fails removes its variants."""

from __future__ import annotations

from pathlib import Path

import pytest

from reorder.base.errors import InputError, LegalityError
from reorder.binary.cubin import read_cubin
from reorder.cli.main import main
from reorder.probe import run as tp
from reorder.probe.variants import barrier_neighbours, build_slide, check_build, probe_positions
from reorder.sass.model import decode_kernel
from timing.cli_support import validated_spec

ROOT = Path(__file__).resolve().parent.parent
STRUCTS = ROOT / "benchmarks" / "kernels" / "structs"
CUBIN = STRUCTS / "cubin" / "last_block.cubin"
SPEC = STRUCTS / "specs" / "last_block_sum_zeros.toml"


@pytest.fixture(scope="module")
def last_block():
    spec = validated_spec(SPEC, [CUBIN])
    return decode_kernel(read_cubin(CUBIN), spec.name), spec


def _index(code, offset: int) -> int:
    return next(i for i, x in enumerate(code.instructions) if x.offset == offset)


def test_the_probe_after_a_retargeted_branch_near_a_membar_is_legal(last_block) -> None:
    code, spec = last_block
    k = _index(code, 0x0A00)
    assert code.instructions[k].base == "BRA" and code.instructions[k + 6].opcode == "MEMBAR.SC.GPU"
    result = check_build(code, build_slide(code, k, tp.layout_of(spec)))
    assert result.changed == () and result.violations == ()


def test_positions_beside_a_membar_are_left_out_before_building(last_block) -> None:
    code, spec = last_block
    store, membar = _index(code, 0x0A50), _index(code, 0x0A60)
    assert code.instructions[membar].opcode == "MEMBAR.SC.GPU"
    assert {store, membar} <= set(barrier_neighbours(code)) and not {store, membar} & set(probe_positions(code))
    with pytest.raises(InputError, match="beside a barrier whose neighbours stay as compiled"):
        build_slide(code, store, tp.layout_of(spec))


def test_a_failed_probe_build_removes_its_variants(last_block, tmp_path: Path, monkeypatch) -> None:
    """The third variant fails its check: the two written before it go, the folder with them."""
    code, spec = last_block
    positions = probe_positions(code)[:5]
    real = tp.check_build
    calls = []

    def counting(original, build):
        calls.append(1)
        result = real(original, build)
        return type(result)((0x10,), result.violations, result.code) if len(calls) == 3 else result

    monkeypatch.setattr(tp, "check_build", counting)
    folder = tmp_path / "variants"
    with pytest.raises(LegalityError, match=r"the probe after instruction \d+ .* fails its check.*no variant was kept"):
        tp.build_variants(code, positions, tp.layout_of(spec), folder)
    assert len(calls) == 3 and not folder.exists()


def test_the_struct_kernel_probes_end_to_end(tmp_path: Path, capsys) -> None:
    """The command of the report, on the instructions before its MEMBAR (the whole kernel's
    299 variants take a minute): exit 0, every variant legal, the skipped positions said."""
    folder = tmp_path / "probe"
    code = main(["probe", str(CUBIN), "--launch", str(SPEC), "--build-only", str(folder), "--range", "a00-a60"])
    out = capsys.readouterr().out
    assert code == 0, out
    kept = "not probed after 2 instructions beside barriers kept as compiled: 0x0a50 STG.E, 0x0a60 MEMBAR.SC.GPU\n"
    assert kept in out
    assert "originals bit-identical, verifier: legal" in out and len(list(folder.iterdir())) == 5
