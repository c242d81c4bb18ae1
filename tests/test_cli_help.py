"""Every help text renders: `reorder --help` is the first thing a new user types."""

from __future__ import annotations

import pytest

import reorder.cli.commands  # noqa: F401  (registers the subcommands)
from reorder.cli.main import main
from reorder.cli.registry import COMMANDS


def test_top_level_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    shown = capsys.readouterr().out
    assert COMMANDS and all(name in shown for name in COMMANDS)
    assert "95% CI" in shown  # a literal percent sign survives argparse's formatting


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_command_help(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main([name, "--help"])
    assert done.value.code == 0
    assert f"usage: reorder {name}" in capsys.readouterr().out


def test_commands_are_listed_in_their_order() -> None:
    """`reorder --help` lists the commands of one kernel first, then the GPU ones, the search,
    the suite, the probes and the PTX commands: the order reorder.cli.commands imports them."""
    assert list(COMMANDS) == [
        "disasm", "verify", "diff", "latency-probe", "stalls", "batch-loads", "prefetch", "check", "time",
        "optimize", "bench", "probe", "timeline", "host-timeline", "ptx-hoist", "ptx-loops",
    ]  # fmt: skip


def test_a_command_imports_only_what_it_runs() -> None:
    """`reorder --help` and `reorder disasm` do not import the verifier, networkx, optuna or
    the PTX model: each command's setup runs only when that command runs (reorder.cli.registry)."""
    import subprocess
    import sys

    script = (
        "import sys, contextlib, io\n"
        "from reorder.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try: main(sys.argv[1:])\n"
        "    except SystemExit: pass\n"
        "heavy = ('networkx', 'optuna', 'legality.verify', 'reorder.ptx.model', 'reorder.search.study')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    for argv in (["--help"], ["disasm", "--help"]):
        done = subprocess.run([sys.executable, "-c", script, *argv], capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip().splitlines()[-1] == "[]", (argv, done.stdout)
