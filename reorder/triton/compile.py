"""Compile a Triton kernel for given arguments the way its JIT would, with or without a GPU.

`triton.compile` builds for any target (GPUTarget("cuda", 90, 32) on a machine with no GPU),
but which arguments become constexprs (an int equal to 1, None), which carry divisibility
hints, and which options apply is decided by the JIT from the live arguments. `compile_call`
runs the JIT's own binder and argument packing (Triton 3.6 to 3.9: the binder from
`create_function_from_signature`, then `JITFunction._pack_args`) and then `triton.compile`,
so the cubin is the one `kernel[grid](*args)` would launch, and the bound arguments (every
parameter by name) come back with it for reorder.triton.launch.

Everything touching Triton's internals is in this file; a Triton whose internals moved fails
here with one line naming the version.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reorder.base.errors import InputError


@dataclass(frozen=True)
class Call:
    """A compiled kernel and the arguments it was compiled for."""

    kernel: Any  # triton.compiler.CompiledKernel
    values: Mapping[str, Any]  # every parameter by name, constexprs included (what a grid callable gets)
    options: Mapping[str, Any]  # the options given (num_warps, num_stages, ptx_options, ...)

    @property
    def cubin(self) -> bytes:
        return self.kernel.asm["cubin"]

    @property
    def name(self) -> str:
        return self.kernel.metadata.name


def jit_function(kernel: Any) -> Any:
    """The JITFunction under autotune/heuristics wrappers (each keeps it as `.fn`)."""
    from triton.runtime.jit import JITFunction

    seen = 0
    while not isinstance(kernel, JITFunction):
        kernel = getattr(kernel, "fn", None)
        seen += 1
        if kernel is None or seen > 8:
            raise InputError(
                "not a Triton kernel: expected a @triton.jit function (or one wrapped by "
                "@triton.autotune / @triton.heuristics)"
            )
    return kernel


def with_heuristics(kernel: Any, args: tuple, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """`kwargs` with the values of every `@triton.heuristics` wrapper between `kernel` and its
    JITFunction, computed as Heuristics.run computes them at a launch: outermost first, each
    from the positional arguments by name and the keywords so far (a config's included), a
    heuristic's value replacing a keyword of the same name. A heuristic that fails on these
    arguments is one line."""
    from triton.runtime.autotuner import Heuristics
    from triton.runtime.jit import JITFunction

    out = dict(kwargs)
    for _ in range(8):
        if kernel is None or isinstance(kernel, JITFunction):
            break
        if isinstance(kernel, Heuristics):
            for name, heuristic in kernel.values.items():
                try:
                    out[name] = heuristic({**dict(zip(kernel.arg_names, args)), **out})
                except Exception as exc:  # noqa: BLE001 - the user's function on the user's arguments
                    raise InputError(
                        f"@triton.heuristics value {name!r} failed on these arguments ({type(exc).__name__}: {exc})"
                    ) from None
        kernel = getattr(kernel, "fn", None)
    return out


def target(arch: int | None = None) -> Any:
    """GPUTarget for `arch` (e.g. 90), or the current device's when None (needs a GPU)."""
    from triton.backends.compiler import GPUTarget

    if arch is not None:
        return GPUTarget("cuda", arch, 32)
    from triton.runtime.driver import driver

    return driver.active.get_current_target()


def _jit_defaults(fn: Any) -> dict[str, Any]:
    """Options the JIT adds to every call's keywords before binding (debug, instrumentation)."""
    from triton import knobs

    out: dict[str, Any] = {"debug": bool(getattr(fn, "debug", False)) or bool(knobs.runtime.debug)}
    mode = getattr(knobs.compilation, "instrumentation_mode", None)
    if mode is not None:
        out["instrumentation_mode"] = mode
    return out


def bind(fn: Any, args: tuple, kwargs: Mapping[str, Any], tgt: Any) -> tuple[Any, dict, dict, dict, dict]:
    """(options, signature, constexprs, attrs, values) as the JIT computes them."""
    from triton.compiler import make_backend
    from triton.runtime.jit import create_function_from_signature

    backend = make_backend(tgt)
    call = {**_jit_defaults(fn), **kwargs}
    try:
        binder = create_function_from_signature(fn.signature, fn.params, backend)
        values, specialization, options = binder(*args, **call)
        packed = fn._pack_args(backend, call, values, specialization, options)
    except TypeError as exc:  # wrong arguments for the kernel: the user's mistake, one line
        raise InputError(f"{fn.__name__ if hasattr(fn, '__name__') else fn}: {exc}") from None
    except AttributeError as exc:  # the JIT's internals moved
        import triton

        raise InputError(
            f"Triton {triton.__version__}: cannot bind arguments the way its JIT does ({exc}); "
            "reorder.triton knows Triton 3.6 to 3.9"
        ) from None
    opts, signature, constexprs, attrs = packed
    return opts, signature, constexprs, attrs, dict(values)


def compile_call(kernel: Any, *args: Any, arch: int | None = None, **kwargs: Any) -> Call:
    """Compile `kernel` for `args` and keyword arguments (constexprs and options such as
    num_warps, num_stages, ptx_options), for `arch` or the current GPU. Through
    `@triton.autotune` and `@triton.heuristics` wrappers: the heuristics' values are
    computed from these arguments, as a launch would (an autotuner's config is the caller's
    to give: its keywords)."""
    import triton
    from triton.compiler import ASTSource

    fn = jit_function(kernel)
    tgt = target(arch)
    opts, signature, constexprs, attrs, values = bind(fn, args, with_heuristics(kernel, args, kwargs), tgt)
    compiled = triton.compile(ASTSource(fn, signature, constexprs, attrs), target=tgt, options=opts.__dict__)
    return Call(compiled, values, dict(kwargs))


CUBIN_OPTIONS = ("num_warps", "num_stages", "num_ctas", "ptx_options", "maxnreg")  # what the cubin stage reads


def cubin_stage(ptx: str, options: Mapping[str, Any], arch: int) -> bytes:
    """`ptx` through Triton's own cubin stage (the backend's make_cubin) with a call's options:
    the same ptxas, flags and PTX options the JIT's compile used (a reorder marker in
    ptx_options must be stripped first: ptxas would refuse it)."""
    from triton.compiler import make_backend

    backend = make_backend(target(arch))
    parsed = backend.parse_options({k: v for k, v in options.items() if k in CUBIN_OPTIONS})
    return backend.make_cubin(ptx, {}, parsed, backend.target.arch)


def config_kwargs(config: Any) -> dict[str, Any]:
    """A triton.Config (or a plain dict) as call keywords."""
    if isinstance(config, Mapping):
        return dict(config)
    if hasattr(config, "all_kwargs"):
        return dict(config.all_kwargs())
    raise InputError(f"not a Triton config: {config!r}")


def ptxas_recipe(options: Mapping[str, Any], arch: int) -> tuple[str, tuple[str, ...]]:
    """(Triton's own ptxas, the flags its cubin stage passes before the input) for a call's
    options, in make_cubin's order (Triton 3.6: debug info, --fmad=false without fp fusion,
    -v, --opt-level 0 when ptxas optimisation is off, the PTX options, --gpu-name). ptxas
    records its options in the cubin, so compiling the call's PTX with this recipe gives its
    cubin byte for byte exactly when the recipe is Triton's: reorder.triton.tune checks that
    before searching."""
    from triton import knobs
    from triton.backends.nvidia.compiler import get_ptxas, sm_arch_from_capability
    from triton.compiler import make_backend

    from reorder.binary.tools import triton_release

    backend = make_backend(target(arch))
    opt = backend.parse_options({k: v for k, v in options.items() if k in CUBIN_OPTIONS})
    if knobs.compilation.disable_line_info:
        debug = ["-lineinfo", "-suppress-debug-info"]
    elif knobs.nvidia.disable_ptxas_opt:
        debug = ["-g"]
    else:
        debug = ["-lineinfo"]
    flags = [*debug, *([] if opt.enable_fp_fusion else ["--fmad=false"]), "-v"]
    flags += ["--regAllocOptLevel=2"] if triton_release() >= (3, 7) else []
    flags += ["--opt-level", "0"] if knobs.nvidia.disable_ptxas_opt else []
    flags += opt.ptx_options.split(" ") if opt.ptx_options else []
    flags.append(f"--gpu-name={sm_arch_from_capability(backend.target.arch)}")
    return str(get_ptxas(backend.target.arch).path), tuple(flags)
