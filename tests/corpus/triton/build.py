"""Build the Triton part of the corpus: cubins (and their PTX) as Triton emits them for sm_90.

Triton compiles for a target without a GPU (`triton.compile` with a GPUTarget), so this
runs on a CPU machine with the `triton` package installed; the cubins are checked in for
machines without it. Kernels: an RMSNorm row kernel (N = 4096) and a tiled fp16 GEMM
(which on sm_90 uses warpgroup MMA: HGMMA, WARPGROUP.ARRIVE/DEPBAR).

    python tests/corpus/triton/build.py [OUT_DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def kernels():
    import triton
    import triton.language as tl

    @triton.jit
    def rmsnorm(x_ptr, w_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
        var = tl.sum(x * x, axis=0) / n_cols
        w = tl.load(w_ptr + cols, mask=mask)
        tl.store(out_ptr + row * n_cols + cols, x * tl.rsqrt(var + eps) * w, mask=mask)

    @triton.jit
    def matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pid_m, pid_n = tl.program_id(0), tl.program_id(1)
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
            b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
            acc += tl.dot(a, b)
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)

    return [
        (
            "rmsnorm",
            rmsnorm,
            {
                "x_ptr": "*fp32",
                "w_ptr": "*fp32",
                "out_ptr": "*fp32",
                "n_cols": "i32",
                "eps": "fp32",
                "BLOCK": "constexpr",
            },
            {"BLOCK": 4096},
        ),
        (
            "matmul",
            matmul,
            {
                "a_ptr": "*fp16",
                "b_ptr": "*fp16",
                "c_ptr": "*fp32",
                "M": "i32",
                "N": "i32",
                "K": "i32",
                "BM": "constexpr",
                "BN": "constexpr",
                "BK": "constexpr",
            },
            {"BM": 128, "BN": 128, "BK": 32},
        ),
    ]


def build(out_dir: Path = HERE / "sm_90") -> list[Path]:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, fn, signature, constexprs in kernels():
        compiled = triton.compile(
            ASTSource(fn=fn, signature=signature, constexprs=constexprs), target=GPUTarget("cuda", 90, 32)
        )
        path = out_dir / f"{name}.cubin"
        path.write_bytes(compiled.asm["cubin"])
        ptx = out_dir / f"{name}.ptx"  # what Triton handed its ptxas: reorder's PTX input is tested on it
        ptx.write_text(compiled.asm["ptx"])
        paths += [path, ptx]
    return paths


if __name__ == "__main__":
    for p in build(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "sm_90"):
        print(p)
