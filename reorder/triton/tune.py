"""`tune` and `with_reorder`: reorder's search on Triton configs, and reorder as an autotune axis.

`tune(kernel, *args, grid=..., configs=[...], budget=N)` compiles each config for the live
arguments (reorder.triton.compile), builds its launch from the kernel's metadata
(reorder.triton.launch), and runs `reorder optimize` on it, over Triton's PTX and the SASS
(the PTX move kinds as Optuna parameters, each candidate compiled by the config's own ptxas
and flags): on a GPU every candidate is byte-checked on fresh inputs and timed against the
config's own cubin with paired timing; on a machine without one the same search runs on the
static model (and the launch is still checked against the cubin's parameters). Each winner
is stored by content (reorder.triton.rewrite.store_tuned), and `tune` returns the configs
with a marked copy of each (`ptx_options="--reorder=tuned:KEY"`); the stored winner is also
the first twin `with_reorder` gives that config from then on (reorder.triton.twins).

`with_reorder(configs)` adds each config's twins (reorder.triton.twins), made when Triton
compiles them through the stages hook and timed by the autotuner's own do_bench next to the
originals. `reorder.triton.verify` proves what the autotuner may pick: the autotuner itself
never compares outputs.
"""

from __future__ import annotations

import copy
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reorder.base.errors import ReorderError
from reorder.triton.compile import Call, compile_call, config_kwargs, ptxas_recipe
from reorder.triton.launch import Grid, launch_spec, spec_toml
from reorder.triton.request import Request, split_options, with_marker
from reorder.triton.rewrite import store_tuned


@dataclass(frozen=True)
class TunedConfig:
    """What tune found for one config."""

    label: str
    kernel: str
    key: str  # the stored winner (tuned:KEY)
    changed: bool  # the winner differs from the config's own cubin
    score: str  # ratio and CI, measured or predicted
    measured: bool
    moves: str
    check: str
    folder: Path
    config: Any
    marked: Any
    ptx: str = ""  # whether the search spanned Triton's PTX, and compiled how


@dataclass
class TuneResult:
    rows: list[TunedConfig] = field(default_factory=list)

    @property
    def configs(self) -> list[Any]:
        """Every original config, then each one's reorder twin: the autotune axis."""
        return [r.config for r in self.rows] + [r.marked for r in self.rows]

    def table(self) -> str:
        lines = ["config | reorder | moves | check | PTX"]
        lines += [f"{r.label} | {r.score} | {r.moves} | {r.check} | {r.ptx}" for r in self.rows]
        return "\n".join(lines)


def label_of(kwargs: Mapping[str, Any]) -> str:
    """A short name for a config: its keywords, ptx_options left out."""
    parts = [f"{k}{v}" for k, v in sorted(kwargs.items()) if k != "ptx_options" and v is not None]
    return "-".join(parts).replace(" ", "") or "default"


def marked_config(config: Any, request: Request) -> Any:
    """A copy of a triton.Config (or a dict of keywords) asking for `request`."""
    if isinstance(config, Mapping):
        return {**config, "ptx_options": with_marker(config.get("ptx_options"), request)}
    twin = copy.copy(config)
    twin.kwargs = {**config.kwargs, "ptx_options": with_marker(config.kwargs.get("ptx_options"), request)}
    return twin


TWINS = 3  # twins per config (reorder.triton.twins: why a few, and why this many)


def with_reorder(configs: Sequence[Any], request: Request | None = None, twins: int = TWINS) -> list[Any]:
    """`configs`, then reorder's twins of each: reorder as an autotune axis with no tuning run.

    With a `moves` request (the default; `Request(noalias=True)` too) each config gets
    `twins` twins marked `twin:1` .. `twin:K`: the first builds of its twin list
    (reorder.triton.twins: stored GPU results for the cubin, then the PTX move menus with the
    SASS moves on top, ranked by the static model), made by the stages hook when Triton
    compiles them; the autotuner times them beside the originals at every key. `twins=0`
    gives the one static `moves` twin of earlier versions. A `search` or `tuned` request
    gives one twin asking for it. A config with num_ctas != 1 gets none (one line says why:
    reorder cannot launch a cluster to byte-check what it would build). Markers name this
    reorder (Request.stamped), so an update never meets a cubin Triton cached for an older one."""
    request = request or Request()
    if request.mode == "moves" and twins > 0:
        asks = [Request("twin", noalias=request.noalias, rank=k) for k in range(1, twins + 1)]
    else:
        asks = [request]
    asks = [a.stamped() for a in asks]
    out = list(configs)
    for config in configs:
        ctas = config_kwargs(config).get("num_ctas", 1) or 1
        if ctas != 1:
            print(
                f"reorder: config {label_of(config_kwargs(config))}: no twin (num_ctas = {ctas}: reorder's "
                "checks cannot launch a cluster)",
                file=sys.stderr,
            )
            continue
        out += [marked_config(config, a) for a in asks]
    return out


def twin_of(config: Any) -> bool:
    """Whether a config is one of reorder's twins (it carries a marker in ptx_options)."""
    return split_options(config_kwargs(config).get("ptx_options"))[0] is not None


