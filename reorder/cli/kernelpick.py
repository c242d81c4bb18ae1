"""The kernel a command works on, chosen once from --kernel and the launch spec
(reorder.binary.kernelchoice), with the full name said on stderr when --kernel gave a part of it."""

from __future__ import annotations

import argparse
import sys

from reorder.binary.cubin import read_cubin
from reorder.binary.kernelchoice import choose_kernel


def pick_kernel(args: argparse.Namespace, given: str | None, which: str = "cubin") -> str:
    """The symbol of the kernel `--kernel` (`given`) and the command's --launch spec agree on
    in its input `which` (one InputError when they do not, when it is absent, or when neither
    names one of several). Errors name the input as the user gave it (a PTX input's own path,
    not the cubin compiled from it)."""
    path = getattr(args, which)
    shown = getattr(args, "ptx_inputs", {}).get(which, "")
    spec = getattr(args, "launch", None)
    spec_name = None
    if spec:
        from timing.spec import load_spec

        spec_name = load_spec(spec).name
    choice = choose_kernel(read_cubin(path), given, spec_name, str(spec or ""), where=shown)
    if choice.note:
        print(f"reorder {args.command}: {choice.note}", file=sys.stderr)
    return choice.name
