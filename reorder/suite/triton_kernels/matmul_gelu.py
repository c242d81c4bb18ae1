"""C = GELU(A @ B) with the exact (erf) GELU, fp16 in, fp32 accumulation, fp16 out.

The build-cost kernel of the Triton hook's twin study (benchmarks.triton_twin_rate): a GEMM
whose elementwise epilogue is long (erf per output element), so one config's cubin has
about 5,000 SASS instructions, where a plain GEMM has under 1,000. Not a family of the
Triton benchmark (nothing here is timed on a GPU). Tiles are visited in row groups as in
matmul_leaky.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def matmul_gelu(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    a_row_stride,
    b_row_stride,
    c_row_stride,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    group_rows = tl.minimum(tiles_m - first_m, GROUP_M)
    tile_m = first_m + (pid % per_group) % group_rows
    tile_n = (pid % per_group) // group_rows
    rows = tile_m * BM + tl.arange(0, BM)
    cols = tile_n * BN + tl.arange(0, BN)
    ks = tl.arange(0, BK)
    a_tile = a_ptr + rows[:, None] * a_row_stride + ks[None, :]
    b_tile = b_ptr + ks[:, None] * b_row_stride + cols[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(tl.cdiv(K, BK)):
        left = K - k * BK
        a = tl.load(a_tile, mask=(rows[:, None] < M) & (ks[None, :] < left), other=0.0)
        b = tl.load(b_tile, mask=(ks[:, None] < left) & (cols[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BK
        b_tile += BK * b_row_stride
    acc = 0.5 * acc * (1.0 + tl.erf(acc * 0.7071067811865476))
    c = c_ptr + rows[:, None] * c_row_stride + cols[None, :]
    tl.store(c, acc.to(c_ptr.dtype.element_ty), mask=(rows[:, None] < M) & (cols[None, :] < N))
