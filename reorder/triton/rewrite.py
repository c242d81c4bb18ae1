"""A Triton cubin in, reorder's binary for a marked config out; a compile never fails for it.

Four ways (reorder.triton.request): `twin` gives a build of the config's twin list
(reorder.triton.twins); `moves` runs reorder.build.pipeline (SliceBatch/LoadBatch,
then stall cuts, each step verified, kept only when the static model does not predict it
slower); `search` runs `reorder optimize` on the static model; `tuned` hands back the binary
`reorder.triton.tune` measured and byte-checked on a GPU for exactly this cubin. Without a
launch there is nothing to execute, so `moves` and `search` results are proven legal by the
verifier, not byte-checked: `reorder.triton.verify` does that against the unoptimized build.

Results are kept in reorder's content-addressed cache (`$REORDER_CACHE/triton`), named by
the input cubin, the request and a digest of reorder's own sources, so a fixed reorder never
serves an old answer. `rewrite_or_keep` is what compile paths call: whatever goes wrong, the
compiler's own cubin is returned with one line saying why.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from reorder.base.diskcache import key_of
from reorder.base.errors import ReorderError
from reorder.base.files import write_atomic
from reorder.triton import digest
from reorder.triton.builds import async_wgmma, moves_binary, store_dir
from reorder.triton.request import Request

ROOT = Path(__file__).resolve().parents[2]
SEARCH_SECONDS_PER_TRIAL = 120.0


@dataclass(frozen=True, slots=True)
class Rewritten:
    """The binary to use and one line saying what it is."""

    data: bytes
    changed: bool
    note: str


def static_path(cubin: bytes, request: Request, root: Path | None = None) -> Path:
    """Where the `moves`/`search` answer for `cubin` is kept: named by the cubin, the request
    and reorder's sources (a build may fill another root, carried to where Triton compiles)."""
    built = Request(request.mode, request.budget, request.key, request.noalias)  # `rev` builds nothing
    return store_dir("static", root) / f"{key_of(cubin, built.token(), digest.code_digest())[:40]}.cubin"


# ---------------------------------------------------------------- tuned binaries


def store_tuned(original: bytes, winner: bytes, record: dict) -> str:
    """Keep a GPU-tuned winner for `original` (with what was measured); returns its key,
    which a `tuned:KEY` marker names (a new winner gets a new key, hence a new Triton
    cache entry: nothing stale is served)."""
    key = key_of(winner)[:16]
    base = _tuned_base(original, key)
    base.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(base.with_suffix(".cubin"), winner)
    write_atomic(base.with_suffix(".json"), json.dumps(record, indent=1, default=str).encode())
    return key


def tuned_binary(original: bytes, key: str) -> bytes | None:
    """The stored winner `key` for `original`, or None."""
    try:
        return _tuned_base(original, key).with_suffix(".cubin").read_bytes()
    except OSError:
        return None


def tuned_record(original: bytes, key: str) -> dict:
    """What tune recorded with the winner (score, moves, check); {} when unreadable."""
    try:
        return json.loads(_tuned_base(original, key).with_suffix(".json").read_text())
    except (OSError, ValueError):
        return {}


def _tuned_base(original: bytes, key: str) -> Path:
    return store_dir("tuned") / f"{key_of(original)[:40]}-{key}"


# ---------------------------------------------------------------- static rewrites


def search_binary(cubin: bytes, budget: int, noalias: bool) -> bytes:
    """`reorder optimize` on the static model, in a scratch folder; its chatter is swallowed
    (a compile is not the place for it) and the written output returned."""
    from reorder.optimize import OptimizeArgs, optimize

    with tempfile.TemporaryDirectory(prefix="reorder-triton-") as tmp:
        source, output = Path(tmp) / "triton.cubin", Path(tmp) / "out.cubin"
        source.write_bytes(cubin)
        args = OptimizeArgs(
            cubin=source,
            output=output,
            kernel=None,
            launch=None,
            budget=budget,
            seconds=SEARCH_SECONDS_PER_TRIAL * budget,
            jobs=1,
            storage=None,
            l2="warm",
            device="cpu",
            noalias=noalias,
            seed=0,
        )
        with contextlib.redirect_stderr(io.StringIO()):
            optimize(args)
        return output.read_bytes()


