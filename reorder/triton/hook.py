"""reorder as one more stage of Triton's NVIDIA pipeline (Triton 3.6+), for marked configs.

`install()` puts a stages inspection hook in `triton.knobs.runtime` (one slot: a hook
already there is kept and called, so both apply). Triton calls it at the end of the NVIDIA
backend's `add_stages(stages, options, language, capability)`, as
`hook(backend, stages, options, language, capability)` (3.6 to 3.9). For a config whose
`ptx_options` carries a reorder marker (reorder.triton.request) the hook

1. rebuilds the cubin stage with the marker stripped from the options (ptxas never sees it),
2. lets the previously installed hook, if any, wrap the stages as it would have,
3. wraps the cubin stage: ptxas' cubin goes through reorder.triton.rewrite.rewrite_or_keep,
   with the PTX and this stage to compile it again (for `moves`, the wgmma PTX step comes
   first: where ptxas would serialize a loop's tensor-core ops, the waits that let it keep
   them asynchronous), which returns the compiler's cubin whenever anything fails (one
   line on stderr says what happened).

Unmarked configs are left to the previous hook and compile as before.

Caching: `ptx_options` is part of Triton's cache key, so marked and unmarked configs never
share an entry, and `tuned:KEY` markers name their binary. From Triton 3.7 the hook is also
called with no arguments and returns (key, hash) for the cache key: it names a digest of
reorder's sources. Triton 3.6 does not ask; there the marker itself carries the digest
(`rev:`, stamped by reorder.triton.with_reorder), so an updated reorder changes ptx_options,
hence the cache key. A hand-written marker without it: set TRITON_ALWAYS_COMPILE=1 (or clear
~/.triton/cache) after updating reorder.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from typing import Any

from reorder.base.diskcache import key_of
from reorder.triton.digest import code_digest
from reorder.triton.request import Request, split_options
from reorder.triton.rewrite import rewrite_or_keep

Say = Callable[[str], None]


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _knobs(knobs: Any | None) -> Any:
    if knobs is not None:
        return knobs
    import triton

    if not hasattr(getattr(triton, "knobs", None), "runtime") or not hasattr(
        triton.knobs.runtime, "add_stages_inspection_hook"
    ):
        from reorder.base.errors import InputError

        raise InputError(
            f"Triton {getattr(triton, '__version__', '?')} has no stages inspection hook (3.6+): use "
            "the ptxas stand-in instead (TRITON_PTXAS_PATH=reorder-ptxas)"
        )
    return triton.knobs


def install(knobs: Any | None = None, say: Say | None = _stderr, confirm: bool = True) -> Callable[..., Any]:
    """Register reorder's hook (idempotent; chains the hook already installed). Returns it.
    With Triton's own knobs and `confirm`, Triton's autotuner also has a twin that beats its
    config confirmed in paired rounds before it may be picked (reorder.triton.confirm)."""
    if not isinstance(confirm, bool):
        from reorder.base.errors import InputError

        raise InputError(f"rt.install: confirm={confirm!r}: expected True or False")
    if knobs is None and confirm:
        from reorder.triton.confirm import install_confirmation

        _knobs(None)  # a Triton without the stages hook is refused before anything is wrapped
        install_confirmation()
    runtime = _knobs(knobs).runtime
    current = runtime.add_stages_inspection_hook
    if getattr(current, "reorder_hook", False):
        return current
    hook = make_hook(current, say)
    runtime.add_stages_inspection_hook = hook
    return hook


def uninstall(knobs: Any | None = None) -> None:
    """Remove reorder's hook, putting back the one it chained (if any), and the autotuner's
    confirmation (with Triton's own knobs)."""
    runtime = _knobs(knobs).runtime
    current = runtime.add_stages_inspection_hook
    if getattr(current, "reorder_hook", False):
        runtime.add_stages_inspection_hook = current.previous
    if knobs is None:
        from reorder.triton.confirm import uninstall_confirmation

        uninstall_confirmation()


def installed(knobs: Any | None = None) -> bool:
    return bool(getattr(_knobs(knobs).runtime.add_stages_inspection_hook, "reorder_hook", False))


def cache_key(previous: Callable[..., Any] | None) -> tuple[str, str]:
    """(key, hash) for Triton 3.7+'s cache: reorder's digest, joined to the previous hook's."""
    key, digest = previous() if previous is not None else ("", "")
    ours = f"-reorder-{code_digest()}"
    return f"{key}{ours}", key_of(str(digest), ours)[:32]


def make_hook(previous: Callable[..., Any] | None, say: Say | None = _stderr) -> Callable[..., Any]:
    """The hook function (see the module docstring); `previous` is called by it."""

    def hook(*args: Any) -> Any:
        if not args:
            return cache_key(previous)
        if len(args) != 5 or not isinstance(args[1], dict):  # a call shape this module was not written for
            if say is not None:
                say(f"reorder: unknown stages hook call ({len(args)} arguments): not applied")
            return previous(*args) if previous is not None else None
        backend, stages, options, language, capability = args
        request, rest = split_options(getattr(options, "ptx_options", None))
        if request is None:
            return previous(*args) if previous is not None else None
        stripped = dataclasses.replace(options, ptx_options=rest)
        stages["cubin"] = lambda src, metadata: backend.make_cubin(src, metadata, stripped, backend.target.arch)
        if previous is not None:
            previous(backend, stages, stripped, language, capability)
        stages["cubin"] = _rewriting(stages["cubin"], request, say)
        return None

    hook.reorder_hook = True  # type: ignore[attr-defined]
    hook.previous = previous  # type: ignore[attr-defined]
    return hook


def _rewriting(make_cubin: Callable[[Any, dict], bytes], request: Request, say: Say | None):
    """A cubin stage: ptxas' cubin, then reorder's binary for `request` (the note lands in
    the kernel's metadata as `reorder`, so `kernel.metadata.reorder` says what was done)."""

    def stage(src: Any, metadata: dict) -> bytes:
        cubin = make_cubin(src, metadata)
        name = metadata.get("name", "kernel") if isinstance(metadata, dict) else "kernel"
        result = rewrite_or_keep(
            cubin,
            request,
            say=(lambda line: say(f"{line} [{name}]")) if say else None,
            ptx=src if isinstance(src, str) else None,
            compile_cubin=lambda text: make_cubin(text, metadata),
        )
        if isinstance(metadata, dict):
            metadata["reorder"] = result.note
        return result.data

    return stage
