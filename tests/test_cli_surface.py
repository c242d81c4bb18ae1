"""What every command shows before and after its work: `--version`, every option's default in
`--help`, the one exit-code table (reorder.base.exitcodes) at the foot of every help and in
docs/cli.md, and output folders that must exist unless `--mkdir`."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import pytest

from reorder import __version__
from reorder.base import exitcodes
from reorder.cli.main import build_parser, main
from reorder.cli.registry import COMMANDS

ROOT = Path(__file__).resolve().parent.parent
TWO = ROOT / "tests" / "data" / "names" / "rms_norm_two.cubin"


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_version(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"reorder {__version__}"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_shows_every_default_and_the_exit_codes(name, capsys):
    with pytest.raises(SystemExit):
        main([name, "--help"])
    shown = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    parser = _subparsers()[name]
    for action in parser._actions:
        default = action.default
        if not action.option_strings or action.help == argparse.SUPPRESS or default in (None, [], argparse.SUPPRESS):
            continue
        if isinstance(default, bool):
            continue
        said = {str(default), f"{default:g}"} if isinstance(default, float) else {str(default)}
        assert any(s in shown for s in said), f"{name} {action.option_strings[0]}: default {default!r} not shown"
    for code, _ in exitcodes.TABLE:
        assert f" {code} " in shown


def test_optimize_help_names_its_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["optimize", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    for said in ("default: 100", "default: 30m", "(default: 2)", "default: warm", "default: auto"):
        assert said in shown


def test_the_exit_code_table_is_one_table():
    docs = (ROOT / "docs" / "cli.md").read_text()
    assert exitcodes.table_markdown() in docs
    assert [code for code, _ in exitcodes.TABLE] == [0, 1, 2, 3, 4, 130, 143]


def test_an_output_folder_that_does_not_exist_is_refused(tmp_path, capsys):
    source = tmp_path / "two.cubin"
    shutil.copy(TWO, source)
    out = tmp_path / "missing" / "deeper" / "fast.cubin"
    for extra in ([], ["--device", "cpu"]):
        command = "optimize" if extra else "stalls"
        assert main([command, str(source), "--kernel", "f32<32", "-o", str(out), *extra]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1].endswith("does not exist; create it or add --mkdir"), err
        assert not (tmp_path / "missing").exists()


def test_mkdir_makes_the_folder(tmp_path, capsys):
    source = tmp_path / "two.cubin"
    shutil.copy(TWO, source)
    out = tmp_path / "made" / "here" / "cut.cubin"
    assert main(["stalls", str(source), "--kernel", "f32<32", "-o", str(out), "--mkdir"]) == 0
    assert out.is_file()
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith(f"wrote {out}: ")


def test_an_output_under_a_file_is_refused(tmp_path, capsys):
    plain = tmp_path / "plain.txt"
    plain.write_text("not a folder\n")
    assert main(["stalls", str(TWO), "--kernel", "f32<32", "-o", str(plain / "x" / "o.cubin"), "--mkdir"]) == 2
    assert f"{plain} is not a folder" in capsys.readouterr().err
    assert plain.read_text() == "not a folder\n"


def test_listing_commands_say_what_they_listed_on_stderr(capsys):
    assert main(["disasm", str(TWO), "--json"]) == 0
    out, err = capsys.readouterr()
    import json

    assert len(json.loads(out)) == 2  # stdout stays the listing alone
    assert err.strip().splitlines()[-1].startswith("reorder disasm: 2 kernels, ") and err.rstrip().endswith("listed")
    assert main(["diff", str(TWO), str(TWO)]) == 0
    assert capsys.readouterr().err.strip().splitlines()[-1] == "reorder diff: 2 kernels compared, 0 changed"


def test_verify_ends_with_its_verdict(capsys):
    assert main(["verify", str(TWO)]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == "verdict: 2 kernels legal (as compiler output)"


def test_a_pass_that_writes_says_what_it_wrote(tmp_path, capsys):
    out = tmp_path / "cut.cubin"
    assert main(["stalls", str(TWO), "--kernel", "f32<32", "-o", str(out)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith(f"wrote {out}: _Z12rms_norm_f32ILi32EEvPKfPfif: ") and "verified legal" in last
