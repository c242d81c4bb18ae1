"""`--time` counts from the command line for the `reorder` command, and from the call for
`main(argv)` in a long-lived process (tests, the fuzzer, a notebook): otherwise a command run
late in a process finds its time spent before it began and writes a copy of its input."""

from __future__ import annotations

import time

from reorder.cli import main as cli


def _started_of(monkeypatch, argv):
    seen = {}
    monkeypatch.setattr(cli, "_run", lambda args: seen.setdefault("started", args.started) and 0)
    monkeypatch.setattr(cli, "process_start", lambda: time.monotonic() - 3600.0)  # an hour-old process
    cli.main(argv)
    return seen["started"]


def test_main_called_with_arguments_counts_from_the_call(monkeypatch) -> None:
    before = time.monotonic()
    assert _started_of(monkeypatch, ["disasm", "x.cubin"]) >= before


def test_the_command_line_counts_from_the_process_start(monkeypatch) -> None:
    monkeypatch.setattr("sys.argv", ["reorder", "disasm", "x.cubin"])
    assert _started_of(monkeypatch, None) <= time.monotonic() - 3000.0
