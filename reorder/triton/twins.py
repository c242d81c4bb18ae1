"""The twins of one Triton config: reorder's few builds that `rt.with_reorder` puts beside it.

A twin is a config marked `--reorder=twin:K` (reorder.triton.request): when the stages hook
compiles it, it gets the K-th build of this list, made from the config's own PTX and cubin:

1. **Measured first**: every binary `rt.tune` stored for this very cubin (reorder.triton.
   rewrite.store_tuned: a GPU search, byte-checked at its launch), newest first. The cubin
   names the kernel, its specialization (ints equal to 1, 16-divisibility) and the config.
2. **Then the PTX move menus, in a fixed order** (`MENUS`): each menu is one way through the
   PTX move space (reorder.ptx.space.registry: every instance of a kind takes the same
   alternative), compiled by the config's own cubin stage (the same ptxas, flags and
   options). A menu that moves nothing, repeats an earlier menu's PTX, or compiles to the
   config's own cubin or an earlier build's bytes is skipped.

The order is the measured one, not a prediction. On the H200 the twins the autotuner picked
over five independently written Triton families (2026-12-02_triton_one_line) were the wgmma
step on the GEMMs (1.24-1.83x), `loop:unroll4` (addnorm at all three shapes), `loop:prefetch3`
and `loop:prefetch1` (cross-entropy, cumsum); the SASS moves on top of a PTX build measured
0.996-1.006 on the GEMMs while they were most of a twin's compile (an nvdisasm process and the
verifier's walk per build: 16.8x Triton's own compile, median over the benchmark's configs,
2026-12-03_twin_compile_3). So the list is the PTX builds alone, taken lazily: twin K compiles
menus until it has K builds, each compile kept on disk, so the three twins of a config cost
about three ptxas runs and one walk of the PTX space. The SASS moves stay one step away:
`rt.with_reorder(configs, twins=0)` (the hook's `moves` build: the wgmma step, then SASS
moves) and `rt.tune` (a GPU search over both levels, whose winners come first here).

A loop whose loads run early only past stores to their own buffer (an in-place pass, opened
by reorder.ptx.analyses.affine) is left out of the menus and to `rt.tune`'s search, which
decides each loop on its own: on Liger-Kernel's cross-entropy, Prefetch 1 on the in-place
gradient pass was 3-5% slower while on the read-only first pass it was 2-8% faster
(2026-12-03_triton_inplace), and a menu takes one alternative for every loop.

The autotuner times every twin at every key with the user's own do_bench, so the list only
has to put the winner among the first few; each twin costs the autotuner one more timing per
key and the hook one compile per config, so `rt.with_reorder` gives three by default
(reorder.triton.tune.TWINS). Nothing here is executed or judged on the SASS: a PTX build is
ptxas's compile of PTX moves reorder's PTX rules made legal, and `rt.verify` verifies it as a
compiler's cubin and byte-checks it on a GPU.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from reorder.base.diskcache import cached_json, key_of
from reorder.base.errors import NotApplicable, ReorderError
from reorder.base.files import write_atomic
from reorder.triton import digest


@dataclass(frozen=True, slots=True)
class Build:
    """One build of the list: its name (the menu's moves, or `tuned:KEY` for a stored GPU
    result), its bytes, and for a stored GPU result what was measured."""

    name: str
    data: bytes
    measured: str = ""


@dataclass(frozen=True, slots=True)
class Menu:
    """One way through the PTX move kinds: the alternative each kind takes at every instance."""

    name: str
    choices: tuple[tuple[str, str], ...]  # (kind, alternative)
    plan: str = ""  # a hoist plan (reorder.ptx.space.plans) instead of the kinds' walk


def _loop(choice: str) -> Menu:
    return Menu(f"loop:{choice}", (("loop", choice), ("wgmma", "on")))


MENUS: tuple[Menu, ...] = (
    Menu("wgmma", (("wgmma", "on"),)),
    *(_loop(c) for c in ("unroll4", "prefetch3", "prefetch1", "unroll2", "prefetch2", "prefetch4")),
    *(Menu(f"hoist:{p}", (), plan=p) for p in ("barrier", "top", "store", "branch")),
    Menu("reuse", (("reuse", "on"), ("wgmma", "on"))),
)


def menu_ptx(module, kernel: str, noalias: bool, menu: Menu, offers: dict | None = None):
    """(the moved module, the moves made, the build's name: the kinds that moved something,
    each with its alternative) for one menu.

    Only the menu's kinds are walked (any other kind would be decided OFF everywhere);
    `offers` keeps each kind's instances per module across the menus of one PTX."""
    from reorder.ptx.moves.prefetch import in_place_loops
    from reorder.ptx.space.plans import plan
    from reorder.ptx.space.registry import OFF, MoveOptions
    from reorder.ptx.space.searchspace import walk

    if menu.plan:
        moved, moves = plan(module, kernel, noalias, menu.plan)
        return moved, tuple(m.describe() for m in moves), menu.name
    wanted = dict(menu.choices)
    in_place = in_place_loops(module.function(kernel), noalias) if "loop" in wanted else frozenset()
    done = walk(
        module,
        MoveOptions(kernel, noalias),
        lambda i: wanted[i.kind] if wanted.get(i.kind) in i.choices and not _left(i, in_place) else OFF,
        kinds=wanted.keys(),
        offers=offers,
    )
    kinds = dict.fromkeys((p.kind, p.choice) for p in done.picks)
    name = "+".join(kind if choice == "on" else f"{kind}:{choice}" for kind, choice in kinds)
    return done.module, done.applied, name


