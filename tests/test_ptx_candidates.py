"""PTX candidates: moves, then the producer's ptxas, then the SASS verifier.

The checked-in candidates (benchmarks/kernels/ptx_candidates, built by
`python -m benchmarks.ptx_candidates`) rebuild from their checked-in source PTX to the same
text and match their manifest; RMSNorm's candidate issues its normalise-pass loads before
the block reduction's barrier; a candidate of every kernel nvcc makes of the project's
sources compiles and verifies; `reorder ptx-hoist` lists, writes, and refuses to overwrite
its input."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import ptx_sources  # tests/ptx_sources.py
import pytest
from shared_listings import private_cache  # tests/shared_listings.py
from sweeps import at_least, sample  # tests/sweeps.py

from benchmarks.ptx_candidates import FALLBACK_MODES, RMSNORM
from reorder.binary.cubin import read_cubin
from reorder.binary.tools import have_tool
from reorder.build.ptxcandidate import read_ptx, verdict, write_and_compile
from reorder.cli.main import main
from reorder.ptx.space.plans import plan
from reorder.ptx.toolchain.compile import compile_ptx
from reorder.sass.model import decode_kernel

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "benchmarks/kernels/ptx_candidates"
MANIFEST = json.loads((FOLDER / "manifest.json").read_text())
needs_ptxas = pytest.mark.skipif(not have_tool("ptxas"), reason="no ptxas here")


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("REORDER_CACHE", str(private_cache(tmp_path / "cache")))


def test_manifest_matches_the_checked_in_files():
    assert MANIFEST["candidates"]
    for row in MANIFEST["candidates"]:
        assert hashlib.sha256((ROOT / row["cubin"]).read_bytes()).hexdigest() == row["cubin_sha256"]
        assert hashlib.sha256((ROOT / row["source_ptx"]).read_bytes()).hexdigest() == row["source_ptx_sha256"]
        assert row["verify"] == "legal"
        assert verdict(ROOT / row["cubin"], row["kernel"]).ok  # every built candidate verifies
    rms = [r for r in MANIFEST["candidates"] if r["kernel"] == RMSNORM and r["mode"] == "barrier"]
    assert rms and rms[0]["moves"][0] == "peel:$L__BB1_37" and len(rms[0]["moves"]) == 9


def test_candidates_rebuild_from_their_source_ptx():
    for row in MANIFEST["candidates"]:
        moved, moves = plan(read_ptx(ROOT / row["source_ptx"]), row["kernel"], row["noalias"], row["mode"])
        assert [m.describe() for m in moves] == row["moves"]
        assert moved.text == (ROOT / row["ptx"]).read_text(), row["ptx"]


@needs_ptxas
def test_the_rmsnorm_candidate_loads_before_the_reduction_barrier(tmp_path):
    row = next(r for r in MANIFEST["candidates"] if r["kernel"] == RMSNORM and r["mode"] == "barrier")
    source = ROOT / row["source_ptx"]
    moved, moves = plan(read_ptx(source), RMSNORM, True, "barrier")
    built = write_and_compile(source, RMSNORM, moved, [m.describe() for m in moves], tmp_path / "rms.ptx")
    assert built.verdict.ok and built.sha256 == row["cubin_sha256"]  # the same ptxas makes the same bytes

    def loads_before_barrier(cubin: Path) -> int:
        ops = [i.opcode for i in decode_kernel(read_cubin(cubin), RMSNORM).instructions]
        bar = next(k for k, op in enumerate(ops) if op.startswith("BAR.SYNC"))
        return sum(op.startswith("LDG") for op in ops[:bar])

    original = compile_ptx(source).cubin
    assert loads_before_barrier(original) == 12  # pass 1's loads of x
    assert loads_before_barrier(built.cubin) == 12 + 8  # and the normalise pass's x and w


@pytest.fixture(scope="module")
def release_ptx() -> list[Path]:
    found = [p for p in ptx_sources.nvcc_ptx() if ".release." in p.name]
    if not found:
        pytest.skip("nvcc is not installed")
    return found


@pytest.mark.slow
@needs_ptxas
def test_every_kernel_of_the_corpus_gets_a_candidate_that_compiles_and_verifies(release_ptx, tmp_path):
    """Each kernel's first plan that moves something, all of a source's kernels moved in one
    module: ptxas compiles every entry on its own, so one build per source compiles the same
    candidates as one build per kernel (a kernel's build compiles its whole module: 201
    kernel compiles over the corpus instead of 59), and each kernel is verified in it.
    One kernel's build alone is the CLI's path (test_cli_writes_the_moved_ptx_and_its_cubin).
    The CPU tier builds every eighth source (tests/sweeps.py)."""
    built = 0
    for path in sample(release_ptx, every=8):
        module = read_ptx(path)
        moved, names, described = module, [], []
        for kernel in module.kernels:
            for mode in FALLBACK_MODES:
                after, moves = plan(moved, kernel.name, True, mode)
                if moves:
                    moved, names, described = after, [*names, kernel.name], [*described, *(m.describe() for m in moves)]
                    break
        if not names:
            continue
        out = write_and_compile(path, names[0], moved, described, tmp_path / f"{path.stem}.ptx")
        assert out.verdict.ok, (names[0], out.verdict.violations)
        for name in names[1:]:
            checked = verdict(out.cubin, name)
            assert checked.ok, (name, checked.violations)
        assert read_ptx(out.ptx).text == moved.text  # every kernel's moves are in the one module built
        built += len(names)
    assert built >= at_least(40, 7), built


def test_cli_lists_instances_and_the_plans(capsys):
    source = str(FOLDER / "source/rmsnorm.ptx")
    assert main(["ptx-hoist", source, "--kernel", RMSNORM, "--assume-noalias", "--list"]) == 0
    out = capsys.readouterr().out
    assert "ASSUMPTION" in out and "after peel:$L__BB1_37:" in out
    assert "plan barrier: peel:$L__BB1_37 hoist:558p@barrier" in out
    assert main(["ptx-hoist", source, "--list"]) == 2  # two kernels: which one?
    assert "name one with --kernel" in capsys.readouterr().err


@needs_ptxas
def test_cli_writes_the_moved_ptx_and_its_cubin(tmp_path, capsys):
    source = FOLDER / "source/rmsnorm.ptx"
    out = tmp_path / "rms.ptx"
    code = main(
        [
            "ptx-hoist",
            str(source),
            "--kernel",
            RMSNORM,
            "--assume-noalias",
            "-o",
            str(out),
            "--moves",
            "peel:L__BB1_37",
            "hoist:all@barrier",
        ]
    )
    assert code == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert out.read_text() == (FOLDER / f"{RMSNORM}.ptx").read_text()
    assert (tmp_path / "rms.cubin").is_file() and "verify rmsnorm_triton_style: legal" in printed


def test_cli_refuses_to_overwrite_its_input_and_bad_moves(tmp_path, capsys):
    source = tmp_path / "in.ptx"
    source.write_text((FOLDER / "source/rmsnorm.ptx").read_text())
    before = source.read_bytes()
    assert main(["ptx-hoist", str(source), "--kernel", RMSNORM, "--assume-noalias", "-o", str(source)]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err and source.read_bytes() == before
    assert (
        main(["ptx-hoist", str(source), "--kernel", RMSNORM, "-o", str(tmp_path / "o.ptx"), "--moves", "sideways:3"])
        == 2
    )
    assert (
        main(
            [
                "ptx-hoist",
                str(source),
                "--kernel",
                RMSNORM,
                "-o",
                str(tmp_path / "o.ptx"),
                "--moves",
                "hoist:506@barrier",
            ]
        )
        == 1
    )  # in the loop: its address changes
    assert "no legal destination" in capsys.readouterr().err
