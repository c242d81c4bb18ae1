"""A fused feed-forward block's first half: RMSNorm, then x@W1 and x@W3, then the SwiGLU product.

    out = silu(n @ W1) * (n @ W3),   n = x * rstd * g,   rstd = 1 / sqrt(mean(x^2) + eps)

x is M x K (M tokens of width K), W1 and W3 are K x N, g is the norm's K weights, out is
M x N. Each program computes one BM x BN tile of out and walks K once. The norm is folded in
by linearity: rstd depends on the row only, so (x * rstd * g) @ W = rstd * ((x * g) @ W). The
K loop therefore multiplies each x tile by its slice of g, feeds the product to two dots that
share it (one into W1's accumulator, one into W3's) and adds the tile's squares into a per-row
sum; after the loop the row sums give rstd, both accumulators are scaled by it, and
silu(a) * b is written. One read of x per N-tile and one of each weight per M-tile, no
normalised copy of x in memory. The loop feeds `tl.dot`, so the kernel-level `num_stages`
pipelines its loads. Arithmetic in fp32 (the scaled x tile is rounded to the dot's input type).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def ffn_swiglu(
    x_ptr,
    g_ptr,
    w1_ptr,
    w3_ptr,
    out_ptr,
    M,
    N,
    K,
    x_row_stride,
    w_row_stride,
    out_row_stride,
    eps,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
):
    tiles_n = tl.cdiv(N, BN)
    pid = tl.program_id(0)
    rows = (pid // tiles_n) * BM + tl.arange(0, BM)
    cols = (pid % tiles_n) * BN + tl.arange(0, BN)
    ks = tl.arange(0, BK)
    row_ok = rows < M
    col_ok = cols < N
    x_tile = x_ptr + rows[:, None].to(tl.int64) * x_row_stride + ks[None, :]
    w1_tile = w1_ptr + ks[:, None].to(tl.int64) * w_row_stride + cols[None, :]
    w3_tile = w3_ptr + ks[:, None].to(tl.int64) * w_row_stride + cols[None, :]
    gate = tl.zeros((BM, BN), dtype=tl.float32)
    up = tl.zeros((BM, BN), dtype=tl.float32)
    squares = tl.zeros((BM,), dtype=tl.float32)
    for k in range(0, K, BK):
        k_ok = (k + ks) < K
        x = tl.load(x_tile, mask=row_ok[:, None] & k_ok[None, :], other=0.0)
        g = tl.load(g_ptr + k + ks, mask=k_ok, other=0.0)
        w1 = tl.load(w1_tile, mask=k_ok[:, None] & col_ok[None, :], other=0.0)
        w3 = tl.load(w3_tile, mask=k_ok[:, None] & col_ok[None, :], other=0.0)
        xf = x.to(tl.float32)
        squares += tl.sum(xf * xf, axis=1)
        scaled = (xf * g.to(tl.float32)[None, :]).to(x_ptr.dtype.element_ty)
        gate = tl.dot(scaled, w1, gate)
        up = tl.dot(scaled, w3, up)
        x_tile += BK
        w1_tile += BK * w_row_stride
        w3_tile += BK * w_row_stride
    rstd = tl.rsqrt(squares / K + eps)
    gate = gate * rstd[:, None]
    up = up * rstd[:, None]
    out = gate * tl.sigmoid(gate) * up
    out_tile = out_ptr + rows[:, None].to(tl.int64) * out_row_stride + cols[None, :]
    tl.store(out_tile, out.to(out_ptr.dtype.element_ty), mask=row_ok[:, None] & col_ok[None, :])