def _left(instance: Any, in_place: frozenset[str]) -> bool:
    """A loop the menus leave alone: an in-place pass (see the module docstring)."""
    return instance.kind == "loop" and instance.key in in_place


@dataclass(frozen=True, slots=True)
class Moved:
    """A menu's moved PTX: the build's name (the kinds that moved something) and its text."""

    name: str
    text: str


def moved_menus(ptx: str, noalias: bool) -> Iterator[Moved]:
    """The menus' moved PTX, in `MENUS` order, each text once, each menu walked only when asked
    for (a hoist plan re-analyses the function after every hoist: most of a walk's cost) and
    kept in reorder's cache; menus that move nothing or fail are left out."""
    texts: set[str] = set()
    for menu in MENUS:
        found = _menu_moved(ptx, noalias, menu)
        if found is not None and found.text not in texts:
            texts.add(found.text)
            yield found


@lru_cache(maxsize=64)
def _menu_moved(ptx: str, noalias: bool, menu: Menu) -> Moved | None:
    key = key_of(ptx, str(noalias), repr(menu), digest.code_digest())
    found = cached_json("triton-menus", key, lambda: _walk_menu(ptx, noalias, menu))
    return Moved(str(found[0]), str(found[1])) if found else None


@lru_cache(maxsize=4)
def _parsed(ptx: str) -> tuple[Any, dict]:
    """The module, and the kinds' instances kept across the menus of one PTX (a value shared
    by the menus walked in this process; `offers` only grows)."""
    from reorder.ptx.model.model import parse_module

    return parse_module(ptx), {}


def _walk_menu(ptx: str, noalias: bool, menu: Menu) -> list[str] | None:
    """[the build's name, its moved PTX] for one menu, None when it moves nothing or fails."""
    module, offers = _parsed(ptx)
    try:
        moved, moves, name = menu_ptx(module, module.kernels[0].name, noalias, menu, offers)
    except (ReorderError, NotApplicable):
        return None
    return [name, moved.text] if moves else None


def measured_builds(cubin: bytes) -> list[Build]:
    """Every winner `rt.tune` stored for `cubin` that differs from it, newest first."""
    from reorder.triton.builds import store_dir

    base = key_of(cubin)[:40]
    found = sorted(store_dir("tuned").glob(f"{base}-*.cubin"), key=lambda p: p.stat().st_mtime, reverse=True)
    out = []
    for path in found:
        with contextlib.suppress(OSError, ValueError):
            data = path.read_bytes()
            if data == cubin:
                continue
            record = json.loads(path.with_suffix(".json").read_text()) if path.with_suffix(".json").is_file() else {}
            key = path.stem.rsplit("-", 1)[1]
            out.append(Build(f"tuned:{key}", data, measured=str(record.get("score", "measured"))))
    return out


def ranked(
    cubin: bytes,
    ptx: str | None,
    compile_cubin: Callable[[str], bytes] | None,
    noalias: bool,
    upto: int | None = None,
    root: Path | None = None,
) -> list[Build]:
    """The list for one cubin (see the module docstring), its first `upto` builds (all when
    None): stored GPU results, then the PTX builds in menu order, each compiled once and kept.
    Without `compile_cubin` only builds compiled before are given, up to the first that was not."""
    out = [*measured_builds(cubin)]
    seen = {cubin, *(b.data for b in out)}
    for moved in moved_menus(ptx, noalias) if ptx is not None else ():
        if upto is not None and len(out) >= upto:
            break
        data = _compiled(cubin, moved, compile_cubin, root)
        if data is None:
            break
        if data and data not in seen:
            seen.add(data)
            out.append(Build(moved.name, data))
    return out


def _compiled(
    cubin: bytes, moved: Moved, compile_cubin: Callable[[str], bytes] | None, root: Path | None
) -> bytes | None:
    """ptxas's build of one menu's PTX by the config's own stage, kept by the config's cubin
    (which names its compile options) and the moved text; None when not kept and no stage is
    given. A menu ptxas refuses is b"" (kept too: it is refused again)."""
    from reorder.triton.builds import store_dir

    path = store_dir("twins", root) / f"{key_of(cubin, moved.text, digest.code_digest())[:40]}.cubin"
    with contextlib.suppress(OSError):
        return path.read_bytes()
    if compile_cubin is None:
        return None
    try:
        data = compile_cubin(moved.text)
    except Exception:  # noqa: BLE001 - a menu ptxas refuses is skipped, never the compile's end
        data = b""
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, data)
    return data


def describe(build: Build, rank: int) -> str:
    """The note a twin's compile leaves in its metadata."""
    if build.measured:
        return f"twin {rank}: {build.name}, stored GPU result ({build.measured})"
    return (
        f"twin {rank}: {build.name}, PTX moves compiled by the config's own ptxas "
        "(not executed: rt.verify verifies it and checks its bytes on a GPU)"
    )
