"""One verify command for every output: a PTX-route winner of `reorder optimize` passes
`reorder verify OUT --against IN` for a PTX input and for a cubin input with --ptx, judged by
its route from its provenance record (reorder.build.record, reorder.build.judge): its PTX moves
re-checked on the input's PTX, ptxas's build judged as compiler output, its SASS moves judged
against that build. Without the record, or with one that does not hold, verify says what it
cannot judge and exits 1. Also an ATen-style kernel's PTX-route output, whose PTX names the
kernel with another anonymous-namespace suffix than the cubin."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import ptx_sources  # tests/ptx_sources.py
import pytest
from test_ptx_search import BODY

from reorder.binary.cubin import read_cubin
from reorder.binary.tools import have_tool
from reorder.build.ptxlevel import build, picks_of, ptx_level, seed_params
from reorder.build.record import output_record, read_record, record_path, write_with_record
from reorder.build.space import Choice
from reorder.cli.main import main

pytestmark = pytest.mark.skipif(not have_tool("ptxas"), reason="needs ptxas")
NAMES = Path(__file__).resolve().parent / "data" / "names"


def _optimize(*argv: str) -> None:
    flags = ["--device", "cpu", "--budget", "4", "--jobs", "1", "--assume-noalias", "--no-contributions"]
    assert main(["optimize", *argv, *flags]) == 0


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """PTX-route winners: of a PTX input, and of its cubin with --ptx (the seeds put the
    loads above the barrier, and the static model prefers it)."""
    folder = tmp_path_factory.mktemp("route")
    ptx = folder / "k.ptx"
    ptx.write_text(ptx_sources.kernel(BODY))
    cubin = folder / "k.cubin"
    subprocess.run(["ptxas", "-O3", "-arch=sm_90", str(ptx), "-o", str(cubin)], check=True)
    _optimize(str(ptx), "-o", str(folder / "from_ptx.cubin"))
    _optimize(str(cubin), "--ptx", str(ptx), "-o", str(folder / "from_cubin.cubin"))
    return {
        "ptx": ptx,
        "cubin": cubin,
        "from_ptx": folder / "from_ptx.cubin",
        "from_cubin": folder / "from_cubin.cubin",
    }


def _verify(capsys, *argv: str) -> tuple[int, list[str]]:
    code = main(["verify", *argv])
    done = capsys.readouterr()
    _verify.err = done.err  # type: ignore[attr-defined]
    return code, done.out.strip().splitlines()


@pytest.mark.parametrize("output", ["from_ptx", "from_cubin"])
def test_the_winners_are_ptx_route_outputs(runs, output):
    record = read_record(runs[output])
    assert record is not None and record.route == "ptx" and record.ptx is not None
    assert record.ptx.applied and record.ptx.ptx == str(runs["ptx"])


@pytest.mark.parametrize(
    "output, against", [("from_ptx", "ptx"), ("from_ptx", "cubin"), ("from_cubin", "cubin"), ("from_cubin", "ptx")]
)
def test_a_ptx_route_winner_passes_verify_against_its_input(runs, capsys, output, against):
    code, lines = _verify(capsys, str(runs[output]), "--against", str(runs[against]))
    assert code == 0, lines
    assert "judged by that route" in lines[0]
    assert any(line.strip().startswith("PTX moves re-checked on") for line in lines)
    assert any("judged as compiler output: legal" in line for line in lines)
    assert lines[-1] == "verdict: 1 kernel legal (by its PTX route)"


def test_alone_it_is_judged_against_the_input_its_record_names(runs, capsys):
    code, lines = _verify(capsys, str(runs["from_cubin"]))
    assert code == 0 and lines[-1] == "verdict: 1 kernel legal (by its PTX route)"
    assert "as its provenance record says" in _verify.err  # type: ignore[attr-defined]


def _copy(runs, tmp_path, with_record: bool = True) -> Path:
    out = tmp_path / "out.cubin"
    shutil.copy(runs["from_cubin"], out)
    if with_record:
        shutil.copy(record_path(runs["from_cubin"]), record_path(out))
    return out


def test_a_ptx_that_is_not_at_hand_cannot_be_judged(runs, tmp_path, capsys):
    out = _copy(runs, tmp_path)
    raw = json.loads(record_path(out).read_text())
    raw["ptx"]["ptx"] = str(tmp_path / "gone.ptx")
    record_path(out).write_text(json.dumps(raw))
    code, lines = _verify(capsys, str(out), "--against", str(runs["cubin"]))
    assert code == 1 and lines[-1].startswith("verdict: cannot judge: the PTX its moves were made on")
    code, lines = _verify(capsys, str(out), "--against", str(runs["cubin"]), "--ptx", str(runs["ptx"]))
    assert code == 0, lines


def test_a_move_the_ptx_rules_do_not_allow_fails_the_route(runs, tmp_path, capsys):
    """Without the no-alias assumption no load may cross the barrier: the record's pick is
    not offered on the input's PTX, and the route is not proven."""
    out = _copy(runs, tmp_path)
    raw = json.loads(record_path(out).read_text())
    raw["ptx"]["noalias"] = False
    record_path(out).write_text(json.dumps(raw))
    code, lines = _verify(capsys, str(out), "--against", str(runs["cubin"]))
    assert code == 1 and lines[-1].startswith("verdict: not proven by its route: PTX moves:"), lines


