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
        _compile_ptx_inputs(args)
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


_INPUTS = ("cubin", "a", "b")  # the argument names that take a kernel binary


def _compile_ptx_inputs(args: argparse.Namespace) -> None:
    """Replace each PTX input by the cubin ptxas makes of it (reorder.ptxinput), saying so on
    stderr; an output path that names a PTX input is refused like one that names a cubin."""
    from pathlib import Path

    from reorder.errors import InputError
    from reorder.ptxinput import compile_ptx

    for name in _INPUTS:
        value = getattr(args, name, None)
        if not isinstance(value, str) or not Path(value).is_file():
            continue  # missing files are reported by the command, in its own words
        compiled = compile_ptx(Path(value))
        if compiled is None:
            continue
        output = getattr(args, "output", None)
        if output and Path(output).exists() and Path(output).samefile(value):
            raise InputError(f"{output}: refusing to overwrite the input file; choose another -o")
        how = "found in the cache" if compiled.cached else "compiled"
        print(f"reorder: {value}: {compiled.producer} PTX for {compiled.target}, {how}: "
              f"{compiled.recipe.describe()} -> {compiled.cubin}", file=sys.stderr)
        setattr(args, name, str(compiled.cubin))
        args.compiled_from = {**getattr(args, "compiled_from", {}),
                              name: f"compiled from {value} by {compiled.recipe.describe()}"}
