"""The marker a Triton config carries to ask for reorder's binary, and how it is read.

A config asks by carrying one extra token in its ptxas options (`ptx_options`, a kernel and
Config keyword since Triton 3.4), e.g. ``triton.Config({"BLOCK": 1024, "ptx_options":
"--reorder"}, num_warps=8)``. The token never reaches NVIDIA's ptxas: the stages hook
(`reorder.triton.hook`) and the ptxas stand-in (`reorder.triton.ptxas`) both strip it. A
token ptxas sees means neither is installed, and ptxas refuses it, loudly, rather than
compiling a config that silently lacks what it asked for. Because `ptx_options` is part of
Triton's cache key, configs with and without the token (or with different tokens) are
cached apart.

Grammar: ``--reorder`` or ``--reorder=ITEM[,ITEM...]`` with items

- ``moves``       (the default) SliceBatch/LoadBatch then stall cuts on the static model,
                  each step verified (reorder.build.pipeline);
- ``search:N``    `reorder optimize` on the static model with N trials;
- ``tuned:KEY``   the binary `reorder.triton.tune` measured and byte-checked on a GPU for
                  this very cubin, stored under KEY (the original is kept when it is absent);
- ``twin:K``      the K-th build of the config's twin list (reorder.triton.twins: stored GPU
                  results for this cubin, then the PTX move menus in a measured order, each
                  compiled by the config's ptxas); `reorder.triton.with_reorder` marks K = 1, 2, ...;
- ``noalias``     pointer parameters do not alias (lets loads move above stores);
- ``rev:HEX``     the reorder that made the marker (a digest of its sources). It changes
                  nothing in what is built; it is there for Triton's cache: ptx_options is
                  part of Triton's cache key, and Triton 3.6 does not ask the stages hook
                  for a key of its own (3.7+ does), so without it a cubin rewritten by an
                  older reorder would be served from Triton's cache after an update.
                  `reorder.triton.with_reorder` stamps it on `moves` and `search` markers
                  (a `tuned:KEY` marker already names its binary by content).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from reorder.base.errors import InputError
from reorder.triton import digest

PREFIX = "--reorder"
MODES = ("moves", "search", "tuned", "twin")
MAX_BUDGET = 10_000
MAX_TWINS = 16
_KEY = re.compile(r"^[0-9a-f]{8,64}$")
REV_LENGTH = 12


@dataclass(frozen=True, slots=True)
class Request:
    """What a marked config asks for."""

    mode: str = "moves"
    budget: int = 0  # trials, for mode 'search'
    key: str = ""  # the stored winner, for mode 'tuned'
    noalias: bool = False
    rev: str = ""  # the reorder that made the marker (for Triton's cache key only)
    rank: int = 0  # which twin, for mode 'twin' (1 = the first)

    def __post_init__(self) -> None:
        """A request made in Python is checked as a marker is: one line naming what is wrong."""
        if self.mode not in MODES:
            raise InputError(f"rt.Request: mode {self.mode!r}: expected one of {', '.join(MODES)}")
        if not isinstance(self.noalias, bool):
            raise InputError(f"rt.Request: noalias={self.noalias!r}: expected True or False")
        for name, value, top in (("budget", self.budget, MAX_BUDGET), ("rank", self.rank, MAX_TWINS)):
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= top:
                raise InputError(f"rt.Request: {name}={value!r}: expected an int from 0 to {top}")

    def token(self) -> str:
        """The marker that asks for this (parse_token(r.token()) == r)."""
        value = {"search": self.budget, "tuned": self.key, "twin": self.rank}.get(self.mode)
        items = ["moves"] if self.mode == "moves" else [f"{self.mode}:{value}"]
        items += ["noalias"] if self.noalias else []
        items += [f"rev:{self.rev}"] if self.rev else []
        return PREFIX if items == ["moves"] else f"{PREFIX}={','.join(items)}"

    def stamped(self) -> Request:
        """This request naming the current reorder (`rev`), unless its binary is named by content."""
        if self.mode == "tuned":
            return self
        return Request(self.mode, self.budget, self.key, self.noalias, digest.code_digest()[:REV_LENGTH], self.rank)


def is_marker(token: str) -> bool:
    return token == PREFIX or token.startswith(PREFIX + "=")


def parse_token(token: str) -> Request:
    """The request a marker token names; InputError (one line) for a malformed one."""
    if not is_marker(token):
        raise InputError(f"{token!r} is not a reorder marker (expected {PREFIX} or {PREFIX}=ITEMS)")
    _, _, body = token.partition("=")
    mode, budget, key, noalias, rev, rank = "moves", 0, "", False, "", 0
    for item in filter(None, body.split(",")):
        name, _, value = item.partition(":")
        if name == "noalias" and not value:
            noalias = True
        elif name == "moves" and not value:
            mode = "moves"
        elif name == "search" and value.isdigit() and 1 <= int(value) <= MAX_BUDGET:
            mode, budget = "search", int(value)
        elif name == "tuned" and _KEY.match(value):
            mode, key = "tuned", value
        elif name == "twin" and value.isdigit() and 1 <= int(value) <= MAX_TWINS:
            mode, rank = "twin", int(value)
        elif name == "rev" and _KEY.match(value):
            rev = value
        else:
            raise InputError(
                f"reorder marker {token!r}: cannot read {item!r} (items: moves, search:N with "
                f"1 <= N <= {MAX_BUDGET}, tuned:KEY (hex), twin:K with 1 <= K <= {MAX_TWINS}, noalias, rev:HEX)"
            )
    return Request(mode, budget, key, noalias, rev, rank)


def split_tokens(tokens: Sequence[str]) -> tuple[Request | None, list[str]]:
    """(the request, the other tokens in order); two markers are refused (which one wins?)."""
    marks = [t for t in tokens if is_marker(t)]
    if len(marks) > 1:
        raise InputError(f"more than one reorder marker: {marks}")
    rest = [t for t in tokens if not is_marker(t)]
    return (parse_token(marks[0]) if marks else None), rest


def split_options(ptx_options: str | None) -> tuple[Request | None, str | None]:
    """Triton's `ptx_options` string split into the request and what ptxas should get
    (None when nothing is left, as Triton's own default)."""
    request, rest = split_tokens((ptx_options or "").split())
    return request, (" ".join(rest) or None)


def with_marker(ptx_options: str | None, request: Request) -> str:
    """`ptx_options` carrying `request` (any earlier marker replaced)."""
    _, rest = split_options(ptx_options)
    return " ".join(filter(None, [rest, request.token()]))
