"""Where a command's output files go: into a folder that exists, or one `--mkdir` makes.

A typo in `-o out/fast.cubin` (`ot/fast.cubin`) used to make the folder silently, and the
result landed where nobody looked. Every command with an output file option therefore gets
`--mkdir`, and without it a missing folder is refused before any work, in one line.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from reorder.base.errors import InputError

OUTPUT_FLAGS = ("-o", "--output", "--cubin")  # options whose value is a file a command writes
MKDIR_HELP = "create the output file's missing parent folders (without it a missing folder is refused)"


def output_dests(parser: argparse.ArgumentParser) -> tuple[str, ...]:
    """The argument names of `parser`'s output file options (positionals are inputs)."""
    return tuple(
        a.dest for a in parser._actions if a.option_strings and any(f in a.option_strings for f in OUTPUT_FLAGS)
    )


def add_mkdir(parser: argparse.ArgumentParser) -> None:
    """Give a subcommand that writes files `--mkdir`, and remember which options are outputs."""
    dests = output_dests(parser)
    if dests:
        parser.add_argument("--mkdir", action="store_true", help=MKDIR_HELP)
    parser.set_defaults(output_dests=dests)


def check_output_folders(args: argparse.Namespace) -> None:
    """Refuse an output whose folder is missing (unless --mkdir, which makes it) or lies
    under something that is not a folder."""
    for dest in getattr(args, "output_dests", ()):
        value = getattr(args, dest, None)
        if isinstance(value, str) and value:
            _check_folder(Path(value), bool(getattr(args, "mkdir", False)))


def _check_folder(target: Path, mkdir: bool) -> None:
    parent = target.parent
    existing = next((p for p in (parent, *parent.parents) if p.exists() or p.is_symlink()), None)
    if existing is not None and not existing.is_dir():
        raise InputError(f"{target}: cannot write there: {existing} is not a folder")
    if existing == parent:
        return
    if not mkdir:
        raise InputError(f"{target}: the folder {parent} does not exist; create it or add --mkdir")
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{target}: cannot make the folder {parent}: {exc.strerror or exc}") from None
