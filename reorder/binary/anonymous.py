"""Kernel names with nvcc's per-compile anonymous-namespace identity left out.

A kernel in an anonymous namespace (PyTorch's ATen kernels are) gets a namespace name that
nvcc makes up for each compile: `_GLOBAL__N__<hash>_<len>_<file>_cu_<hash>[_<number>]`, where
the number (and with other sources or paths the hashes) changes with the defines and the
includes of that compile. A library's cubin and a PTX made of the same source by a separate
`nvcc -ptx` therefore name one kernel differently (`..._cu_7262a507_14522...` against
`..._14537...`). `match_key` is what both names have in common: the demangled signature, in
which the namespace reads `(anonymous namespace)` whatever its identity; without a demangler,
the mangled name with each anonymous namespace's identifier (and the length digits around it,
which change with it) replaced by one placeholder. Two different kernels never share a key,
except two of the same signature from different translation units (a linked cubin), which
the caller must treat as ambiguous.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from reorder.binary.names import demangle

# the identifier and the digits around it: its length before, a following name's length after
# (both names go through the same substitution, so what it eats on one it eats on the other)
_MANGLED_ANONYMOUS = re.compile(r"\d*_GLOBAL__N__[0-9A-Za-z_]*?_[0-9a-f]{8}(?:_\d+)?\d*")
_PLACEHOLDER = "(anonymous namespace)"


def in_anonymous_namespace(symbol: str) -> bool:
    return "_GLOBAL__N_" in symbol


def match_keys(symbols: Sequence[str]) -> tuple[str, ...]:
    """Each name with the anonymous namespace's per-compile identity left out (module
    docstring); one demangler run for all of them."""
    plain = demangle(tuple(symbols))
    return tuple(d if d != s else _MANGLED_ANONYMOUS.sub(_PLACEHOLDER, s) for s, d in zip(symbols, plain))


def same_kernel(wanted: str, candidates: Sequence[str]) -> list[str]:
    """The candidates that name `wanted`: the exact symbol when it is there, else every one
    in an anonymous namespace whose match key is `wanted`'s (one for a match, several for an
    ambiguity, none)."""
    if wanted in candidates:
        return [wanted]
    if not in_anonymous_namespace(wanted):
        return []
    anonymous = [c for c in candidates if in_anonymous_namespace(c)]
    key, *keys = match_keys([wanted, *anonymous])
    return [c for c, k in zip(anonymous, keys) if k == key]
