"""Option values and outputs more than one subcommand shares: a kernel name, the launch
options of the GPU commands, --assume-noalias, and a move outcome written out."""

from __future__ import annotations

import argparse

from reorder.cli.lastline import outcome_line


def kernel_name(text: str) -> str:
    """--kernel's value: an empty name would read as no --kernel at all (every kernel), which
    is what `--kernel "$K"` with K unset should not silently do."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty name names no kernel (leave --kernel out for every kernel)")
    return text


def write_outcome(args, outcome) -> int:
    from reorder.base.files import write_atomic

    for line in outcome.summary():
        print(line)
    write_atomic(args.output, outcome.data, protect=[args.cubin])
    print(outcome_line(args.output, outcome))
    return 0


def launch_args(p: argparse.ArgumentParser) -> None:
    """Arguments shared by `check` and `time`: the pair, the launch spec, the kernel."""
    p.add_argument("a", metavar="A.cubin", help="reference cubin")
    p.add_argument("b", metavar="B.cubin", help="candidate cubin (may be A itself: an A/A run)")
    p.add_argument(
        "--launch",
        required=True,
        metavar="SPEC.toml",
        help="launch spec (grid, block, parameters): TOML, or the same document as JSON",
    )
    p.add_argument("--kernel", type=kernel_name, help="kernel name (default: the spec's)")


def noalias_arg(p: argparse.ArgumentParser) -> None:
    """--assume-noalias: alone for every pointer parameter, or with a comma list of indices."""
    p.add_argument(
        "--assume-noalias",
        nargs="?",
        const="all",
        default=None,
        metavar="PARAMS",
        help="assume pointer parameters do not alias (all, or a comma list of indices)",
    )


def ptx_move_args(p: argparse.ArgumentParser) -> None:
    """Arguments shared by the PTX move commands (`ptx-hoist`, `ptx-loops`): the PTX in, the
    PTX and cubin out, the kernel and --assume-noalias."""
    p.add_argument("ptx", metavar="IN.ptx", help="PTX from nvcc -ptx or Triton")
    p.add_argument("-o", "--output", metavar="OUT.ptx", help="where the moved PTX goes (never over the input)")
    p.add_argument("--cubin", metavar="OUT.cubin", help="where its cubin goes (default: OUT with .cubin)")
    p.add_argument("--kernel", help="kernel name (default: the only one, else required)")
    noalias_arg(p)


def cubin_move_args(p: argparse.ArgumentParser) -> None:
    """Arguments shared by the SASS move commands that write a cubin (`batch-loads`,
    `prefetch`): the cubin in, the cubin out, the kernel and --assume-noalias."""
    p.add_argument("cubin", nargs="?")  # may come as --assume-noalias' value (reorder.cli.main)
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--kernel", type=kernel_name)
    noalias_arg(p)


def noalias_choice(value: str | None, count: int) -> bool | tuple[int, ...]:
    """--assume-noalias: absent -> False, alone -> True (all), or a comma list of parameter indices."""
    from reorder.base.errors import InputError

    if value is None:
        return False
    if value == "all":
        return True
    try:
        indices = tuple(sorted({int(v) for v in value.split(",")}))
    except ValueError:
        raise InputError(f"--assume-noalias: expected a comma list of parameter indices, got {value!r}") from None
    if not indices or indices[0] < 0 or indices[-1] >= count:
        raise InputError(f"--assume-noalias: parameter indices must be in 0..{count - 1}, got {value!r}")
    return indices
