"""The README's Triton example, run as written and timed (the last step of reorder.suite.triton_gpu).

`example()` is the README's lines: an `@triton.autotune` fused feed-forward
(reorder/suite/triton_kernels/ffn.py, 512 x 512 x 4096 fp16, num_warps x num_stages) whose
configs gain reorder as an axis with one call (`rt.with_reorder`: each config plus a twin
whose binary the stages hook makes: the wgmma PTX step, then the static SASS moves). `measure()` runs it beside the
same autotuner without the twins and times both winners with `triton.testing.do_bench`, the
autotuner's own timer (L2 flushed before each launch), in alternating rounds; then
`rt.verify` byte-checks the chosen build against the unoptimized one on fresh inputs.

It runs in the benchmark's main process (rt.verify starts its own GPU worker, which a
worker process may not), after every other row is written. The hook's static result for
each config is normally found in reorder's cache (reorder.suite.triton_build writes it as
OUT/reorder_cache, for the same reorder sources), so the step compiles but does not search.
"""

from __future__ import annotations

import statistics
from typing import Any

M, N, K = 512, 512, 4096
TILE = {"BM": 64, "BN": 64, "BK": 64}


def configs() -> list:
    import triton

    return [triton.Config(TILE, num_warps=w, num_stages=s) for w in (4, 8) for s in (2, 3, 4)]


def example() -> tuple[Any, tuple, tuple, Any]:
    """The README's lines: (the autotuned kernel, its arguments, its grid, rt.verify's answer)."""
    import torch
    import triton

    import reorder.triton as rt
    from reorder.suite.triton_kernels.ffn import ffn_swiglu

    rt.install()  # reorder: one more stage of Triton's compiler
    configs = [triton.Config(TILE, num_warps=w, num_stages=s) for w in (4, 8) for s in (2, 3, 4)]
    kernel = triton.autotune(rt.with_reorder(configs, rt.Request(noalias=True)), key=["M", "N", "K"])(ffn_swiglu)
    half = {"device": "cuda", "dtype": torch.float16}
    x, g = torch.randn(M, K, **half), torch.randn(K, **half)
    w1, w3, out = torch.randn(K, N, **half) * K**-0.5, torch.randn(K, N, **half) * K**-0.5, torch.empty(M, N, **half)
    args, grid = (x, g, w1, w3, out, M, N, K, K, N, N, 1e-5), ((M // 64) * (N // 64),)
    kernel[grid](*args)  # tunes over 6 configs x {Triton, reorder}
    checked = rt.verify(kernel, *args, grid=grid, outputs=["out_ptr"])
    print(kernel.best_config, checked)  # the chosen build, byte-checked
    return kernel, args, grid, checked


def measure(rounds: int = 5) -> dict:
    """The example's winner against the same autotuner without reorder's twins (do_bench
    medians over alternating rounds), with what the autotuner chose and the byte check."""
    import triton

    from reorder.suite.triton_kernels.ffn import ffn_swiglu

    kernel, args, grid, checked = example()
    plain = triton.autotune(configs(), key=["M", "N", "K"])(ffn_swiglu)
    plain[grid](*args)
    times: dict[str, list[float]] = {"plain": [], "reorder": []}
    for _ in range(rounds):
        for name, k in (("plain", plain), ("reorder", kernel)):
            times[name].append(triton.testing.do_bench(lambda k=k: k[grid](*args), return_mode="median"))
    plain_ms, reorder_ms = statistics.median(times["plain"]), statistics.median(times["reorder"])
    return {
        "shape": f"{M}x{N}x{K}",
        "plain_best": str(plain.best_config),
        "reorder_best": str(kernel.best_config),
        "plain_us": 1000 * plain_ms,
        "reorder_us": 1000 * reorder_ms,
        "speedup": plain_ms / reorder_ms,
        "rounds": rounds,
        "timer": "triton.testing.do_bench median (L2 flushed), median of rounds",
        "verify": "; ".join(f"{v.label}: {v.check} ({v.verifier})" for v in checked),
        "verified": all(v.ok for v in checked),
    }
