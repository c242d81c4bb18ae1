"""`reorder diff` and optimize's changes.diff: what a candidate changed, with control codes."""

from __future__ import annotations

from pathlib import Path

import pytest

from reorder.binary.cubin import read_cubin
from reorder.cli.main import main
from reorder.report.sassdiff import sass_diff, summarize
from reorder.sass.model import decode_kernel

CUBIN = Path(__file__).resolve().parent.parent / "benchmarks" / "kernels" / "cubin" / "rmsnorm.cubin"
KERNEL = "rmsnorm_triton_style"


@pytest.fixture(scope="module")
def moved(tmp_path_factory) -> dict[str, object]:
    out = tmp_path_factory.mktemp("moved")
    assert main(["stalls", str(CUBIN), "--kernel", KERNEL, "-o", str(out / "cut.cubin")]) == 0
    assert main(["batch-loads", str(CUBIN), "--kernel", KERNEL, "--assume-noalias", "-o", str(out / "sb.cubin")]) == 0
    code = lambda p: decode_kernel(read_cubin(p), KERNEL)  # noqa: E731
    return {"original": code(CUBIN), "cut": code(out / "cut.cubin"), "sb": code(out / "sb.cubin"), "dir": out}


def test_identical_kernels_have_an_empty_diff(moved):
    a = moved["original"]
    assert sass_diff(a, a) == summarize(a, a).lines()
    s = summarize(a, a)
    assert (s.moved, s.control_only, s.text_changed) == (0, 0, 0)


def test_a_stall_cut_changes_control_codes_only(moved):
    s = summarize(moved["original"], moved["cut"])
    assert s.moved == 0 and s.text_changed == 0 and s.control_only > 0
    assert s.stalls[1] < s.stalls[0] and s.registers == (32, 32)
    lines = sass_diff(moved["original"], moved["cut"])
    changed = [x for x in lines if x.startswith(("-B", "+B"))]
    assert changed and len(changed) == 2 * s.control_only  # each recoded instruction: one - and one +
    assert all(":S" in x for x in changed)


def test_a_slice_batch_moves_loads_and_renames(moved):
    s = summarize(moved["original"], moved["sb"])
    assert s.moved > 0 and s.text_changed > 0 and s.registers == (32, 54)
    hunks = [x for x in sass_diff(moved["original"], moved["sb"]) if x.startswith("@@")]
    assert hunks and all("original /*" in h for h in hunks)


def test_cli_and_the_optimize_report(moved, tmp_path, capsys):
    assert main(["diff", str(CUBIN), str(moved["dir"] / "cut.cubin"), "--kernel", KERNEL]) == 0
    assert "with only a new control code" in capsys.readouterr().out
    other = Path(__file__).resolve().parent / "corpus" / "cubin" / "sm_90" / "elementwise.cubin"
    assert main(["diff", str(CUBIN), str(other)]) == 2
    assert "no kernel in common" in capsys.readouterr().err
    fast = tmp_path / "fast.cubin"
    assert (
        main(
            [
                "optimize",
                str(CUBIN),
                "--kernel",
                KERNEL,
                "--assume-noalias",
                "--budget",
                "3",
                "--device",
                "cpu",
                "-o",
                str(fast),
            ]
        )
        == 0
    )
    diff = (tmp_path / "fast.reorder" / "changes.diff").read_text()
    assert diff.startswith(f"// {KERNEL}: ") and "changes.diff" in (tmp_path / "fast.reorder" / "report.md").read_text()
