"""Bad input to every command is one line on stderr and exit 2: never a traceback, never a
file written where it was refused. Each case here was a traceback once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CUBIN = ROOT / "benchmarks" / "kernels" / "cubin" / "rmsnorm.cubin"
SPEC = ROOT / "benchmarks" / "kernels" / "specs" / "rmsnorm_triton_style.toml"


def _refused(*args: str, cwd: Path) -> str:
    """Run `reorder ARGS` without a GPU; assert the one-line refusal (the last line, the only
    one that speaks of an error) and return it."""
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    done = subprocess.run(
        [sys.executable, "-m", "reorder", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()  # progress lines may come first
    (line,) = [x for x in lines if "error" in x.lower()]
    assert line == lines[-1] and line.startswith(f"reorder {args[0]}: error: ")
    return line


@pytest.fixture()
def junk(tmp_path: Path) -> dict[str, Path]:
    binary = tmp_path / "binary.dat"
    binary.write_bytes(bytes(range(256)) * 4)
    plain = tmp_path / "plain.txt"
    plain.write_text("not a folder\n")
    toml = tmp_path / "thin.toml"
    toml.write_text('[kernel]\nname = "rmsnorm_triton_style"\n')
    return {"binary": binary, "plain": plain, "thin": toml}


def test_binary_stall_config(tmp_path: Path, junk: dict[str, Path]) -> None:
    line = _refused("stalls", str(CUBIN), "-o", "out.cubin", "--config", str(junk["binary"]), cwd=tmp_path)
    assert "not a text config file" in line and not (tmp_path / "out.cubin").exists()


def test_binary_suite_and_broken_entries(tmp_path: Path, junk: dict[str, Path]) -> None:
    assert "cannot read the suite" in _refused("bench", str(junk["binary"]), "--device", "cpu", cwd=tmp_path)
    suite = tmp_path / "suite.toml"
    suite.write_text('[defaults]\nbudget = 2\n\n[[kernel]]\nname = "k"\ncubin = "nowhere.cubin"\nspec = "x.toml"\n')
    assert "kernel entry 1 (k)" in _refused("bench", str(suite), "--device", "cpu", cwd=tmp_path)
    suite.write_text('[[kernel]]\nname = "k"\n')
    assert "missing key 'cubin'" in _refused("bench", str(suite), "--device", "cpu", cwd=tmp_path)


def test_launch_spec_is_checked_even_without_a_gpu(tmp_path: Path, junk: dict[str, Path]) -> None:
    line = _refused(
        "optimize",
        str(CUBIN),
        "--launch",
        str(junk["thin"]),
        "-o",
        "fast.cubin",
        "--budget",
        "2",
        "--device",
        "cpu",
        cwd=tmp_path,
    )
    assert "missing 'grid'" in line and not (tmp_path / "fast.reorder").exists()


def test_output_where_no_folder_can_be(tmp_path: Path, junk: dict[str, Path]) -> None:
    under_a_file = junk["plain"] / "out.cubin"
    assert "cannot write there" in _refused("stalls", str(CUBIN), "-o", str(under_a_file), cwd=tmp_path)
    line = _refused(
        "optimize",
        str(CUBIN),
        "-o",
        str(under_a_file),
        "--budget",
        "2",
        "--device",
        "cpu",
        "--assume-noalias",
        cwd=tmp_path,
    )
    assert "plain.txt" in line
    assert junk["plain"].read_text() == "not a folder\n"


def test_timeline_never_overwrites_its_csv(tmp_path: Path, junk: dict[str, Path]) -> None:
    assert "not a timeline CSV" in _refused("timeline", str(junk["binary"]), "-o", "t.png", cwd=tmp_path)
    assert not (tmp_path / "t.png").exists()
