"""`rt.verify`: every build of reorder's the autotuner may pick, proven or named as not proven.

`verify(kernel, *args, grid=...)` takes an `@triton.autotune` kernel (over `@triton.heuristics`
or not) or a plain one called with a marked config's keywords. For an autotuner the builds
are its marked configs that its own pruning keeps at these arguments (`prune_configs_by`
runs as at a launch); each is compiled with and without its marker for these arguments
(reorder.triton.compile: the JIT's binder, the heuristics' values, the specialization of
these very ints), then

- **same binary**: reorder kept the compiler's cubin; nothing can differ;
- else the verifier judges the build against what it was made from (the compiler's cubin
  of the PTX it came from: the config's own, or a PTX move's), and on a GPU both run on
  `sets` fresh input sets with shared memory poisoned (timing.multi_check), outputs
  compared byte for byte: **identical on N sets at grid G**, or **MISMATCH**;
- **not checked: REASON** whenever that could not happen: no GPU, a Python pre_hook or
  post_hook the check cannot replay around its launches, a launch reorder cannot make
  (num_ctas > 1, TMA descriptors), the verifier's refusal.

The autotuner's `reset_to_zero` buffers are cleared before every launch of both builds, its
`restore_value` buffers get their drawn contents back for each (every input is a fresh copy).
`Verification.ok` is True only when every build was the compiler's own or byte-checked
identical on the GPU: "not checked" is never ok.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reorder.base.errors import InputError, ReorderError, SpecError
from reorder.triton.aliasing import user_hook
from reorder.triton.compile import Call, compile_call, config_kwargs, cubin_stage
from reorder.triton.launch import Grid, grid_of, launch_spec
from reorder.triton.request import Request, split_options
from reorder.triton.tune import _unmarked, label_of

SAME = "same binary"
IDENTICAL = "identical"


@dataclass(frozen=True)
class Verified:
    """One build: its config, the marker that made it, and what was proven."""

    label: str
    kernel: str
    request: str  # the marker, e.g. 'twin:2'
    same_binary: bool
    legal: bool
    verifier: str
    check: str  # 'identical' | 'same binary' | 'MISMATCH' | 'not checked: REASON' | a worker's failure
    detail: str
    chosen: bool = False  # the autotuner's pick at its last key

    @property
    def ok(self) -> bool:
        return self.legal and self.check in (IDENTICAL, SAME)

    def line(self) -> str:
        mark = " (chosen)" if self.chosen else ""
        return f"{self.label} {self.request}{mark}: {self.check}" + (f" ({self.detail})" if self.detail else "")


class Verification(tuple):
    """Every build checked (a tuple of Verified), and what the autotuner chose."""

    chosen: str = ""
    confirmations: tuple[str, ...] = ()  # the autotuner's verdicts on twins (reorder.triton.confirm)

    @property
    def ok(self) -> bool:
        """Every build the autotuner may pick is the compiler's or was byte-checked identical."""
        return bool(self) and all(v.ok for v in self)

    def table(self) -> str:
        lines = [v.line() for v in self]
        lines += [f"confirmed against its config: {line}" for line in self.confirmations]
        lines.append(f"autotuner's pick: {self.chosen}" if self.chosen else "autotuner's pick: none yet")
        lines.append("ok: every build is the compiler's or identical on the GPU" if self.ok else "NOT ok")
        return "\n".join(lines)


def _request_of(config: Mapping[str, Any]) -> Request | None:
    return split_options(config.get("ptx_options"))[0]


def _autotuner_builds(kernel: Any, args: tuple, kwargs: Mapping[str, Any]) -> tuple[list[tuple[dict, Any]], str]:
    """(the marked configs the autotuner's pruning keeps at these arguments, each with its
    pre_hook, its pick)."""
    nargs = dict(zip(kernel.arg_names, args))
    saved = getattr(kernel, "nargs", None)
    kernel.nargs = nargs
    try:
        kept = kernel.prune_configs(dict(kwargs))
    finally:
        kernel.nargs = saved
    best = getattr(kernel, "best_config", None)
    chosen = ""
    if best is not None:
        request = _request_of(config_kwargs(best))
        chosen = label_of(config_kwargs(best)) + (f" {_marker(request)}" if request else " (Triton's own build)")
    marked = [
        (config_kwargs(c), getattr(c, "pre_hook", None)) for c in kept if _request_of(config_kwargs(c)) is not None
    ]
    if not marked:
        raise InputError(
            "nothing to verify: no config of this autotuner carries a reorder marker (give it rt.with_reorder(configs))"
        )
    return marked, chosen


