"""The twins of one Triton config: reorder's few builds that `rt.with_reorder` puts beside it.

A twin is a config marked `--reorder=twin:K` (reorder.triton.request): when the stages hook
compiles it, it gets the K-th build of this list, made from the config's own PTX and cubin:

1. **Measured first**: every binary `rt.tune` stored for this very cubin (reorder.triton.
   rewrite.store_tuned: a GPU search, byte-checked at its launch), newest first. The cubin
   names the kernel, its specialization (ints equal to 1, 16-divisibility) and the config.
2. **Then predicted**: one build per *menu* of the PTX move space (reorder.ptx.space.registry: the
   kinds, each instance of a kind taking the same alternative): `loop` at each of Prefetch
   1-4 and UnrollBatch 2/4, each hoist plan (reorder.ptx.space.plans), `reuse`, with the `wgmma`
   move on top wherever it is offered, and `wgmma` alone. Each menu's PTX is compiled by the
   config's own cubin stage (the same ptxas, flags and options), verified as a compiler's
   cubin is, then the static SASS moves run on it (reorder.triton.builds.moves_binary); the
   menu keeps the better-predicted of the two. The SASS moves on the config's own cubin are
   one more build. A build counts only when the static model predicts it faster than the
   original (reorder.analysis.costmodel.loop_aware_cycles, a trip laid out k times counted as
   k iterations); they are ranked by that prediction (the second twin is the best of another
   kind of move than the first: twin_order), equal bytes once.

Why a few and not one: the static model ranks the builds of one kernel, but it cannot see
the launch shape, and the best loop move depends on it (a prefetch of the next block of a
looped RMSNorm was 0.86x at 16 rows and 1.06x at 1024 rows). The autotuner times every twin
at every key with the user's own do_bench, so the model only has to put the winner among
the first few; each twin costs the autotuner one more timing per key and the hook one
compile per config, so `rt.with_reorder` gives three by default (reorder.triton.tune.TWINS).

The list of one cubin is built once (its first twin's compile) and kept in reorder's cache,
named by the cubin, the PTX, the no-alias assumption and reorder's sources; the other twins
read it. A twin with no K-th build keeps the compiler's cubin, and its note says so.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from reorder.base.diskcache import key_of
from reorder.base.errors import LegalityError, NotApplicable, ReorderError
from reorder.base.files import write_atomic
from reorder.triton import digest

SASS_ONLY = "sass"


@dataclass(frozen=True, slots=True)
class Build:
    """One build of the list: its name (the menu, '+sass' when the SASS moves ran on it), its
    bytes, the compiler's cubin the SASS moves started from (None: none ran on a PTX build),
    and the static prediction (cycles) or, for a stored GPU result, what was measured."""

    name: str
    data: bytes
    predicted: float
    measured: str = ""
    base: bytes | None = None


@dataclass(frozen=True, slots=True)
class Menu:
    """One way through the PTX move kinds: the alternative each kind takes at every instance."""

    name: str
    choices: tuple[tuple[str, str], ...]  # (kind, alternative)
    plan: str = ""  # a hoist plan (reorder.ptx.space.plans) instead of the kinds' walk


LOOP_CHOICES = ("prefetch1", "prefetch2", "prefetch3", "prefetch4", "unroll2", "unroll4")
MENUS: tuple[Menu, ...] = (
    *(Menu(f"loop:{c}", (("loop", c), ("wgmma", "on"))) for c in LOOP_CHOICES),
    *(Menu(f"hoist:{p}", (), plan=p) for p in ("barrier", "top", "store", "branch")),
    Menu("reuse", (("reuse", "on"), ("wgmma", "on"))),
    Menu("wgmma", (("wgmma", "on"),)),
)


def per_trip(menu: Menu) -> int:
    """Original iterations one trip of a moved loop covers (both loop moves lay the body out
    k times: UnrollBatch by k, Prefetch at distance k)."""
    choice = dict(menu.choices).get("loop", "")
    for prefix in ("prefetch", "unroll"):
        if choice.startswith(prefix):
            return int(choice.removeprefix(prefix))
    return 1


def moved_ptx(module, kernel: str, noalias: bool, menu: Menu, offers: dict | None = None):
    """(the moved module, the moves made, every loop offered was moved, the build's name: the
    kinds that moved something, each with its alternative) for one menu.

    Only the menu's kinds are walked (any other kind would be decided OFF everywhere);
    `offers` keeps each kind's instances per module across the menus of one list."""
    from reorder.ptx.space.plans import plan
    from reorder.ptx.space.registry import OFF, MoveOptions
    from reorder.ptx.space.searchspace import walk

    if menu.plan:
        moved, moves = plan(module, kernel, noalias, menu.plan)
        return moved, tuple(m.describe() for m in moves), True, menu.name
    wanted = dict(menu.choices)
    done = walk(
        module,
        MoveOptions(kernel, noalias),
        lambda i: wanted[i.kind] if wanted.get(i.kind) in i.choices else OFF,
        kinds=wanted.keys(),
        offers=offers,
    )
    loops = [i for i in done.offered if i.kind == "loop"]
    moved_loops = [p for p in done.picks if p.kind == "loop"]
    kinds = dict.fromkeys((p.kind, p.choice) for p in done.picks)
    name = "+".join(kind if choice == "on" else f"{kind}:{choice}" for kind, choice in kinds)
    return done.module, done.applied, len(moved_loops) == len(loops) and bool(loops), name


