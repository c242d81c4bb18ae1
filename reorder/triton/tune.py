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
Over several key values (`key=[...]`, `launches=[(args, grid), ...]`) each config gets one
multi-shape search over them and, when its per-shape groups are a real gain, one stored
binary per group of key values and a manifest keyed by them (reorder.triton.keys).

`with_reorder(configs)` adds each config's twins (reorder.triton.twins), made when Triton
compiles them through the stages hook and timed by the autotuner's own do_bench next to the
originals. `reorder.triton.verify` proves what the autotuner may pick: the autotuner itself
never compares outputs.
"""

from __future__ import annotations

import copy
import json
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from reorder.base.errors import InputError
from reorder.triton import keys
from reorder.triton.aliasing import guarded, user_hook
from reorder.triton.compile import Call, compile_call, config_kwargs
from reorder.triton.launch import Grid, launch_spec, spec_toml
from reorder.triton.request import MAX_TWINS, Request, split_options, with_marker
from reorder.triton.rewrite import store_tuned, tuned_binary
from reorder.triton.runs import Found, Search, run_search


@dataclass(frozen=True)
class TunedConfig:
    """What tune found for one config."""

    label: str
    kernel: str
    key: str  # the stored winner (tuned:KEY): over several key values, the one binary for all of them
    changed: bool  # the winner differs from the config's own cubin
    score: str  # ratio and CI, measured or predicted
    measured: bool
    moves: str
    check: str
    folder: Path
    config: Any
    marked: Any
    ptx: str = ""  # whether the search spanned Triton's PTX, and compiled how
    groups: tuple[keys.KeyGroup, ...] = ()  # over several key values: the binary of each group of them
    manifest: Path | None = None  # keys.json, the dispatch over the key values (reorder.triton.keys)

    @property
    def twins(self) -> list[Any]:
        """This config's marked copies: one per distinct binary of its key groups, else one."""
        if not self.groups:
            return [self.marked]
        seen: dict[str, Any] = {}
        for g in self.groups:
            seen.setdefault(g.tuned, g.marked)
        return list(seen.values())


@dataclass
class TuneResult:
    rows: list[TunedConfig] = field(default_factory=list)

    @property
    def configs(self) -> list[Any]:
        """Every original config, then each one's reorder twins: the autotune axis."""
        return [r.config for r in self.rows] + [t for r in self.rows for t in r.twins]

    def table(self) -> str:
        lines = ["config | reorder | moves | check | PTX"]
        for r in self.rows:
            lines.append(f"{r.label} | {r.score} | {r.moves} | {r.check} | {r.ptx}")
            if len(r.twins) > 1:
                for g in r.groups:
                    shown = ", ".join("/".join(f"{v:g}" for v in row) for row in g.values)
                    lines.append(f"  key {shown} | {', '.join(g.ratios)} | {g.moves} | tuned:{g.tuned} |")
        return "\n".join(lines)

    def dispatch(self) -> dict[str, Any]:
        """`prune_configs_by` for `triton.autotune(self.configs, key=...)`: at each launch every
        original config stays, and of each config's twins only the one whose key group holds
        the launch's key values (reorder.triton.keys: the range rule, else the nearest measured
        value); a launch whose key values are not numbers keeps the originals alone. A config
        tuned at one key value keeps its one twin. The autotuner's own do_bench then decides
        between each config and its twin, as with `with_reorder`."""
        docs = [(r, json.loads(r.manifest.read_text()) if r.manifest else None) for r in self.rows]

        def early_config_prune(configs: list, named_args: dict, **kwargs: Any) -> list:
            chosen: set[tuple[tuple, Any]] = set()
            for row, doc in docs:
                if doc is None:  # tuned at one key value: its one twin everywhere
                    chosen |= {(original_key(t), _options(t)) for t in row.twins}
                    continue
                values = keys.read_values(doc, named_args)
                if values is None:
                    continue
                tuned = keys.group_of(doc, values)["tuned"]
                chosen |= {(original_key(g.marked), _options(g.marked)) for g in row.groups if g.tuned == tuned}
            return [c for c in configs if not twin_of(c) or (original_key(c), _options(c)) in chosen]

        return {"early_config_prune": early_config_prune}


