"""`tune` and `verify`: reorder's search on Triton configs, launched from live arguments.

`tune(kernel, *args, grid=..., configs=[...], budget=N)` compiles each config for the live
arguments (reorder.triton.compile), builds its launch from the kernel's metadata
(reorder.triton.launch), and runs `reorder optimize` on it: on a GPU every candidate is
byte-checked on fresh inputs and timed against the config's own cubin with paired timing; on
a machine without one the same search runs on the static model (and the launch is still
checked against the cubin's parameters). Each winner is stored by content
(reorder.triton.rewrite.store_tuned), and `tune` returns the configs with a marked copy of
each (`ptx_options="--reorder=tuned:KEY"`): give those to `@triton.autotune` and, with
`reorder.triton.install()` (or the ptxas stand-in), reorder is one more autotune axis, timed
by the autotuner's own do_bench next to the originals.

`verify(kernel, *args, grid=...)` rebuilds the marked configs (the autotuner's chosen one when
there is one) with and without reorder and proves them the same program: the verifier
against the compiler's schedule, then (on a GPU) byte equality on fresh inputs. The
autotuner itself never compares outputs.
"""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reorder.base.errors import InputError
from reorder.triton.compile import Call, compile_call, config_kwargs, cubin_stage
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


@dataclass
class TuneResult:
    rows: list[TunedConfig] = field(default_factory=list)

    @property
    def configs(self) -> list[Any]:
        """Every original config, then each one's reorder twin: the autotune axis."""
        return [r.config for r in self.rows] + [r.marked for r in self.rows]

    def table(self) -> str:
        lines = ["config | reorder | moves | check"]
        lines += [f"{r.label} | {r.score} | {r.moves} | {r.check}" for r in self.rows]
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


def with_reorder(configs: Sequence[Any], request: Request | None = None) -> list[Any]:
    """`configs` and a marked twin of each: reorder as an autotune axis with no tuning run
    (static `moves` unless another request is given). The marker names this reorder
    (Request.stamped), so an update never meets a cubin Triton cached for an older one."""
    request = (request or Request()).stamped()
    return list(configs) + [marked_config(c, request) for c in configs]


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
    **kwargs: Any,
) -> TuneResult:
    """Run reorder's search on each config (see the module docstring); `outputs` names the
    output-only buffers (poisoned before each checked run), `inits` overrides how an input
    is drawn, `arch` compiles for that SM without a GPU (the search then runs on the static
    model), `folder` keeps each config's cubins, launch spec and report."""
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
            )
        )
        assert report is not None  # a search in this process, not a helper worker
        winner = output.read_bytes()
        score = report.result
        record = {
            "kernel": call.name,
            "config": label,
            "moves": report.best_moves,
            "check": report.check,
            "score": score.line() if score else "none",
            "verifier": report.verifier,
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
            )
        )
    return result


# ---------------------------------------------------------------- verify


@dataclass(frozen=True)
class Verified:
    """One marked config rebuilt with and without reorder, compared."""

    label: str
    kernel: str
    same_binary: bool
    legal: bool
    verifier: str
    check: str  # 'identical', 'MISMATCH', 'not run: ...' or the worker's failure
    detail: str

    @property
    def ok(self) -> bool:
        return self.legal and (self.same_binary or self.check in ("identical",) or self.check.startswith("not run"))


def _configs_to_verify(kernel: Any) -> tuple[list[Mapping[str, Any]], bool]:
    """(configs, chosen by an autotuner): its best config once it has chosen, else every
    marked config it has, else the call's own keywords."""
    best = getattr(kernel, "best_config", None)
    if best is not None:
        return [config_kwargs(best)], True
    marked: list[Mapping[str, Any]] = [
        config_kwargs(c)
        for c in getattr(kernel, "configs", ()) or ()
        if split_options(config_kwargs(c).get("ptx_options"))[0] is not None
    ]
    return (marked or [{}]), False


def _static_verdict(plain: Call, candidate: bytes, request: Request | None) -> tuple[bool, str]:
    """The candidate judged against what it was made from: the plain cubin, or, for the
    hook's `moves` path when its wgmma PTX step applies, that step's own compile (the same
    PTX move, the same cubin stage): the SASS moves ran on that cubin, a compiler's cubin."""
    from legality.verify import verify_kernel
    from reorder.binary.cubin import parse_cubin
    from reorder.sass.model import decode_kernel
    from reorder.triton.rewrite import async_wgmma

    reference = plain.cubin
    if request is not None and request.mode == "moves":
        arch = plain.kernel.metadata.target.arch
        made = async_wgmma(plain.kernel.asm["ptx"], lambda text: cubin_stage(text, _unmarked(plain.options), arch))
        reference = made[0] if made is not None else plain.cubin
    before = decode_kernel(parse_cubin(reference, "unoptimized build"))
    after = decode_kernel(parse_cubin(candidate, "reorder's build"))
    verdict = verify_kernel(after, original=before.instructions)
    return verdict.ok, verdict.verdict()


def _gpu_check(original: Call, candidate: Call, grid: Grid, outputs, inits, sets: int) -> tuple[str, str]:
    from timing.cli_support import gpu_unavailable_reason, run_one
    from timing.evaluate import check_job, describe_status
    from timing.worker import Job

    reason = gpu_unavailable_reason()
    if reason:
        return f"not run: no GPU ({reason})", ""
    spec = launch_spec(original.kernel, original.values, grid, outputs=outputs, inits=inits)
    with tempfile.TemporaryDirectory(prefix="reorder-verify-") as tmp:
        a, b = Path(tmp) / "original.cubin", Path(tmp) / "reorder.cubin"
        a.write_bytes(original.cubin)
        b.write_bytes(candidate.cubin)
        row = describe_status(run_one(Job.of(check_job, str(a), str(b), spec, sets=sets, timeout_s=120 + 4 * sets)))
    if row["status"] != "ok":
        return f"{row['status']}: {row['reason']}", ""
    return row.get("check", "?"), row.get("check_detail", "")


def verify(
    kernel: Any,
    *args: Any,
    grid: Grid,
    outputs: Sequence[str] = (),
    inits: Mapping[str, Any] | None = None,
    sets: int = 3,
    arch: int | None = None,
    **kwargs: Any,
) -> list[Verified]:
    """Rebuild each marked config (the autotuner's best when it has chosen) with and without
    reorder and compare: verifier, then byte equality on `sets` fresh input sets on a GPU."""
    out = []
    configs, chosen = _configs_to_verify(kernel)
    for config in configs:
        marked = {**kwargs, **config}
        if split_options(marked.get("ptx_options"))[0] is None:
            if not chosen:
                raise InputError("nothing to verify: the config carries no reorder marker in ptx_options")
            out.append(
                Verified(
                    label_of(config),
                    "",
                    True,
                    True,
                    "not asked",
                    "identical",
                    "the autotuner chose a config without reorder: its own cubin runs",
                )
            )
            continue
        with_reorder_call = compile_call(kernel, *args, arch=arch, **marked)
        plain = compile_call(kernel, *args, arch=arch, **_unmarked(marked))
        label = label_of(config)
        if with_reorder_call.cubin == plain.cubin:
            out.append(Verified(label, plain.name, True, True, "same binary", "identical", "reorder kept the cubin"))
            continue
        legal, verdict = _static_verdict(plain, with_reorder_call.cubin, split_options(marked.get("ptx_options"))[0])
        check, detail = (
            _gpu_check(plain, with_reorder_call, grid, outputs, inits, sets)
            if legal
            else ("not run: the verifier rejects it", "")
        )
        out.append(Verified(label, plain.name, False, legal, verdict, check, detail))
    return out