@lru_cache(maxsize=32)
def _decoded(cubin: bytes):
    """A build's kernel, decoded once for its check and its predictions (a value: shared)."""
    from reorder.binary.cubin import parse_cubin
    from reorder.sass.model import decode_kernel

    return decode_kernel(parse_cubin(cubin, "Triton cubin"))


def _predicted(cubin: bytes, trip: int = 1) -> float:
    from reorder.analysis.costmodel import loop_aware_cycles

    return loop_aware_cycles(_decoded(cubin).instructions, trip)


def _checked(cubin: bytes) -> bytes:
    """ptxas's build of a moved PTX, verified as a compiler's cubin is."""
    from legality.verify import verify_kernel

    code = _decoded(cubin)
    verdict = verify_kernel(code, original=code.instructions)
    if not verdict.ok:
        raise LegalityError(f"verifier rejected ptxas's build: {verdict.violations[0].line()}", verdict.violations)
    return cubin


def menu_build(ptx_cubin: bytes, name: str, trip: int, noalias: bool) -> Build:
    """The better-predicted of a PTX build and the SASS moves on top of it."""
    from reorder.triton.builds import moves_binary

    plain = Build(name, ptx_cubin, _predicted(ptx_cubin, trip), base=None)
    try:
        sass = moves_binary(ptx_cubin, noalias)
    except ReorderError:
        return plain
    if sass == ptx_cubin:
        return plain
    both = Build(f"{name}+sass", sass, _predicted(sass, trip), base=ptx_cubin)
    return both if both.predicted < plain.predicted else plain


def static_builds(
    cubin: bytes,
    ptx: str | None,
    compile_cubin: Callable[[str], bytes] | None,
    noalias: bool,
    depth: int = 3,
) -> tuple[list[Build], list[str]]:
    """(the predicted builds, in twin order, each predicted faster than `cubin`; one line per
    menu that failed). The SASS moves run on the `depth` best-predicted PTX builds only (they
    cost the most of a build, and only the first twins are ever asked for)."""
    from reorder.ptx.model.model import parse_module
    from reorder.sass.together import prime
    from reorder.triton.builds import moves_binary

    notes: dict[int, str] = {}
    compiled: list[tuple[int, str, int, bytes]] = []  # (menu index, build name, trip, ptxas's cubin)
    if ptx is not None and compile_cubin is not None:
        module = parse_module(ptx)
        kernel = module.kernels[0].name
        texts: set[str] = set()
        offers: dict = {}
        for index, menu in enumerate(MENUS):
            try:
                moved, moves, all_loops, name = moved_ptx(module, kernel, noalias, menu, offers)
                if not moves or moved.text in texts:
                    continue
                texts.add(moved.text)
                compiled.append((index, name, per_trip(menu) if all_loops else 1, compile_cubin(moved.text)))
            except (ReorderError, NotApplicable) as exc:
                notes[index] = _note(menu, exc)
    prime([cubin, *(c for *_, c in compiled)])  # one nvdisasm run decodes them all
    original = _predicted(cubin)
    builds: list[Build] = []
    with contextlib.suppress(ReorderError):
        sass = moves_binary(cubin, noalias)
        if sass != cubin:
            builds.append(Build(SASS_ONLY, sass, _predicted(sass), base=cubin))
    made: list[tuple[Build, int]] = []
    for index, name, trip, built in compiled:
        try:
            made.append((Build(name, _checked(built), _predicted(built, trip)), trip))
        except (ReorderError, NotApplicable) as exc:
            notes[index] = _note(MENUS[index], exc)
    made.sort(key=lambda m: m[0].predicted)
    builds += [menu_build(b.data, b.name, trip, noalias) if k < depth else b for k, (b, trip) in enumerate(made)]
    faster = [b for b in builds if b.predicted < original and b.data != cubin]
    return twin_order(_distinct(sorted(faster, key=lambda b: b.predicted))), [notes[k] for k in sorted(notes)]