def _options(config: Any) -> Any:
    return config_kwargs(config).get("ptx_options")


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
    if request.noalias:  # the promise is checked at every launch of the twin (reorder.triton.aliasing)
        twin.pre_hook = guarded(user_hook(getattr(config, "pre_hook", None)))
    return twin


TWINS = 3  # twins per config (reorder.triton.twins: why a few, and why this many)


def with_reorder(configs: Sequence[Any], request: Request | None = None, twins: int = TWINS) -> list[Any]:
    """`configs`, then reorder's twins of each: reorder as an autotune axis with no tuning run.

    With a `moves` request (the default; `Request(noalias=True)` too) each config gets
    `twins` twins marked `twin:1` .. `twin:K`: the first builds of its twin list
    (reorder.triton.twins: stored GPU results for the cubin, then the PTX move menus in a
    measured order), made by the stages hook when Triton compiles them; the autotuner times
    them beside the originals at every key. `twins=0` gives one `moves` twin instead (the
    wgmma step, then the SASS moves, each verified). A `search` or `tuned` request
    gives one twin asking for it. A config with num_ctas != 1 gets none (one line says why:
    reorder cannot launch a cluster to byte-check what it would build). Markers name this
    reorder (Request.stamped), so an update never meets a cubin Triton cached for an older one."""
    configs = _axis(configs)
    if request is not None and not isinstance(request, Request):
        raise InputError(f"rt.with_reorder: request {request!r}: expected an rt.Request (or None)")
    if isinstance(twins, bool) or not isinstance(twins, int) or not 0 <= twins <= MAX_TWINS:
        raise InputError(f"rt.with_reorder: twins={twins!r}: expected an int from 0 to {MAX_TWINS}")
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


def _axis(configs: Any) -> list[Any]:
    """The user's configs as a list (a generator is read once), each a triton.Config or a dict
    of its keywords; InputError (one line) otherwise."""
    if configs is None or isinstance(configs, (str, bytes, Mapping)) or not isinstance(configs, Iterable):
        raise InputError(f"rt.with_reorder: configs: expected a list of triton.Config, got {type(configs).__name__}")
    out = list(configs)
    for k, config in enumerate(out):
        if not (isinstance(config, Mapping) or hasattr(config, "all_kwargs")):
            raise InputError(f"rt.with_reorder: config {k} is a {type(config).__name__}, not a triton.Config")
    return out


def twin_of(config: Any) -> bool:
    """Whether a config is one of reorder's twins (it carries a marker in ptx_options)."""
    return split_options(config_kwargs(config).get("ptx_options"))[0] is not None


def original_key(config: Any) -> tuple:
    """What a twin shares with its original: every keyword but the marker, and its pre_hook."""
    kwargs = _unmarked(config_kwargs(config))
    return (tuple(sorted((k, repr(v)) for k, v in kwargs.items())), id(user_hook(getattr(config, "pre_hook", None))))


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
        keys = {original_key(c) for c in kept}
        return kept + [c for c in configs if twin_of(c) and original_key(c) in keys]

    return {"early_config_prune": early_config_prune}


