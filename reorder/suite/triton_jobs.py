"""The GPU side of the Triton benchmark, as timing.worker jobs (one CUDA context each, so a
candidate that faults costs one job, never the run).

- `roof_job`: the roofs a cell is measured against: copy bandwidth (bytes read + written per
  second, a 1 GiB device-to-device copy) and cuBLAS' fp16 GEMM rate (8192^3), both by cupy;
- `jit_job`: one config launched by Triton's own JIT (torch tensors holding input set 0 of
  the launch spec) against the same cubin launched by reorder's loader from the spec built
  from metadata on the CPU: the JIT's cubin must be that cubin (its machine code, when the
  checkout's path, which -lineinfo records, differs), and the outputs byte-equal
  (the end-to-end test of reorder.triton.launch: parameters, constexpr elision, NULL scratch
  pointers, block, dynamic shared memory); the outputs are also checked against the torch
  reference within the family's tolerance;
- `check_job`: every candidate of a cell against its config's original (timing.multi_check);
- `time_job`: every build of a cell in the same rounds (timing.multi).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from timing.multi import Build


def roof_job() -> dict[str, float]:
    import cupy as cp

    def best_ms(fn, repeats: int = 10) -> float:
        start, end = cp.cuda.Event(), cp.cuda.Event()
        fn()
        best = float("inf")
        for _ in range(repeats):
            start.record()
            fn()
            end.record()
            end.synchronize()
            best = min(best, cp.cuda.get_elapsed_time(start, end))
        return best

    def copy_ms() -> float:
        src = cp.ones(1 << 30, dtype=cp.uint8)
        dst = cp.empty_like(src)
        return best_ms(lambda: cp.copyto(dst, src))

    def gemm_ms() -> float:
        a = cp.random.standard_normal((8192, 8192), dtype=cp.float32).astype(cp.float16)
        return best_ms(lambda: cp.matmul(a, a), repeats=5)

    return {"bytes_per_s": 2 * (1 << 30) / (copy_ms() * 1e-3), "flops": 2 * 8192**3 / (gemm_ms() * 1e-3)}


def check_job(groups: Sequence[tuple[Build, Sequence[Build]]], sets: int = 2, first_set: int = 0) -> dict[str, dict]:
    """Every candidate label -> its check, for each (original, candidates) group."""
    from timing.multi_check import check_builds

    out: dict[str, dict] = {}
    for original, candidates in groups:
        if candidates:
            out.update(check_builds(original, candidates, sets=sets, first_set=first_set))
    return out


def time_job(builds: Sequence[Build], l2: str, budget_s: float, min_rounds: int = 20) -> dict[str, Any]:
    from timing.inputs import draw_inputs
    from timing.multi import time_builds

    result = time_builds(builds, draw_inputs(builds[0].spec, 0), l2=l2, budget_s=budget_s, min_rounds=min_rounds)
    result["times"] = result["times"].tolist()  # plain lists across the process boundary
    return result


def same_code(a: bytes, b: bytes, kernel: str) -> str:
    """Whether two cubins hold the same machine code for `kernel` (-lineinfo embeds the source's
    path, so a JIT compile from another checkout differs in its bytes, not in its code)."""
    try:
        from reorder.binary.cubin import parse_cubin

        return str(parse_cubin(a).kernel(kernel).text == parse_cubin(b).kernel(kernel).text)
    except Exception as exc:  # noqa: BLE001 - e.g. no pyelftools on this machine: say so, do not fail the row
        return f"not compared ({type(exc).__name__}: {exc})"


def jit_job(family_name: str, shape: Sequence[int], config: dict, build: Build) -> dict[str, Any]:
    """Triton's own launch of `config` against reorder's launch of the CPU-built cubin."""
    import numpy as np
    import torch

    from reorder.suite.triton_kernels import TensorArg, family
    from timing.inputs import draw_inputs
    from timing.multi_check import first_difference, run_build

    fam = family(family_name)
    case = fam.case(tuple(shape))
    host = draw_inputs(build.spec, 0)
    tensors, args = {}, []
    for name, arg in zip(case.names, case.args):
        if isinstance(arg, TensorArg):
            tensors[name] = torch.from_numpy(np.ascontiguousarray(host[name])).cuda()
            args.append(tensors[name])
        else:
            args.append(arg)
    compiled = case.kernel[case.grid](*args, **case.constexprs, **config)
    torch.cuda.synchronize()
    with open(build.cubin, "rb") as handle:
        built = handle.read()
    same_cubin = compiled.asm["cubin"] == built
    import cupy as cp

    pristine = {k: (cp.asarray(v) if isinstance(v, np.ndarray) else v) for k, v in host.items()}
    ours = run_build(build, pristine, poison=True)
    theirs = {name: cp.asarray(tensors[name]) if name in tensors else ours[name] for name in ours}
    diff = first_difference({k: theirs[k] for k in case.outputs}, {k: ours[k] for k in case.outputs})
    worst, ok = 0.0, True
    for name, want in case.reference(dict(tensors.items())).items():
        got = tensors[name].float()
        worst = max(worst, float((got - want).abs().max().item()))
        ok &= bool(torch.allclose(got, want, rtol=fam.tol, atol=fam.tol))
    return {
        "jit_same_cubin": same_cubin,
        "jit_same_code": same_cubin or same_code(compiled.asm["cubin"], built, build.spec.name),
        "launch_outputs": "identical" if not diff else f"DIFFER: {diff}",
        "math_ok": ok,
        "math_max_err": worst,
        "jit_shared": compiled.metadata.shared,
        "jit_num_warps": compiled.metadata.num_warps,
    }