def rewrite(cubin: bytes, request: Request) -> Rewritten:
    """reorder's binary for `request`; ReorderError when it cannot be made."""
    if request.mode == "tuned":
        found = tuned_binary(cubin, request.key)
        if found is None:
            return Rewritten(
                cubin,
                False,
                f"no tuned binary {request.key} for this cubin (tune again; the cache "
                "may have been cleared): the compiler's cubin is kept",
            )
        record = tuned_record(cubin, request.key)
        return Rewritten(
            found,
            found != cubin,
            f"tuned binary {request.key} ({record.get('score', 'no record')}; "
            f"check: {record.get('check') or 'none recorded'})",
        )
    path = static_path(cubin, request)
    try:
        data = path.read_bytes()
    except OSError:
        data = (
            moves_binary(cubin, request.noalias)
            if request.mode == "moves"
            else search_binary(cubin, request.budget, request.noalias)
        )
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, data)
    what = "static moves" if request.mode == "moves" else f"static search of {request.budget} trial(s)"
    if data == cubin:
        return Rewritten(cubin, False, f"{what}: no change predicted faster; the compiler's cubin is kept")
    return Rewritten(
        data, True, f"{what}: verified, predicted faster (not executed: reorder.triton.verify checks bytes on a GPU)"
    )


def rewrite_or_keep(
    cubin: bytes,
    request: Request,
    say: Callable[[str], None] | None = None,
    ptx: str | None = None,
    compile_cubin: Callable[[str], bytes] | None = None,
) -> Rewritten:
    """`rewrite`, or the compiler's cubin with the reason when anything at all fails: a
    compile that asked for reorder must still produce a working kernel.

    Given the PTX ptxas compiled and a way to compile it again (`compile_cubin`: the same
    ptxas, flags and options; the stages hook and the ptxas stand-in both have one), a
    `moves` request first takes the wgmma PTX step (`async_wgmma`) and rewrites that step's
    cubin; a step that fails leaves the compiler's cubin to the SASS moves, and the note
    says so. A `twin` request takes its build from the config's twin list (reorder.triton.twins),
    made from the same PTX and cubin stage."""
    if request.mode == "twin":
        result = _twin_or_keep(cubin, request, ptx, compile_cubin)
        if say is not None and os.environ.get("REORDER_QUIET") != "1":
            say(f"reorder: {result.note}")
        return result
    base, first = _ptx_step(cubin, request, ptx, compile_cubin)
    try:
        result = rewrite(base, request)
    except Exception as exc:  # noqa: BLE001 - a failed rewrite must never fail the compile
        kind = "" if isinstance(exc, ReorderError) else f"{type(exc).__name__}: "
        result = Rewritten(base, False, f"reorder failed ({kind}{_first_line(exc)}): the compiler's cubin is kept")
    result = Rewritten(result.data, result.data != cubin, first + result.note)
    if say is not None and os.environ.get("REORDER_QUIET") != "1":
        say(f"reorder: {result.note}")
    return result


def _twin_or_keep(
    cubin: bytes, request: Request, ptx: str | None, compile_cubin: Callable[[str], bytes] | None
) -> Rewritten:
    """The request's twin, or the compiler's cubin with the reason."""
    from reorder.triton import twins

    try:
        found = twins.ranked(
            cubin, ptx if isinstance(ptx, str) else None, compile_cubin, request.noalias, upto=request.rank
        )
    except Exception as exc:  # noqa: BLE001 - a failed twin must never fail the compile
        kind = "" if isinstance(exc, ReorderError) else f"{type(exc).__name__}: "
        return Rewritten(cubin, False, f"reorder failed ({kind}{_first_line(exc)}): the compiler's cubin is kept")
    if request.rank > len(found):
        return Rewritten(
            cubin,
            False,
            f"twin {request.rank}: this config has {len(found)} build(s) of its own bytes; "
            "the compiler's cubin is kept",
        )
    build = found[request.rank - 1]
    return Rewritten(build.data, True, twins.describe(build, request.rank))


def _ptx_step(
    cubin: bytes, request: Request, ptx: str | None, compile_cubin: Callable[[str], bytes] | None
) -> tuple[bytes, str]:
    """The cubin the SASS rewrite starts from, and the start of the note."""
    if request.mode != "moves" or not isinstance(ptx, str) or compile_cubin is None:
        return cubin, ""
    try:
        made = async_wgmma(ptx, compile_cubin)
    except Exception as exc:  # noqa: BLE001 - a failed PTX step must never fail the compile
        return (
            cubin,
            f"PTX step failed ({_first_line(exc) or type(exc).__name__}), SASS moves on the compiler's cubin; ",
        )
    return (cubin, "") if made is None else (made[0], f"{made[1]}; then ")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""