def original_of(twin: Any) -> Any:
    """The config a twin was made from (marked_config undone): its keywords without the
    marker, the user's own pre_hook."""
    config = copy.copy(twin)
    config.kwargs = _unmarked(twin.kwargs)
    config.pre_hook = user_hook(getattr(twin, "pre_hook", None))
    return config


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
    grid: Grid | None = None,
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
    key: Sequence[str] = (),
    launches: Sequence[tuple[Sequence[Any], Grid]] = (),
    weights: Sequence[float] = (),
    per_shape: bool = True,
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
    worker never re-runs the calling script (timing.worker).

    Several key values: `launches=[(args, grid), ...]` and `key=[...]` (the autotune key's
    argument names) instead of `*args, grid=`: each argument set is one launch shape of one
    multi-shape search per config (`weights`, one per launch: how often each runs), and with
    `per_shape` the per-shape groups, when they are a real gain, become one stored binary per
    group of key values and a manifest keyed by them (reorder.triton.keys); install it with
    `triton.autotune(result.configs, key=[...], prune_configs_by=result.dispatch())`."""
    _check_search(budget, seconds, l2, jobs, noalias)
    if launches:
        if args or grid is not None:
            raise InputError("give either *args with grid= (one key value) or launches=[(args, grid), ...], not both")
        if weights and len(weights) != len(launches):
            raise InputError(f"weights: {len(weights)} given for {len(launches)} launches (one per launch)")
        for k, pair in enumerate(launches):
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and isinstance(pair[0], (tuple, list))):
                raise InputError(f"launches[{k}]: {type(pair).__name__}: each launch is a pair (args tuple, grid)")
        if any(not (isinstance(w, (int, float)) and w > 0) for w in weights):
            raise InputError(f"weights: {list(weights)}: each must be a positive number")
    elif grid is None:
        raise InputError("tune needs grid= (or launches=[(args, grid), ...] for several key values)")
    elif key:
        raise InputError("key= names the key of launches=[...]: one argument set needs no dispatch")
    base = Path(folder) if folder is not None else Path(tempfile.mkdtemp(prefix="reorder-tune-"))
    result = TuneResult()
    search = Search(budget, seconds, outputs, inits, l2, noalias, jobs, device, ptx, arch)
    for config in configs if configs is not None else [{}]:
        call_kwargs = _unmarked({**kwargs, **config_kwargs(config)})
        if launches:
            result.rows.append(_tune_keys(kernel, config, call_kwargs, launches, key, weights, per_shape, base, search))
            continue
        assert grid is not None  # refused above otherwise
        call = compile_call(kernel, *args, arch=arch, **call_kwargs)
        label = label_of(config_kwargs(config))
        here = base / f"{call.name}-{label}"
        here.mkdir(parents=True, exist_ok=True)
        launch = here / "launch.toml"
        launch.write_text(spec_toml(launch_spec(call.kernel, call.values, grid, outputs=outputs, inits=inits)))
        found = run_search(call, label, here, (launch,), (), False, search)
        result.rows.append(_row(label, call, config, found, search.noalias))
    return result


def _check_search(budget: Any, seconds: Any, l2: Any, jobs: Any, noalias: Any) -> None:
    """rt.tune's search settings, each refused in one line when it cannot be used."""
    for name, value in (("budget", budget), ("jobs", jobs)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"rt.tune: {name}={value!r}: expected an int of at least 1")
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds < float("inf"):
        raise InputError(f"rt.tune: seconds={seconds!r}: expected a positive number")
    if l2 not in ("warm", "cold"):
        raise InputError(f"rt.tune: l2={l2!r}: expected 'warm' or 'cold'")
    if not isinstance(noalias, bool):
        raise InputError(f"rt.tune: noalias={noalias!r}: expected True or False")


def _row(label: str, call: Call, config: Any, found: Found, noalias: bool, **more: Any) -> TunedConfig:
    r = found.record
    return TunedConfig(
        label,
        call.name,
        found.key,
        found.winner != call.cubin,
        r["score"],
        found.measured,
        r["moves"],
        r["check"] or "",
        found.folder.parent,
        config,
        marked_config(config, Request("tuned", key=found.key, noalias=noalias)),
        r["ptx"],
        **more,
    )


