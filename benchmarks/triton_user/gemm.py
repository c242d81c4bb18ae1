"""Two GEMMs with fused epilogues, each under `@triton.heuristics` (EVEN_K: K is a multiple
of BK, and the K loop's loads then carry no K mask).

- `down_proj`: an MLP's down projection with its activation fused in front and the residual
  behind: out = (silu(G) * U) @ W + bias + res. G and U are the up projection's two M x K
  halves; each K tile of silu(G) * U is made in registers (fp32, rounded to the dot's type)
  and fed to the dot, so the activation never goes to memory.
- `linear_gelu`: out = gelu(A @ W + bias) with the tanh form of GELU, A and W straight from
  memory into the dot.

Program ids are grouped GROUP_M tile rows at a time (tiles that share W columns run
together). Inputs fp16, accumulation fp32, output fp16. The K loop feeds `tl.dot`, so the
kernel-level `num_stages` pipelines its loads.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _tile(M, N, BM: tl.constexpr, BN: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    group = GROUP_M * tiles_n
    first_m = (pid // group) * GROUP_M
    size_m = tl.minimum(tiles_m - first_m, GROUP_M)
    tile_m = first_m + (pid % group) % size_m
    tile_n = (pid % group) // size_m
    return tile_m * BM + tl.arange(0, BM), tile_n * BN + tl.arange(0, BN)


def _even_k(args):
    return args["K"] % args["BK"] == 0


@triton.heuristics({"EVEN_K": _even_k})
@triton.jit
def down_proj(
    g_ptr,
    u_ptr,
    w_ptr,
    bias_ptr,
    res_ptr,
    out_ptr,
    M,
    N,
    K,
    a_row_stride,
    w_row_stride,
    out_row_stride,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    GROUP_M: tl.constexpr,
    EVEN_K: tl.constexpr,
):
    rows, cols = _tile(M, N, BM, BN, GROUP_M)
    ks = tl.arange(0, BK)
    row_ok = rows < M
    col_ok = cols < N
    a_off = rows[:, None].to(tl.int64) * a_row_stride + ks[None, :]
    w_tile = w_ptr + ks[:, None].to(tl.int64) * w_row_stride + cols[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        if EVEN_K:
            a_mask = row_ok[:, None]
            w_mask = col_ok[None, :]
        else:
            a_mask = row_ok[:, None] & ((k + ks) < K)[None, :]
            w_mask = ((k + ks) < K)[:, None] & col_ok[None, :]
        g = tl.load(g_ptr + a_off + k, mask=a_mask, other=0.0).to(tl.float32)
        u = tl.load(u_ptr + a_off + k, mask=a_mask, other=0.0).to(tl.float32)
        w = tl.load(w_tile, mask=w_mask, other=0.0)
        act = (g * tl.sigmoid(g) * u).to(w_ptr.dtype.element_ty)
        acc = tl.dot(act, w, acc)
        w_tile += BK * w_row_stride
    out_off = rows[:, None].to(tl.int64) * out_row_stride + cols[None, :]
    ok = row_ok[:, None] & col_ok[None, :]
    bias = tl.load(bias_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    res = tl.load(res_ptr + out_off, mask=ok, other=0.0).to(tl.float32)
    tl.store(out_ptr + out_off, (acc + bias[None, :] + res).to(out_ptr.dtype.element_ty), mask=ok)


@triton.heuristics({"EVEN_K": _even_k})
@triton.jit
def linear_gelu(
    a_ptr,
    w_ptr,
    bias_ptr,
    out_ptr,
    M,
    N,
    K,
    a_row_stride,
    w_row_stride,
    out_row_stride,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    GROUP_M: tl.constexpr,
    EVEN_K: tl.constexpr,
):
    rows, cols = _tile(M, N, BM, BN, GROUP_M)
    ks = tl.arange(0, BK)
    row_ok = rows < M
    col_ok = cols < N
    a_tile = a_ptr + rows[:, None].to(tl.int64) * a_row_stride + ks[None, :]
    w_tile = w_ptr + ks[:, None].to(tl.int64) * w_row_stride + cols[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        if EVEN_K:
            a = tl.load(a_tile, mask=row_ok[:, None], other=0.0)
            w = tl.load(w_tile, mask=col_ok[None, :], other=0.0)
        else:
            a = tl.load(a_tile, mask=row_ok[:, None] & ((k + ks) < K)[None, :], other=0.0)
            w = tl.load(w_tile, mask=((k + ks) < K)[:, None] & col_ok[None, :], other=0.0)
        acc = tl.dot(a, w, acc)
        a_tile += BK
        w_tile += BK * w_row_stride
    z = acc + tl.load(bias_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)[None, :]
    inner = 0.7978845608028654 * (z + 0.044715 * z * z * z)  # sqrt(2 / pi) * (z + 0.044715 z^3)
    tanh = 2.0 * tl.sigmoid(2.0 * inner) - 1.0
    out = 0.5 * z * (1.0 + tanh)
    out_off = rows[:, None].to(tl.int64) * out_row_stride + cols[None, :]
    tl.store(out_ptr + out_off, out.to(out_ptr.dtype.element_ty), mask=row_ok[:, None] & col_ok[None, :])
