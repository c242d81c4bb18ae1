"""What the subcommands share: the registry they add themselves to (`command`), read by
`reorder.cli.main` to build the parser, and the option values more than one of them reads.
Its own module so the commands and the parser build on it without importing each other."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from reorder.base.errors import InputError

Handler = Callable[[argparse.Namespace], int]
COMMANDS: dict[str, tuple[Handler, Callable[[argparse.ArgumentParser], None], str]] = {}


def command(name: str, help_text: str):
    """Register a subcommand: the decorated function returns its handler and the function
    that adds its arguments."""

    def wrap(setup):
        handler, adder = setup()
        COMMANDS[name] = (handler, adder, help_text)
        return setup

    return wrap


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
