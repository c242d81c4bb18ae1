"""Which kernel of a `--ptx` file is the cubin's kernel, and the PTX to build it from.

The cubin names the kernel; the PTX usually has the same name. A kernel in an anonymous
namespace compiled twice (the library's build, and a separate `nvcc -ptx` of the source) has
two names that differ only in nvcc's per-compile namespace suffix (reorder.binary.anonymous).
Such a PTX kernel is taken as the cubin's when it is the only one that matches, and the PTX
the search builds from is a copy with that kernel renamed to the cubin's symbol (its entry
and its parameters; nothing else in the module is touched), so every candidate ptxas makes
loads, is timed and is verified under the name the cubin and the launch spec use. The copy
lives in the content-addressed cache (reorder.base.diskcache): every worker of a search and
a later `reorder verify` make the same file from the same input.
"""

from __future__ import annotations

import re
from pathlib import Path

from reorder.base.diskcache import cache_root, key_of
from reorder.base.errors import InputError
from reorder.base.files import write_atomic
from reorder.binary.anonymous import same_kernel
from reorder.binary.kernelchoice import readable
from reorder.ptx.model.model import Module

MAX_LISTED = 12


def kernel_in_ptx(module: Module, symbol: str, where: str) -> str:
    """The name in `module` of the cubin's kernel `symbol`: the same name, or the one kernel
    that differs from it only by the anonymous-namespace suffix. InputError when none or
    several do."""
    names = [f.name for f in module.kernels]
    found = same_kernel(symbol, names)
    if len(found) == 1:
        return found[0]
    if found:
        listed = "; ".join(found[:MAX_LISTED])
        raise InputError(
            f"{where}: {len(found)} kernels match the cubin's {readable(symbol)} once the anonymous-namespace "
            f"suffix is ignored ({listed}); give a PTX of the one translation unit the cubin was built from"
        )
    have = ", ".join(names[:MAX_LISTED]) + (" ..." if len(names) > MAX_LISTED else "")
    raise InputError(f"{where}: no kernel {readable(symbol)} in this PTX (kernels: {have or 'none'})")


def renamed_entry(text: str, old: str, new: str) -> str:
    """PTX text with the entry `old` and its parameters (`old_param_N`) named `new`."""
    pattern = re.compile(rf"(?<![\w$.]){re.escape(old)}(?=_param_\d|[^\w$]|$)")
    return pattern.sub(new, text)


def ptx_for_kernel(path: Path, module: Module, symbol: str) -> tuple[Path, str]:
    """(the PTX file to build the cubin's kernel `symbol` from, its name in `path`): `path`
    itself when the names agree, else the renamed copy (module docstring)."""
    name = kernel_in_ptx(module, symbol, f"--ptx {path}")
    if name == symbol:
        return path, name
    text = renamed_entry(module.text, name, symbol)
    copy = cache_root() / "ptx-named" / key_of(text)[:24] / path.name
    if not copy.is_file() or copy.read_text() != text:
        write_atomic(copy, text.encode())
    return copy, name
