"""reorder for Triton users: an autotune axis, launches from metadata, a ptxas stand-in.

    import reorder.triton as rt
    rt.install()                                   # Triton 3.6+: the stages hook
    configs = rt.with_reorder(configs)             # each config plus a twin marked --reorder
    kernel = triton.autotune(configs, key=["N"])(kernel)
    ...
    rt.verify(kernel, x, w, y, N, grid=(rows,), outputs=["y"])   # the chosen build, byte-checked

or, with a GPU search per config (measured, byte-checked, stored by content):

    tuned = rt.tune(kernel, x, w, y, N, grid=(rows,), configs=configs, budget=20, outputs=["y"])
    kernel = triton.autotune(tuned.configs, key=["N"])(kernel)

Modules (each imports Triton only inside functions, so `import reorder.triton` works without
it): `request` the marker in `ptx_options`; `rewrite` a cubin to reorder's binary, cached,
never failing a compile; `hook` the stages hook; `ptxas` the `reorder-ptxas` stand-in;
`compile` the JIT's binding and compile for any target; `launch` LaunchSpec from metadata
and live arguments; `tune` the search and the check.
"""

from __future__ import annotations

from reorder.triton.compile import compile_call
from reorder.triton.hook import install, installed, uninstall
from reorder.triton.launch import launch_spec, spec_toml
from reorder.triton.request import Request
from reorder.triton.tune import TuneResult, Verified, tune, verify, with_reorder

__all__ = [
    "Request",
    "TuneResult",
    "Verified",
    "compile_call",
    "install",
    "installed",
    "launch_spec",
    "spec_toml",
    "tune",
    "uninstall",
    "verify",
    "with_reorder",
]