def _tune_keys(
    kernel: Any,
    config: Any,
    call_kwargs: Mapping[str, Any],
    launches: Sequence[tuple[Sequence[Any], Grid]],
    names: Sequence[str],
    weights: Sequence[float],
    per_shape: bool,
    base: Path,
    s: Search,
) -> TunedConfig:
    """One config over several key values: one multi-shape search per cubin the key values
    compile to (Triton specializes ints equal to 1 and 16-divisibility: each specialization is
    its own cubin, so its own search), its per-shape groups (when a real gain) stored as one
    binary each, and the manifest over the key values (reorder.triton.keys)."""
    calls = [compile_call(kernel, *a, arch=s.arch, **call_kwargs) for a, _ in launches]
    rows = [keys.key_values(names, c.values, f"launch {k + 1}") for k, c in enumerate(calls)]
    keys.check_keys(names, rows)
    label = label_of(config_kwargs(config))
    here = base / f"{calls[0].name}-{label}"
    by_cubin: dict[bytes, list[int]] = {}
    for k, c in enumerate(calls):
        by_cubin.setdefault(c.cubin, []).append(k)
    groups: list[keys.KeyGroup] = []
    notes: list[str] = []
    blobs: dict[str, bytes] = {}
    first: Found | None = None
    for j, members in enumerate(by_cubin.values()):
        folder = here / f"cubin{j}" if len(by_cubin) > 1 else here
        folder.mkdir(parents=True, exist_ok=True)
        paths = []
        for k in members:
            path = folder / f"{keys.label_of_key(names, rows[k])}.toml"
            spec = launch_spec(calls[k].kernel, calls[k].values, launches[k][1], outputs=s.outputs, inits=s.inits)
            path.write_text(spec_toml(spec))
            paths.append(path)
        found = run_search(
            calls[members[0]],
            label,
            folder,
            tuple(paths),
            [weights[k] for k in members] if weights else (),
            per_shape,
            s,
        )
        first = first or found
        made, note = _key_groups(
            calls[members[0]], found, names, [rows[k] for k in members], len(blobs), s.noalias, config
        )
        notes.append(note)
        for g in made:
            blobs[g.cubin] = tuned_binary(calls[members[0]].cubin, g.tuned) or found.winner
        groups += made
    assert first is not None
    doc = keys.manifest(calls[0].name, names, groups, "; ".join(notes))
    where = keys.write_manifest(here / "dispatch", doc, blobs)
    row = _row(label, calls[0], config, first, s.noalias, groups=tuple(groups), manifest=where)
    return replace(row, folder=here)  # the config's folder: its searches are in it (one per cubin)


def _key_groups(
    call: Call,
    found: Found,
    names: Sequence[str],
    rows: list[tuple[float, ...]],
    taken: int,
    noalias: bool,
    config: Any,
) -> tuple[list[keys.KeyGroup], str]:
    """The key groups of one multi-shape run: optimize's per-shape groups when it wrote them
    as a real gain (each group's cubin stored by content), else one group, the written binary."""
    stem = call.name.replace("/", "_")[:80]
    labels = {keys.label_of_key(names, r): r for r in rows}
    path = found.folder / "dispatch" / "manifest.json"
    doc = json.loads(path.read_text()) if path.is_file() else None
    if len(rows) == 1:
        note = "one key value: one binary"
    elif doc is None:
        note = "one binary for every key value: " + (
            "per-shape groups were not asked for (per_shape=False)"
            if found.measured
            else "the static model does not depend on the launch (per-shape groups need a GPU)"
        )
    else:
        note = doc["note"]
    if doc is None or not doc["gain"]:
        single = _ratios(doc, labels) if doc else ("not measured" if not found.measured else "",) * len(rows)
        name = f"{stem}.{taken}.cubin"
        marked = marked_config(config, Request("tuned", key=found.key, noalias=noalias))
        return [keys.KeyGroup(tuple(rows), found.key, marked, found.record["moves"], name, tuple(single))], note
    out: list[keys.KeyGroup] = []
    for g in doc["groups"]:
        data = (path.parent / g["cubin"]).read_bytes()
        measured = [s["launch"] for s in g["shapes"]]
        tuned = store_tuned(call.cubin, data, {**found.record, "moves": g["moves"], "shapes": measured})
        ratios = tuple(f"{s['ratio'][0]:.4f} [{s['ratio'][1]:.4f}, {s['ratio'][2]:.4f}]" for s in g["shapes"])
        marked = marked_config(config, Request("tuned", key=tuned, noalias=noalias))
        name = f"{stem}.{taken + len(out)}.cubin"
        out.append(keys.KeyGroup(tuple(labels[m] for m in measured), tuned, marked, g["moves"], name, ratios))
    return out, note


def _ratios(doc: dict, labels: Mapping[str, tuple[float, ...]]) -> tuple[str, ...]:
    """Each key value's measured ratio in a one-group manifest, in `labels` order."""
    shown = {s["launch"]: s["ratio"] for g in doc["groups"] for s in g["shapes"]}
    return tuple(f"{shown[m][0]:.4f} [{shown[m][1]:.4f}, {shown[m][2]:.4f}]" if m in shown else "" for m in labels)
