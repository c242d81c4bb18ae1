"""C = LeakyReLU(A @ B), fp16 in, fp32 accumulation, fp16 out; tiles visited in row groups.

Program p computes one BM x BN tile of C; consecutive programs walk GROUP_M tile rows
before moving right, so the B tiles they share stay in L2. The K loop feeds `tl.dot`, so the
kernel-level `num_stages` pipelines its loads. Strides are arguments: a unit stride is an int
equal to 1, which Triton makes a constexpr (the cubin does not take it).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def matmul_leaky(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    a_row_stride,
    a_col_stride,
    b_row_stride,
    b_col_stride,
    c_row_stride,
    c_col_stride,
    slope,
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
    a_tile = a_ptr + rows[:, None] * a_row_stride + ks[None, :] * a_col_stride
    b_tile = b_ptr + ks[:, None] * b_row_stride + cols[None, :] * b_col_stride
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(tl.cdiv(K, BK)):
        left = K - k * BK
        a = tl.load(a_tile, mask=(rows[:, None] < M) & (ks[None, :] < left), other=0.0)
        b = tl.load(b_tile, mask=(ks[:, None] < left) & (cols[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BK * a_col_stride
        b_tile += BK * b_row_stride
    acc = tl.where(acc >= 0.0, acc, acc * slope)
    c = c_ptr + rows[:, None] * c_row_stride + cols[None, :] * c_col_stride
    tl.store(c, acc.to(c_ptr.dtype.element_ty), mask=(rows[:, None] < M) & (cols[None, :] < N))