def _run_pre_hook(kernel: Any, args: tuple, marked: Mapping[str, Any], pre_hook: Any) -> None:
    """The config's pre_hook, called as the autotuner calls it before the config's launches:
    a hook may shape the arguments the compile specializes on (a host TMA descriptor's
    block_shape is set per config), so the build compiled here is the one the autotuner runs."""
    if pre_hook is None:
        return
    names: tuple[str, ...] = tuple(getattr(kernel, "arg_names", ()) or getattr(kernel.fn, "arg_names", ()))
    try:
        pre_hook({**dict(zip(names, args)), **marked})
    except ReorderError:
        raise
    except Exception as exc:  # the user's code: one line naming it
        raise InputError(f"{label_of(marked)}: the config's pre_hook failed: {type(exc).__name__}: {exc}") from exc


def _marker(request: Request | None) -> str:
    if request is None:
        return "none"
    return {"twin": f"twin:{request.rank}", "tuned": f"tuned:{request.key}", "search": f"search:{request.budget}"}.get(
        request.mode, request.mode
    )


def _unreplayable(kernel: Any, config: Mapping[str, Any], best: Any) -> str:
    """Why the GPU check cannot stand for the autotuner's launches, '' when it can."""
    if getattr(kernel, "user_defined_pre_hook", False) or getattr(kernel, "user_defined_post_hook", False):
        return "the autotuner has a pre_hook or post_hook (Python around each launch, which the check cannot replay)"
    for c in getattr(kernel, "configs", ()) or ():
        if user_hook(getattr(c, "pre_hook", None)) is not None and config_kwargs(c) == dict(config):
            return "the config has a pre_hook (Python before each launch, which the check cannot replay)"
    return ""


def _hooked():
    """The stages hook, installed for the duration when it is not (the builds are made by it;
    with the ptxas stand-in in TRITON_PTXAS_PATH instead, nothing is installed)."""
    import contextlib
    import os

    from reorder.triton.hook import install, installed, uninstall

    @contextlib.contextmanager
    def scope():
        added = not installed() and not os.environ.get("TRITON_PTXAS_PATH")
        if added:
            install(say=None)
        try:
            yield
        finally:
            if added:
                uninstall()

    return scope()


def verify(
    kernel: Any,
    *args: Any,
    grid: Grid,
    outputs: Sequence[str] = (),
    inits: Mapping[str, Any] | None = None,
    sets: int = 3,
    arch: int | None = None,
    pool: Any = None,
    **kwargs: Any,
) -> Verification:
    """Prove every build of reorder's the autotuner may pick at these arguments (see the
    module docstring); `outputs` names output-only buffers (poisoned before each run);
    `pool` is a timing.worker.WorkerPool to check in (default: a fresh worker per call)."""
    if not (hasattr(kernel, "prune_configs") or hasattr(kernel, "arg_names") or hasattr(kernel, "fn")):
        raise InputError(f"rt.verify: {kernel!r} is not a Triton kernel (an @triton.jit or @triton.autotune function)")
    if isinstance(sets, bool) or not isinstance(sets, int) or sets < 1:
        raise InputError(f"rt.verify: sets={sets!r}: expected an int of at least 1")
    if not callable(grid):
        try:
            grid_of(grid, {})
        except SpecError as exc:
            raise InputError(f"rt.verify: {exc}") from exc
    with _hooked():
        return _verify(kernel, args, grid, outputs, inits, sets, arch, kwargs, pool)


