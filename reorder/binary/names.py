"""Kernel names as people write them: a C++ signature or a unique part of one.

A template kernel's symbol is Itanium-mangled (`_ZN5faiss3gpu10warpSelectIflLb0ELi32ELi2ELi128EEEv...`);
a kernel engineer knows it as `warpSelect<float, long, false, 32, 2, 128>`. A name is
resolved against the cubin's symbols in this order: the exact symbol; the exact demangled
signature; then a unique substring of the demangled signatures (or of the symbols), spaces
ignored. Several matches or none is one error line listing the candidates.

Demangling uses cu++filt (NVIDIA's, from the `nvidia-cuda-cuxxfilt` wheel or PATH), else
binutils' c++filt, both of which read one name per line; without either, only symbols and
their substrings match, and the error says how to get one.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from reorder.base.errors import InputError

DEMANGLE_TIMEOUT_S = 30.0
MAX_LISTED = 12


def find_demangler() -> str | None:
    """cu++filt from the nvidia wheels or PATH, else c++filt; None when neither is there."""
    try:
        import nvidia

        for base in nvidia.__path__:
            for candidate in sorted(Path(base).glob("*/bin/cu++filt")):
                if os.access(candidate, os.X_OK):
                    return str(candidate)
    except ImportError:
        pass
    return shutil.which("cu++filt") or shutil.which("c++filt")


@lru_cache(maxsize=64)
def demangle(symbols: tuple[str, ...]) -> tuple[str, ...]:
    """Each symbol demangled (unchanged when it is not mangled or no demangler is there)."""
    mangled = [s for s in symbols if s.startswith("_Z")]
    tool = find_demangler()
    if not mangled or tool is None:
        return symbols
    try:
        done = subprocess.run(
            [tool],
            input="\n".join(mangled) + "\n",
            capture_output=True,
            text=True,
            timeout=DEMANGLE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return symbols
    lines = done.stdout.splitlines()
    if done.returncode != 0 or len(lines) != len(mangled):
        return symbols
    plain = dict(zip(mangled, lines))
    return tuple(plain.get(s, s) for s in symbols)


# cu++filt writes template literals as casts, `(bool)0, (int)32`; binutils' c++filt writes
# `false, 32`. A name is matched in one form whichever demangler the machine has (a bool
# literal is read first, as false/true; every other integer cast as its number).
_CAST_LITERAL = re.compile(r"\((?:unsigned |signed )?(?:char|short|int|long|long long)\)(-?\d+)[uUlL]*")


# c++filt spells an anonymous namespace `(anonymous namespace)`, some cu++filt builds `<unnamed>`.
_ANONYMOUS_SPELLINGS = re.compile(r"\(anonymous namespace\)|<unnamed>")


def _squash(text: str) -> str:
    text = _ANONYMOUS_SPELLINGS.sub("(anonymous namespace)", text)
    text = re.sub(r"\(bool\)([01])\b", lambda m: "true" if m.group(1) == "1" else "false", text)
    return "".join(_CAST_LITERAL.sub(r"\1", text).split())


def resolve(query: str, symbols: Sequence[str], where: str = "cubin") -> str:
    """The one symbol `query` names (module docstring), or InputError listing candidates."""
    if query in symbols:
        return query
    readable = demangle(tuple(symbols))
    want = _squash(query)
    exact = [s for s, d in zip(symbols, readable) if _squash(d) == want]
    if len(exact) == 1:
        return exact[0]
    found = exact or [s for s, d in zip(symbols, readable) if want and (want in _squash(d) or want in s)]
    if len(found) == 1:
        return found[0]
    shown = dict(zip(symbols, readable))
    if found:
        listed = "; ".join(f"{shown[s]} [{s}]" if shown[s] != s else s for s in found[:MAX_LISTED])
        more = f" and {len(found) - MAX_LISTED} more" if len(found) > MAX_LISTED else ""
        raise InputError(f"{where}: kernel name {query!r} is ambiguous, {len(found)} kernels match: {listed}{more}")
    hint = (
        ""
        if find_demangler() or not any(s.startswith("_Z") for s in symbols)
        else " (no demangler found: install binutils' c++filt or `pip install nvidia-cuda-cuxxfilt` to name C++ "
        "kernels by signature)"
    )
    have = ", ".join(shown[s] for s in symbols[:MAX_LISTED]) + (" ..." if len(symbols) > MAX_LISTED else "")
    raise InputError(f"{where}: no kernel named {query!r} (have: {have}){hint}")
