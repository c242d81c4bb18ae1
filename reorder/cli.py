"""The `reorder` command line. Every subcommand turns ReorderError into one line on stderr
and its exit code (2 for unusable input, 1 for a rejected schedule); never a traceback."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from reorder.errors import ReorderError

Handler = Callable[[argparse.Namespace], int]
_COMMANDS: dict[str, tuple[Handler, Callable[[argparse.ArgumentParser], None], str]] = {}


def command(name: str, help_text: str):
    """Register a subcommand: the decorated function adds its arguments; it returns the handler."""

    def wrap(setup):
        handler, adder = setup()
        _COMMANDS[name] = (handler, adder, help_text)
        return setup

    return wrap


def build_parser() -> argparse.ArgumentParser:
    from reorder import commands  # noqa: F401  (registers the subcommands)

    parser = argparse.ArgumentParser(prog="reorder", description="Search-based optimizer for NVIDIA SASS.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (handler, adder, help_text) in _COMMANDS.items():
        # argparse %-formats help strings (not descriptions): "95% CI" must be escaped
        p = sub.add_parser(name, help=help_text.replace("%", "%%"), description=help_text)
        adder(p)
        p.set_defaults(handler=handler)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except ReorderError as exc:
        print(f"reorder {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"reorder {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:  # an output folder that cannot be made, a full disk: one line, not a traceback
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"reorder {args.command}: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2