def _original_key(config: Any) -> tuple:
    """What a twin shares with its original: every keyword but the marker, and its pre_hook."""
    kwargs = _unmarked(config_kwargs(config))
    return (tuple(sorted((k, repr(v)) for k, v in kwargs.items())), id(getattr(config, "pre_hook", None)))


def pruned(prune_configs_by: Mapping[str, Any]) -> dict[str, Any]:
    """`prune_configs_by` for an autotuner over `with_reorder`'s configs: the user's pruning
    (`early_config_prune`, then `perf_model` with `top_k`) decides among the originals, as it
    would without reorder, and every original it keeps brings its twins. Without this a
    `top_k` counts the twins too, and a perf_model is called with the marker's `ptx_options`.

        triton.autotune(rt.with_reorder(configs), key=[...], prune_configs_by=rt.pruned(prune))
    """
    early = prune_configs_by.get("early_config_prune")
    model = prune_configs_by.get("perf_model")
    top_k = prune_configs_by.get("top_k", 1.0)

    def early_config_prune(configs: list, named_args: dict, **kwargs: Any) -> list:
        originals = [c for c in configs if not twin_of(c)]
        kept = list(early(originals, named_args, **kwargs)) if early else originals
        if model is not None:
            k = int(len(originals) * top_k) if isinstance(top_k, float) and top_k <= 1.0 else top_k
            if not isinstance(k, int):
                raise TypeError("prune_configs_by: top_k must be a float <= 1.0 or an int")
            if len(kept) > k:
                timed = {id(c): model(**named_args, **kwargs, **c.all_kwargs()) for c in kept}
                kept = sorted(kept, key=lambda c: timed[id(c)])[:k]
        keys = {_original_key(c) for c in kept}
        return kept + [c for c in configs if twin_of(c) and _original_key(c) in keys]

    return {"early_config_prune": early_config_prune}


def _unmarked(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(kwargs)
    if "ptx_options" in out:
        _, rest = split_options(out["ptx_options"])
        out["ptx_options"] = rest
        if rest is None:
            del out["ptx_options"]
    return out


def tune(
    kernel: Any,
    *args: Any,
    grid: Grid,
    configs: Sequence[Any] | None = None,
    budget: int = 12,
    seconds: float = 300.0,
    outputs: Sequence[str] = (),
    inits: Mapping[str, Any] | None = None,
    l2: str = "warm",
    noalias: bool = False,
    jobs: int = 1,
    folder: str | Path | None = None,
    arch: int | None = None,
    device: str = "auto",
    ptx: bool = True,
    **kwargs: Any,
) -> TuneResult:
    """Run reorder's search on each config (see the module docstring); `outputs` names the
    output-only buffers (poisoned before each checked run), `inits` overrides how an input
    is drawn, `arch` compiles for that SM without a GPU (the search then runs on the static
    model), `folder` keeps each config's cubins, PTX, launch spec and report. With `ptx`
    (the default) the search spans Triton's PTX too: the PTX move kinds are Optuna
    parameters, each PTX candidate compiled by the config's own ptxas and flags (checked
    first: they must rebuild the config's cubin byte for byte) and checked as `optimize`
    checks every candidate. No `if __name__ == "__main__":` is needed around it: its GPU
    worker never re-runs the calling script (timing.worker)."""
    from reorder.optimize import OptimizeArgs, optimize

    base = Path(folder) if folder is not None else Path(tempfile.mkdtemp(prefix="reorder-tune-"))
    result = TuneResult()
    for config in configs if configs is not None else [{}]:
        call_kwargs = _unmarked({**kwargs, **config_kwargs(config)})
        call = compile_call(kernel, *args, arch=arch, **call_kwargs)
        label = label_of(config_kwargs(config))
        here = base / f"{call.name}-{label}"
        here.mkdir(parents=True, exist_ok=True)
        original, output, launch = here / "original.cubin", here / "reorder.cubin", here / "launch.toml"
        original.write_bytes(call.cubin)
        launch.write_text(spec_toml(launch_spec(call.kernel, call.values, grid, outputs=outputs, inits=inits)))
        source, recipe, ptx_note = _ptx_of(call, here) if ptx else (None, None, "PTX moves not asked for (ptx=False)")
        report = optimize(
            OptimizeArgs(
                cubin=original,
                output=output,
                kernel=call.name,
                launch=launch,
                budget=budget,
                seconds=seconds,
                jobs=jobs,
                storage=None,
                l2=l2,
                device=device,
                noalias=noalias,
                seed=0,
                ptx=source,
                ptx_recipe=recipe,
                started=time.monotonic(),  # `seconds` is this config's: not counted from the process's start
            )
        )
        assert report is not None  # a search in this process, not a helper worker
        winner = output.read_bytes()
        score = report.result
        record = {
            "kernel": call.name,
            "config": label,
            "launch": str(launch),
            "moves": report.best_moves,
            "check": report.check,
            "score": score.line() if score else "none",
            "verifier": report.verifier,
            "ptx": ptx_note,
        }
        key = store_tuned(call.cubin, winner, record)
        result.rows.append(
            TunedConfig(
                label,
                call.name,
                key,
                winner != call.cubin,
                record["score"],
                bool(score and score.measured),
                report.best_moves,
                report.check or "",
                here,
                config,
                marked_config(config, Request("tuned", key=key, noalias=noalias)),
                ptx_note,
            )
        )
    return result


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