def test_a_record_beside_other_bytes_is_not_used(runs, tmp_path, capsys):
    out = _copy(runs, tmp_path)
    shutil.copy(runs["cubin"], out)  # the input written over the output: the record is stale
    code, lines = _verify(capsys, str(out), "--against", str(runs["cubin"]))
    assert code == 0 and lines[-1] == f"verdict: 1 kernel legal (against {runs['cubin']})"
    assert "describes another file" in _verify.err  # type: ignore[attr-defined]


ATEN_CUBIN, ATEN_PTX = NAMES / "aten_style.cubin", NAMES / "aten_style.ptx"


def _aten_output(tmp_path: Path) -> tuple[Path, str]:
    """A PTX-route output of the ATen-style kernel (the first seed: the loop peeled, the load
    of the row's scale above the barrier, then stall cuts), written as optimize writes it."""
    (kernel,) = [k.name for k in read_cubin(ATEN_CUBIN).kernels]
    level = ptx_level(ATEN_PTX, kernel, True, 90)
    picks = picks_of(seed_params(level)[0], level)
    made = build(level, picks, "sc")
    assert made.data is not None, made.reason
    out = tmp_path / "aten_fast.cubin"
    record = output_record(made.data, kernel, ATEN_CUBIN, str(ATEN_CUBIN), level, Choice(ptx=picks, sass="sc"))
    write_with_record(out, made.data, record)
    return out, level.given_name


def test_an_aten_style_kernel_with_a_separately_compiled_ptx(tmp_path, capsys):
    """The PTX names the kernel with another anonymous-namespace suffix: the route is remade
    from it under the cubin's name, and the output passes verify --against the cubin or the PTX."""
    out, in_ptx = _aten_output(tmp_path)
    code, lines = _verify(capsys, str(out), "--against", str(ATEN_CUBIN))
    assert code == 0, lines
    assert any(f"(its kernel {in_ptx})" in line for line in lines)
    assert lines[-1] == "verdict: 1 kernel legal (by its PTX route)"
    code, lines = _verify(capsys, str(out), "--against", str(ATEN_PTX))
    assert code == 0, lines


def test_without_its_record_verify_says_what_it_cannot_judge(tmp_path, capsys):
    """Another build of the kernel is not a reordering of the input: without the record,
    verify judges its schedule by the latency tables alone and says the record is what judging
    it by its route needs."""
    out, _ = _aten_output(tmp_path)
    record_path(out).unlink()
    code, lines = _verify(capsys, str(out), "--against", str(ATEN_CUBIN))
    assert any("not a reordering of" in line and "provenance record" in line for line in lines), lines
    assert lines[-1] == f"verdict: 1 kernel legal (against {ATEN_CUBIN})" and code == 0  # its schedule, not its making