def _verify(kernel, args, grid, outputs, inits, sets, arch, kwargs, pool) -> Verification:
    autotuner = hasattr(kernel, "prune_configs") and hasattr(kernel, "configs")
    if autotuner:
        configs, chosen = _autotuner_builds(kernel, args, kwargs)
    else:
        if _request_of(kwargs) is None:
            raise InputError("nothing to verify: the config carries no reorder marker in ptx_options")
        configs, chosen = [({}, None)], ""
    best = config_kwargs(kernel.best_config) if autotuner and getattr(kernel, "best_config", None) else None
    zeros = tuple(getattr(kernel, "reset_to_zero", ()) or ())
    rows, pending = [], []
    for config, pre_hook in configs:
        marked = {**kwargs, **config}
        _run_pre_hook(kernel, args, marked, pre_hook)
        request = _request_of(marked)
        label = label_of(config)
        chosen_here = best is not None and config == best
        built = compile_call(kernel, *args, arch=arch, **marked)
        plain = compile_call(kernel, *args, arch=arch, **_unmarked(marked))
        row: dict[str, Any] = {"label": label, "kernel": plain.name, "request": _marker(request), "chosen": chosen_here}
        if built.cubin == plain.cubin:
            rows.append(
                Verified(
                    **row,
                    same_binary=True,
                    legal=True,
                    verifier=SAME,
                    check=SAME,
                    detail="reorder kept the compiler's cubin",
                )
            )
            continue
        legal, verdict = static_verdict(plain, built.cubin, request)
        why = "" if legal else "the verifier rejects it"
        why = why or _unreplayable(kernel, config, best)
        spec = None
        if not why:
            try:
                spec = launch_spec(plain.kernel, plain.values, grid, outputs=outputs, inits=inits, zeros=zeros)
            except ReorderError as exc:
                why = str(exc).splitlines()[0]
        if why:
            rows.append(
                Verified(
                    **row, same_binary=False, legal=legal, verifier=verdict, check=f"not checked: {why}", detail=""
                )
            )
            continue
        rows.append(Verified(**row, same_binary=False, legal=legal, verifier=verdict, check="", detail=""))
        pending.append((len(rows) - 1, plain, built, spec))
    rows = _checked(rows, pending, sets, pool)
    out = Verification(rows)
    out.chosen = chosen
    out.confirmations = tuple(c.line() for c in getattr(kernel, "reorder_confirmations", ()))
    return out


def _checked(rows: list[Verified], pending: list, sets: int, pool: Any = None) -> list[Verified]:
    """The GPU's verdict on every build waiting for one (one worker job for all of them)."""
    if not pending:
        return rows
    from timing.cli_support import gpu_unavailable_reason, run_one
    from timing.evaluate import describe_status
    from timing.multi import Build
    from timing.worker import Job

    waiting = [p[0] for p in pending]
    reason = gpu_unavailable_reason()
    if reason:
        return _mark(rows, waiting, f"not checked: no GPU ({reason})")
    with tempfile.TemporaryDirectory(prefix="reorder-verify-") as tmp:
        groups: dict[bytes, tuple[Build, list[Build]]] = {}  # one per plain build: its inputs drawn once per set
        where = {}
        for index, plain, built, spec in pending:
            a, b = Path(tmp) / f"{index}-plain.cubin", Path(tmp) / f"{index}-reorder.cubin"
            b.write_bytes(built.cubin)
            if plain.cubin not in groups:
                a.write_bytes(plain.cubin)
                groups[plain.cubin] = (Build(f"{index}/plain", str(a), spec), [])
            groups[plain.cubin][1].append(Build(f"{index}/reorder", str(b), spec))
            where[f"{index}/reorder"] = (index, spec)
        job = Job.of(check_job, list(groups.values()), sets=sets, timeout_s=120 + 4 * sets * len(pending))
        result = pool.run(job) if pool is not None else run_one(job)
    if result.status != "ok":
        row = describe_status(result)
        return _mark(rows, waiting, f"not checked: {row['status']}: {row['reason']}")
    for label, verdict in result.value.items():
        index, spec = where[label]
        detail = verdict.get("detail", "")
        if verdict.get("check") == IDENTICAL:
            detail = (
                f"identical on {sets} fresh input set(s) at grid {tuple(spec.grid)}, block {spec.block[0]}, "
                "shared memory poisoned"
            )
        rows[index] = _with(rows[index], verdict.get("check", "?"), detail)
    return rows


