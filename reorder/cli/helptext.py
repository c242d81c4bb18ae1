"""How `reorder --help` reads: every option's default shown, the exit-code table at the foot.

Defaults are appended to the help strings once the parser is built, so a command's argument
wiring states each default once (in `default=`) and the help can never disagree with it.
"""

from __future__ import annotations

import argparse

from reorder.base.exitcodes import table_text

EPILOG = table_text()


class Formatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and the epilog as written (the exit-code table keeps its lines)."""


def _shows_default(action: argparse.Action) -> bool:
    """Whether an option has a default worth saying: set, not a plain flag's False, not
    already said in its help."""
    if not action.option_strings or action.help == argparse.SUPPRESS:
        return False
    default = action.default
    if default is None or default is False or default == [] or default == argparse.SUPPRESS:
        return False
    return "default" not in (action.help or "").lower()


def show_defaults(parser: argparse.ArgumentParser) -> None:
    """Append '(default: X)' to the help of every option whose help does not say it yet."""
    for action in parser._actions:
        if _shows_default(action):
            action.help = f"{action.help} (default: %(default)s)" if action.help else "default: %(default)s"
