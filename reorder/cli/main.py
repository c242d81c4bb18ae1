"""The `reorder` command line. Every subcommand turns ReorderError into one line on stderr
and its exit code (reorder.base.exitcodes: 1 a verdict, 2 unusable input, 3 a GPU failure,
4 no GPU); never a traceback."""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys
import time
from collections.abc import Iterator, Sequence

from reorder.base.deadline import process_start
from reorder.base.errors import ReorderError, one_line
from reorder.base.stderr import say
from reorder.cli import commands  # noqa: F401  (importing it registers the subcommands)
from reorder.cli.registry import COMMANDS, resolve


@functools.cache
def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser, built once per process (the fuzzer and the tests call `main` often). With
    `only`, the other commands are listed (names and help) without their arguments, so their
    modules are not imported: a run pays for its own command's imports alone."""
    from reorder import __version__
    from reorder.cli.helptext import EPILOG, Formatter, show_defaults
    from reorder.cli.outputs import add_mkdir

    parser = argparse.ArgumentParser(
        prog="reorder", description="Search-based optimizer for NVIDIA SASS.", epilog=EPILOG, formatter_class=Formatter
    )
    parser.add_argument("--version", action="version", version=f"reorder {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (_, help_text) in COMMANDS.items():
        # argparse %-formats help strings (not descriptions): "95% CI" must be escaped
        p = sub.add_parser(
            name, help=help_text.replace("%", "%%"), description=help_text, epilog=EPILOG, formatter_class=Formatter
        )
        if only is not None and name != only:
            continue
        handler, adder = resolve(name)
        adder(p)
        add_mkdir(p)
        show_defaults(p)
        p.set_defaults(handler=handler)
    return parser


def _command_named(argv: Sequence[str]) -> str | None:
    """The subcommand `argv` names (its first word that is not an option), None for none."""
    return next((word for word in argv if not word.startswith("-")), None)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. From the command line (`argv` None) its `--time` counts from the
    process's start, interpreter and imports included; called in-process with `argv` (a test,
    the fuzzer, a notebook), from this call: a long-lived process must not have spent a
    command's time before the command began."""
    started = process_start() if argv is None else time.monotonic()
    words = sys.argv[1:] if argv is None else list(argv)
    named = _command_named(words)
    parser = build_parser(named if named in COMMANDS else "")  # "": no command's arguments (--help, a typo)
    args = parser.parse_args(words)
    args.started = started
    _batch_loads_cubin(args, parser)
    with _pipe_safe_stdout():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from reorder.base.lifetime import Terminated, run_folder, signal_wins, terminate_on_sigterm
    from reorder.cli.outputs import check_output_folders

    try:
        with terminate_on_sigterm(), run_folder():
            check_output_folders(args)
            _compile_inputs_saying_where(args)
            with signal_wins():  # an error the signal caused (a killed tool, a cut commit) ends as the signal
                return args.handler(args)
    except ReorderError as exc:
        say(f"reorder {args.command}: error: {one_line(str(exc))}")
        return exc.exit_code
    except Terminated as exc:  # a command may say where it was and what it left (reorder.optimize)
        say(f"reorder {args.command}: terminated" + (f" {exc}" if str(exc) else ""))
        return 143
    except KeyboardInterrupt as exc:
        say(f"reorder {args.command}: interrupted" + (f" {exc}" if str(exc) else ""))
        return 130
    except OSError as exc:  # an output folder that cannot be made, a full disk: one line, not a traceback
        where = f"{exc.filename}: " if exc.filename else ""
        say(f"reorder {args.command}: error: {one_line(where + str(exc.strerror or exc))}")
        return 2


class _PipeSafe:
    """stdout that, once its reader has gone (`reorder verify k.cubin | head -1`), sends the
    rest to /dev/null instead of raising: the command runs to its verdict and exits with it."""

    def __init__(self, stream) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except BrokenPipeError:
            self._to_devnull()
            return len(text)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except BrokenPipeError:
            self._to_devnull()

    def _to_devnull(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, self.stream.fileno())
        os.close(devnull)

    def __getattr__(self, name: str):
        return getattr(self.stream, name)


@contextlib.contextmanager
def _pipe_safe_stdout() -> Iterator[None]:
    real = sys.stdout
    sys.stdout = _PipeSafe(real)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stdout = real


def _batch_loads_cubin(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """`batch-loads --assume-noalias k.cubin -o x` (and `prefetch`): argparse hands the cubin to the option's
    optional PARAMS value. A value that is not a parameter list is the cubin."""
    if args.command not in ("batch-loads", "prefetch") or args.cubin is not None:
        return
    value = args.assume_noalias
    if value is None or value == "all" or all(v.strip().isdigit() for v in value.split(",")):
        parser.error(f"{args.command}: the following arguments are required: cubin")
    args.cubin, args.assume_noalias = value, "all"


_INPUTS = ("cubin", "a", "b", "against")  # the argument names that take a kernel binary


def _compile_inputs_saying_where(args: argparse.Namespace) -> None:
    """_compile_ptx_inputs, with a signal's last line saying where it came: ptxas is a child
    the signal's handler kills (reorder.base.lifetime), and nothing was written yet."""
    from reorder.base.lifetime import Terminated

    where = "while ptxas compiled the PTX input; nothing written"
    try:
        _compile_ptx_inputs(args)
    except Terminated:
        raise Terminated(where) from None
    except KeyboardInterrupt:
        raise KeyboardInterrupt(where) from None


def _compile_ptx_inputs(args: argparse.Namespace) -> None:
    """Replace each PTX input by the cubin ptxas makes of it (reorder.ptx.toolchain.compile), saying so on
    stderr; an output path that names a PTX input is refused like one that names a cubin."""
    from pathlib import Path

    from reorder.base.errors import InputError
    from reorder.ptx.toolchain.compile import compile_ptx

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
        print(
            one_line(
                f"reorder: {value}: {compiled.producer} PTX for {compiled.target}, {how}: "
                f"{compiled.recipe.describe()} -> {compiled.cubin}"
            ),
            file=sys.stderr,
        )
        setattr(args, name, str(compiled.cubin))
        args.compiled_from = {
            **getattr(args, "compiled_from", {}),
            name: f"compiled from {value} by {compiled.recipe.describe()}",
        }
        args.ptx_inputs = {**getattr(args, "ptx_inputs", {}), name: value}
