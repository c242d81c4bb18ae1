"""The README's Triton example, run as written and timed (the last step of benchmarks.triton_gpu).

`example()` is the README's ten lines: an `@triton.autotune` RMSNorm whose configs gain
reorder as an axis with one call (`rt.with_reorder`: each config plus a twin whose cubin
the stages hook replaces by reorder's static SASS moves). `measure()` runs it beside the
same autotuner without the twins and times both winners with `triton.testing.do_bench`, the
autotuner's own timer (L2 flushed before each launch), in alternating rounds; then
`rt.verify` byte-checks the chosen build against the unoptimized one on fresh inputs.

It runs in the benchmark's main process (rt.verify starts its own GPU worker, which a
worker process may not), after every other row is written. The hook's static result for
each config is normally found in reorder's cache (benchmarks.triton_build writes it as
OUT/reorder_cache, for the same reorder sources), so the step compiles but does not search.
"""

from __future__ import annotations

import statistics
from typing import Any

ROWS, COLS = 1024, 4096


def example() -> tuple[Any, tuple, dict, list]:
    """The README's lines: (the autotuned kernel, its arguments, its keywords, rt.verify's answer)."""
    import torch
    import triton

    import reorder.triton as rt
    from benchmarks.triton_kernels.rmsnorm import rmsnorm_row

    rt.install()  # reorder: one more stage of Triton's compiler
    configs = [triton.Config({}, num_warps=w) for w in (2, 4, 8, 16)]
    kernel = triton.autotune(rt.with_reorder(configs, rt.Request(noalias=True)), key=["n_cols"])(rmsnorm_row)
    x = torch.randn(ROWS, COLS, device="cuda", dtype=torch.float16)
    w, y = torch.randn(COLS, device="cuda", dtype=torch.float16), torch.empty_like(x)
    kernel[(ROWS,)](x, w, y, COLS, COLS, COLS, 1e-5, BLOCK=4096)  # tunes over 4 configs x {Triton, reorder}
    checked = rt.verify(kernel, x, w, y, COLS, COLS, COLS, 1e-5, grid=(ROWS,), BLOCK=4096, outputs=["y_ptr"])
    print(kernel.best_config, checked)  # the chosen build, byte-checked
    return kernel, (x, w, y, COLS, COLS, COLS, 1e-5), {"BLOCK": 4096}, checked


def measure(rounds: int = 5) -> dict:
    """The example's winner against the same autotuner without reorder's twins (do_bench
    medians over alternating rounds), with what the autotuner chose and the byte check."""
    import triton

    from benchmarks.triton_kernels.rmsnorm import rmsnorm_row

    kernel, args, kwargs, checked = example()
    plain = triton.autotune([triton.Config({}, num_warps=w) for w in (2, 4, 8, 16)], key=["n_cols"])(rmsnorm_row)
    plain[(ROWS,)](*args, **kwargs)
    times: dict[str, list[float]] = {"plain": [], "reorder": []}
    for _ in range(rounds):
        for name, k in (("plain", plain), ("reorder", kernel)):
            times[name].append(triton.testing.do_bench(lambda k=k: k[(ROWS,)](*args, **kwargs), return_mode="median"))
    plain_ms, reorder_ms = statistics.median(times["plain"]), statistics.median(times["reorder"])
    return {
        "shape": f"{ROWS}x{COLS}",
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