def _note(menu: Menu, exc: Exception) -> str:
    return f"{menu.name}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"


def group(name: str) -> str:
    """The kind of move a build makes, for twin_order ('loop:prefetch3+wgmma+sass' -> 'prefetch')."""
    head = name.split("+", 1)[0]
    kind, _, choice = head.partition(":")
    return choice.rstrip("0123456789") if kind == "loop" else kind


def twin_order(builds: Sequence[Build]) -> list[Build]:
    """Best-predicted first, then the best of another kind of move (prefetch, unroll, hoist,
    reuse, wgmma, sass), then the rest by prediction: the model ranks the depths of one
    move better than it ranks one move against another, so the first two twins hedge."""
    if not builds:
        return []
    first = builds[0]
    other = next((b for b in builds[1:] if group(b.name) != group(first.name)), None)
    rest = [b for b in builds[1:] if b is not other]
    return [first, *([other] if other is not None else []), *rest]


def _distinct(builds: Sequence[Build]) -> list[Build]:
    seen, out = set(), []
    for b in builds:
        if b.data not in seen:
            seen.add(b.data)
            out.append(b)
    return out


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
            out.append(Build(f"tuned:{key}", data, 0.0, measured=str(record.get("score", "measured"))))
    return out


def _list_path(cubin: bytes, ptx: str | None, noalias: bool, root: Path | None) -> Path:
    from reorder.triton.builds import store_dir

    return store_dir("twins", root) / key_of(cubin, ptx or "", str(noalias), digest.code_digest())[:40]


def ranked(
    cubin: bytes,
    ptx: str | None,
    compile_cubin: Callable[[str], bytes] | None,
    noalias: bool,
    root: Path | None = None,
) -> list[Build]:
    """The whole list for one cubin (see the module docstring): stored GPU results, then the
    static builds, built once and kept."""
    folder = _list_path(cubin, ptx, noalias, root)
    static = _read_list(folder)
    if static is None:
        static, notes = static_builds(cubin, ptx, compile_cubin, noalias)
        _write_list(folder, static, notes)
    return _distinct([*measured_builds(cubin), *static])


def _read_list(folder: Path) -> list[Build] | None:
    try:
        index = json.loads((folder / "index.json").read_text())
        return [
            Build(
                e["name"],
                (folder / e["file"]).read_bytes(),
                float(e["predicted"]),
                base=(folder / e["base"]).read_bytes() if e.get("base") else None,
            )
            for e in index["builds"]
        ]
    except (OSError, ValueError, KeyError):
        return None


def _write_list(folder: Path, builds: Sequence[Build], notes: Sequence[str]) -> None:
    """Keep the list (a cache that cannot be written only costs the rebuild)."""
    entries = []
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        for k, b in enumerate(builds):
            entry: dict[str, Any] = {"name": b.name, "file": f"{k}.cubin", "predicted": b.predicted}
            write_atomic(folder / entry["file"], b.data)
            if b.base is not None:
                entry["base"] = f"{k}.base.cubin"
                write_atomic(folder / entry["base"], b.base)
            entries.append(entry)
        write_atomic(folder / "index.json", json.dumps({"builds": entries, "notes": list(notes)}, indent=1).encode())


def describe(build: Build, rank: int, count: int) -> str:
    """The note a twin's compile leaves in its metadata."""
    if build.measured:
        return f"twin {rank} of {count}: {build.name}, stored GPU result ({build.measured})"
    return (
        f"twin {rank} of {count}: {build.name}, verified, predicted {build.predicted:.0f} cycles "
        "(not executed: rt.verify checks bytes on a GPU)"
    )
