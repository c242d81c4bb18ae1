"""One `reorder optimize` run on a Triton config's cubin, at one launch or several.

The config's cubin, Triton's PTX (when its own ptxas and flags rebuild the cubin byte for
byte) and the launch specs go to `optimize`; the winner is stored by content
(reorder.triton.rewrite.store_tuned), so a `tuned:KEY` marker makes the stages hook serve it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reorder.base.errors import ReorderError
from reorder.triton.compile import Call, ptxas_recipe
from reorder.triton.rewrite import store_tuned


@dataclass(frozen=True)
class Search:
    """How each config's search runs (tune's keywords)."""

    budget: int
    seconds: float
    outputs: Sequence[str]
    inits: Mapping[str, Any] | None
    l2: str
    noalias: bool
    jobs: int
    device: str
    ptx: bool
    arch: int | None


@dataclass(frozen=True)
class Found:
    """One optimize run on a config's cubin: its winner, stored, and what it measured."""

    key: str
    winner: bytes
    record: dict
    measured: bool
    folder: Path  # the run's report folder (reorder.reorder)


def run_search(
    call: Call, label: str, here: Path, launches: tuple[Path, ...], weights: Sequence[float], per_shape: bool, s: Search
) -> Found:
    """`reorder optimize` on the call's cubin at `launches` (several: one multi-shape search);
    the winner stored by content (reorder.triton.rewrite.store_tuned)."""
    from reorder.optimize import OptimizeArgs, optimize

    original, output = here / "original.cubin", here / "reorder.cubin"
    original.write_bytes(call.cubin)
    source, recipe, ptx_note = _ptx_of(call, here) if s.ptx else (None, None, "PTX moves not asked for (ptx=False)")
    report = optimize(
        OptimizeArgs(
            cubin=original,
            output=output,
            kernel=call.name,
            launch=launches[0],
            budget=s.budget,
            seconds=s.seconds,
            jobs=s.jobs,
            storage=None,
            l2=s.l2,
            device=s.device,
            noalias=s.noalias,
            seed=0,
            ptx=source,
            ptx_recipe=recipe,
            started=time.monotonic(),  # `seconds` is this config's: not counted from the process's start
            more_launches=launches[1:],
            weights=tuple(float(w) for w in weights),
            per_shape=per_shape and len(launches) > 1,
        )
    )
    assert report is not None  # a search in this process, not a helper worker
    winner = output.read_bytes()
    score = report.result
    record = {
        "kernel": call.name,
        "config": label,
        "launch": ", ".join(map(str, launches)),
        "moves": report.best_moves,
        "check": report.check,
        "score": score.line() if score else "none",
        "verifier": report.verifier,
        "ptx": ptx_note,
    }
    key = store_tuned(call.cubin, winner, record)
    return Found(key, winner, record, bool(score and score.measured), output.with_name("reorder.reorder"))


def _ptx_of(call: Call, folder: Path) -> tuple[Path | None, Any, str]:
    """(the config's PTX file, the ptxas recipe that rebuilds its cubin, a note), or
    (None, None, why the search runs without PTX): the recipe is Triton's own ptxas and flags
    for this call (reorder.triton.compile.ptxas_recipe), used only when it reproduces the
    config's cubin byte for byte, so every PTX candidate is compiled as the original was."""
    from reorder.ptx.toolchain.compile import Recipe, compile_ptx

    path = folder / "original.ptx"
    path.write_text(call.kernel.asm["ptx"])
    try:
        ptxas, flags = ptxas_recipe(call.options, call.kernel.metadata.target.arch)
        recipe = Recipe(Path(ptxas), flags)
        made = compile_ptx(path, recipe)
    except ReorderError as exc:
        return None, None, f"PTX moves left out: {str(exc).splitlines()[0]}"
    if made is None or made.cubin.read_bytes() != call.cubin:
        return None, None, f"PTX moves left out: {recipe.describe()} does not rebuild the config's cubin"
    return path, recipe, f"Triton's PTX, compiled as the config is: {recipe.describe()}"
