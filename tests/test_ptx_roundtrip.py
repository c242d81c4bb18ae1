"""PTX model: every PTX in the repository, and every PTX nvcc makes of the project's CUDA
sources (release, -lineinfo and -G debug builds), parses into values and prints back byte
for byte; the parsed values say what the text says."""

from __future__ import annotations

import re
from pathlib import Path

import ptx_sources  # tests/ptx_sources.py
import pytest

from reorder.ptx.model.lexer import pieces
from reorder.ptx.model.model import parse_module

ROOT = Path(__file__).resolve().parent.parent
REPO_PTX = sorted(p for p in ROOT.glob("**/*.ptx") if ".venv" not in p.parts and ".git" not in p.parts)


@pytest.fixture(scope="module")
def nvcc_ptx() -> tuple[Path, ...]:
    found = ptx_sources.nvcc_ptx()
    if not found:
        pytest.skip("nvcc is not installed")
    return found


_INSTRUCTION_LINE = re.compile(r"^\s*(@!?%\w+\s+)?[a-z][a-z0-9_.:]*[\s;].*;")


def _round_trip(path: Path) -> None:
    text = path.read_text()
    module = parse_module(text)
    assert module.text == text, path
    # every line that reads as an instruction starts a parsed instruction statement
    starts = {s.ident for f in module.functions for s in f.body if s.kind == "instruction"}
    lines = {str(n) for n, line in enumerate(text.splitlines(), 1) if _INSTRUCTION_LINE.match(line)}
    assert lines and lines <= starts, (path, sorted(lines - starts)[:5])


def test_repository_ptx_round_trips():
    assert len(REPO_PTX) >= 3  # the corpus's nvcc and Triton PTX at least
    for path in REPO_PTX:
        _round_trip(path)


def test_nvcc_ptx_round_trips(nvcc_ptx):
    assert len(nvcc_ptx) >= len(ptx_sources.SOURCES) + 2 * len(ptx_sources.DEBUG_SOURCES)
    for path in nvcc_ptx:
        _round_trip(path)


def test_debug_sections_and_loc_lines_are_kept_whole(nvcc_ptx):
    debug = [p for p in nvcc_ptx if p.name.endswith(".debug.ptx")]
    module = parse_module(debug[0].read_text())
    sections = [i for i in module.items if not hasattr(i, "body") and i.kind == "section"]
    assert sections and all(s.code.rstrip().endswith("}") for s in sections)
    locs = [s for f in module.functions for s in f.body if s.code.startswith(".loc")]
    assert locs and all(s.kind == "directive" for s in locs)


def test_functions_params_and_statements_are_read():
    module = parse_module((ROOT / "benchmarks/kernels/ptx_candidates/source/rmsnorm.ptx").read_text())
    kernel = module.function("rmsnorm_triton_style")
    assert kernel.entry and [p.type for p in kernel.params] == [".u64", ".u64", ".u64", ".u32", ".f32"]
    assert kernel.params[0].name == "rmsnorm_triton_style_param_0"
    labels = [s.label for s in kernel.body if s.kind == "label"]
    assert "$L__BB1_37" in labels
    branch = next(s for s in kernel.body if s.kind == "instruction" and s.ins.guard and s.ins.base == "bra")
    assert branch.ins.guard.startswith("%p") and branch.ins.operands[-1].startswith("$L__")
    vector = next(s for s in kernel.body if s.kind == "instruction" and s.ins.opcode == "ld.global.v4.f32")
    assert vector.ins.operands[0].startswith("{") and vector.ins.address() == "%rd3"


def test_triton_ptx_reads_pointer_params_and_inline_asm_loads():
    module = parse_module((ROOT / "tests/corpus/triton/sm_90/rmsnorm.ptx").read_text())
    kernel = module.kernels[0]
    assert kernel.params[0].pointer and not kernel.params[3].pointer
    guarded = [s for s in kernel.body if s.kind == "instruction" and s.ins.opcode == "ld.global.b32" and s.ins.guard]
    assert guarded and guarded[0].ins.address() == "%rd1 + 0"


def test_multi_line_call_is_one_statement(nvcc_ptx):
    calls = next(p for p in nvcc_ptx if p.name == "calls.release.ptx")
    module = parse_module(calls.read_text())
    call = [s for f in module.functions for s in f.body if s.kind == "instruction" and s.ins.base == "call"]
    assert call and all(s.code.count("\n") >= 3 and s.code.endswith(";") for s in call)
    assert any(s.kind == "open" for f in module.functions for s in f.body)  # call sequences are { } scopes


def test_pieces_of_two_statements_on_one_line_are_not_alone():
    text = "\t{ .reg .b32 t; mov.b32 t, 0; }\n\tadd.s32 %r1, %r2, 1; // done\n"
    found = pieces(text)
    assert "".join(p.text for p in found) == text
    assert [p.kind for p in found] == ["open", "directive", "instruction", "close", "instruction"]
    assert not found[2].alone and found[-1].alone and found[-1].text.endswith("// done\n")


def test_the_checked_in_nvcc_ptx_is_current_and_what_this_nvcc_makes(tmp_path: Path) -> None:
    """The archive holds every release build; made by this nvcc, it is current (a changed
    source fails with the command that remakes it) and this nvcc makes every seventh file of it
    byte for byte (every file under REORDER_FULL_SWEEPS=1); the run's PTX holds every build."""
    import shutil

    from sweeps import FULL  # tests/sweeps.py

    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not installed")
    digest, made_by, files = ptx_sources.archived()
    assert set(files) == set(ptx_sources.file_names(ptx_sources.ARCHIVED_TAGS)), "remake: python tests/ptx_sources.py"
    if made_by != ptx_sources.nvcc_version(nvcc):
        pytest.skip(f"the archive was made by another nvcc: {made_by.strip().splitlines()[-1:]}")
    assert digest == ptx_sources.build_digest(nvcc), "a source changed since: python tests/ptx_sources.py"
    chosen = tuple(sorted(files)) if FULL else tuple(sorted(files))[::7]
    ptx_sources._build(nvcc, tmp_path, only=chosen)
    for name in chosen:
        assert (tmp_path / name).read_bytes() == files[name], name
    assert {p.name for p in ptx_sources.nvcc_ptx()} == set(ptx_sources.file_names())
