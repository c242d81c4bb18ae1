"""reorder for Triton users: an autotune axis, launches from metadata, a ptxas stand-in.

    import reorder.triton as rt
    rt.install()                                   # Triton 3.6+: the stages hook
    kernel = triton.autotune(rt.with_reorder(configs, rt.Request(noalias=True)), key=["N"])(kernel)
    ...                                            # each config plus three twins, timed by the autotuner
    print(rt.verify(kernel, x, w, y, N, grid=(rows,), outputs=["y"]).table())  # every twin, byte-checked

or, with a GPU search per config (measured, byte-checked, stored by content):

    tuned = rt.tune(kernel, x, w, y, N, grid=(rows,), configs=configs, budget=20, outputs=["y"])
    kernel = triton.autotune(tuned.configs, key=["N"])(kernel)

or over every key value the kernel serves (one multi-shape search per config, one binary per
group of key values when the groups are a real gain):

    tuned = rt.tune(kernel, key=["N"], launches=[(args_a, grid_a), (args_b, grid_b)], configs=configs)
    kernel = triton.autotune(tuned.configs, key=["N"], prune_configs_by=tuned.dispatch())(kernel)

Modules (each imports Triton only inside functions, so `import reorder.triton` works without
it): `request` the marker in `ptx_options`; `rewrite` a cubin to reorder's binary, cached,
never failing a compile; `hook` the stages hook; `ptxas` the `reorder-ptxas` stand-in;
`compile` the JIT's binding and compile for any target; `launch` LaunchSpec from metadata
and live arguments; `twins` the builds a config's twins get; `confirm` a twin timed against
its config in paired rounds before the autotuner may keep it; `tune` the search and the
autotune axis; `keys` the autotune key values as a dispatch; `prove` rt.verify.
"""

from __future__ import annotations

from reorder.triton.compile import compile_call
from reorder.triton.hook import install, installed, uninstall
from reorder.triton.launch import launch_spec, spec_toml
from reorder.triton.prove import Verification, Verified, verify
from reorder.triton.request import Request
from reorder.triton.tune import TuneResult, pruned, tune, with_reorder

__all__ = [
    "Request",
    "TuneResult",
    "Verification",
    "Verified",
    "compile_call",
    "install",
    "installed",
    "launch_spec",
    "pruned",
    "spec_toml",
    "tune",
    "uninstall",
    "verify",
    "with_reorder",
]