def _mark(rows: list[Verified], indices: Sequence[int], check: str) -> list[Verified]:
    return [_with(r, check, "") if k in indices else r for k, r in enumerate(rows)]


def _with(row: Verified, check: str, detail: str) -> Verified:
    from dataclasses import replace

    return replace(row, check=check, detail=detail)


def check_job(groups, sets: int = 3) -> dict[str, dict]:
    """Worker job: every build of each (plain, [reorder]) group against its plain build."""
    from timing.multi_check import check_builds

    out: dict[str, dict] = {}
    for original, candidates in groups:
        out.update(check_builds(original, candidates, sets=sets))
    return out


def static_verdict(plain: Call, candidate: bytes, request: Request | None) -> tuple[bool, str]:
    """The verifier's judgment of `candidate` (_judged), kept in reorder's cache: it depends
    only on the two builds, the request and reorder's sources, and an autotuner's twins are
    judged again at every shape that compiles to the same cubins."""
    from reorder.base.diskcache import cached_json, key_of
    from reorder.triton.digest import code_digest

    asked = Request(request.mode, request.budget, request.key, request.noalias, "", request.rank) if request else None
    key = key_of(plain.cubin, candidate, asked.token() if asked else "", code_digest())
    legal, verdict = cached_json("triton-verdicts", key, lambda: list(_judged(plain, candidate, request)))
    return bool(legal), str(verdict)


def _judged(plain: Call, candidate: bytes, request: Request | None) -> tuple[bool, str]:
    """The candidate judged against what it was made from: for a twin, the compiler's cubin
    its SASS moves started from (the config's own, or a PTX move's, itself judged as a
    compiler's cubin is); for the hook's `moves` path, the wgmma step's compile when it
    applies; for a tuned binary, the plain cubin when the search left ptxas's build alone
    (same instructions), else the binary as a compiler's cubin (the search verified its
    SASS moves on the PTX build it made)."""
    from legality.verify import verify_kernel
    from reorder.binary.cubin import parse_cubin
    from reorder.sass.model import decode_kernel
    from reorder.triton.rewrite import async_wgmma

    def code(data: bytes, what: str):
        return decode_kernel(parse_cubin(data, what))

    arch = plain.kernel.metadata.target.arch

    def stage(text: str) -> bytes:
        return cubin_stage(text, _unmarked(plain.options), arch)

    reference: bytes | None = plain.cubin
    if request is not None and request.mode == "moves":
        made = async_wgmma(plain.kernel.asm["ptx"], stage)
        reference = made[0] if made is not None else plain.cubin
    elif request is not None and request.mode == "twin":
        reference = _twin_base(plain, candidate, request, stage)
    after = code(candidate, "reorder's build")
    if reference is None or (request is not None and request.mode == "tuned" and not _same_code(plain.cubin, after)):
        verdict = verify_kernel(after, original=after.instructions)
        return verdict.ok, f"as a compiler's cubin: {verdict.verdict()}"
    base = code(reference, "the build it came from")
    if reference != plain.cubin:
        own = verify_kernel(base, original=base.instructions)
        if not own.ok:
            return False, f"the PTX move's build: {own.verdict()}"
    if reference == candidate:
        return True, "a PTX move's build, verified as a compiler's cubin"
    verdict = verify_kernel(after, original=base.instructions)
    return verdict.ok, verdict.verdict()


def _same_code(cubin: bytes, after) -> bool:
    from reorder.binary.cubin import parse_cubin
    from reorder.sass.model import decode_kernel

    before = decode_kernel(parse_cubin(cubin, "unoptimized build"))
    return sorted(i.text for i in before.instructions) == sorted(i.text for i in after.instructions)


def _twin_base(plain: Call, candidate: bytes, request: Request, stage) -> bytes | None:
    """What a twin is judged against: None for a stored GPU result (judged as a compiler's
    cubin), else its own bytes (a PTX move's build, judged as a compiler's cubin is)."""
    from reorder.triton.twins import ranked

    for build in ranked(plain.cubin, plain.kernel.asm["ptx"], stage, request.noalias, upto=request.rank):
        if build.data == candidate:
            return None if build.measured else build.data
    raise InputError(f"{plain.name}: twin {request.rank} is not in this config's twin list (was reorder updated?)")
