"""What the subcommands share: the registry they add themselves to (`command`), read by
`reorder.cli.main` to build the parser, and the option values more than one of them reads.
Its own module so the commands and the parser build on it without importing each other."""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable

from reorder.base.errors import InputError

Handler = Callable[[argparse.Namespace], int]
Adder = Callable[[argparse.ArgumentParser], None]
Setup = Callable[[], tuple[Handler, Adder]]
COMMANDS: dict[str, tuple[Setup, str]] = {}  # name -> (its setup, its one-line help)


def command(name: str, help_text: str):
    """Register a subcommand: the decorated function returns its handler and the function
    that adds its arguments. It is called only for the command that runs (`resolve`), so a
    command's imports (networkx, the verifier, the PTX model) are paid by that command alone:
    `reorder --help` and `reorder disasm` do not import the search."""

    def wrap(setup: Setup) -> Setup:
        COMMANDS[name] = (setup, help_text)
        return setup

    return wrap


@functools.cache
def resolve(name: str) -> tuple[Handler, Adder]:
    """The handler and argument adder of a registered command (its setup, run once)."""
    return COMMANDS[name][0]()


def seconds(text: str) -> float:
    """A duration as `--time` takes it: 90s, 10m, 1h, or plain seconds."""
    units = {"s": 1, "m": 60, "h": 3600}
    try:
        value = float(text[:-1]) * units[text[-1]] if text[-1] in units else float(text)
    except (ValueError, IndexError):
        raise InputError(f"--time: cannot read {text!r} (use e.g. 90s, 10m, 1h)") from None
    if value <= 0:
        raise InputError("--time must be positive")
    return value
