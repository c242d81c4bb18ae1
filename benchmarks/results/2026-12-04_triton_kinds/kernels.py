"""Triton kernels of kinds the earlier one-line studies did not have, written for this study:
fp8 and int8 tensor-core GEMMs, a split-K GEMM accumulating with atomics, a GEMM on a CTA
cluster (num_ctas 2), device-side TMA descriptors in a loop, inline PTX in a grid-stride
loop, a bitonic sort of rows, a linear recurrence by associative scan with a carry across
chunks, a binary search in a data-dependent `while` loop, a complex multiply through
tl.split / tl.join, and an fp64 compensated row sum."""

import triton
import triton.language as tl


@triton.jit
def fp8_gemm(a_ptr, bt_ptr, c_ptr, scale, M, N, K, stride_am, stride_bn, stride_cm,
             BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C = (A @ Bt^T) * scale, A M x K and Bt N x K in float8e4nv, C fp16."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * stride_am + rk[None, :]
    b = bt_ptr + rn[None, :] * stride_bn + rk[:, None]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, K, BK):
        acc = tl.dot(tl.load(a), tl.load(b), acc)
        a += BK
        b += BK
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], (acc * scale).to(tl.float16))


@triton.jit
def int8_gemm(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
              BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C = A @ B in int8 with int32 accumulation (exact)."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * stride_am + rk[None, :]
    b = b_ptr + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.int32)
    for _ in range(0, K, BK):
        acc = tl.dot(tl.load(a), tl.load(b), acc, out_dtype=tl.int32)
        a += BK
        b += BK * stride_bk
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc)


@triton.jit
def split_k_gemm(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                 BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, SPLIT: tl.constexpr):
    """C += a K slice of A @ B per program along axis 2, with fp32 atomics (order varies)."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    per = K // SPLIT
    k0 = tl.program_id(2) * per
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * stride_am + (k0 + rk)[None, :]
    b = b_ptr + (k0 + rk)[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, per, BK):
        acc = tl.dot(tl.load(a), tl.load(b), acc)
        a += BK
        b += BK * stride_bk
    tl.atomic_add(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc)


@triton.jit
def cluster_gemm(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                 BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C = relu(A @ B), fp16, meant for num_ctas 2 (a CTA cluster on Hopper)."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * stride_am + rk[None, :]
    b = b_ptr + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, K, BK):
        acc = tl.dot(tl.load(a), tl.load(b), acc)
        a += BK
        b += BK * stride_bk
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], tl.maximum(acc, 0.0).to(tl.float16))


@triton.jit
def tma_row_sum(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """out[r] = sum of row r, the row blocks read through a descriptor made in the kernel."""
    desc = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    pm = tl.program_id(0) * BM
    acc = tl.zeros((BM,), dtype=tl.float32)
    for n in tl.range(0, N, BN):
        acc += tl.sum(desc.load([pm, n]).to(tl.float32), axis=1)
    rows = pm + tl.arange(0, BM)
    tl.store(out_ptr + rows, acc, mask=rows < M)


@triton.jit
def asm_mix(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """y = x ^ (x >> 3) ^ (x << 5) by one lop3 in inline PTX, over a grid-stride loop."""
    step = tl.num_programs(0) * BLOCK
    for start in tl.range(tl.program_id(0) * BLOCK, n, step):
        offs = start + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m, other=0)
        y = tl.inline_asm_elementwise("lop3.b32 $0, $1, $2, $3, 0x96;", "=r,r,r,r", [x, x >> 3, x << 5],
                                      dtype=tl.int32, is_pure=True, pack=1)
        tl.store(y_ptr + offs, y, mask=m)


@triton.jit
def sort_rows(x_ptr, y_ptr, N: tl.constexpr):
    """Each row sorted, largest first."""
    offs = tl.program_id(0) * N + tl.arange(0, N)
    tl.store(y_ptr + offs, tl.sort(tl.load(x_ptr + offs), descending=True))


@triton.jit
def _affine(a1, b1, a2, b2):
    return a1 * a2, b1 * a2 + b2


@triton.jit
def recurrence(a_ptr, b_ptr, h_ptr, T, BLOCK: tl.constexpr):
    """h[t] = a[t] * h[t-1] + b[t] along each row, a chunk at a time with the carry between."""
    base = tl.program_id(0) * T
    lanes = tl.arange(0, BLOCK)
    carry = 0.0
    for t0 in tl.range(0, T, BLOCK):
        m = t0 + lanes < T
        a = tl.load(a_ptr + base + t0 + lanes, mask=m, other=1.0)
        b = tl.load(b_ptr + base + t0 + lanes, mask=m, other=0.0)
        pa, pb = tl.associative_scan((a, b), 0, _affine)
        h = pa * carry + pb
        tl.store(h_ptr + base + t0 + lanes, h, mask=m)
        carry = tl.sum(tl.where(lanes == BLOCK - 1, h, 0.0))


@triton.jit
def search_sorted(s_ptr, q_ptr, out_ptr, n_s, n_q, BLOCK: tl.constexpr):
    """out[i] = the first index j with s[j] >= q[i] (s sorted), by a binary search whose
    `while` runs until every lane's interval is empty."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n_q
    q = tl.load(q_ptr + offs, mask=m, other=0.0)
    lo = tl.zeros([BLOCK], dtype=tl.int32)
    hi = tl.where(m, n_s, 0).to(tl.int32)
    while tl.max(hi - lo, axis=0) > 0:
        open_ = lo < hi
        mid = (lo + hi) // 2
        v = tl.load(s_ptr + mid, mask=open_, other=0.0)
        below = open_ & (v < q)
        lo = tl.where(below, mid + 1, lo)
        hi = tl.where(open_ & ~below, mid, hi)
    tl.store(out_ptr + offs, lo, mask=m)


@triton.jit
def complex_mul(x_ptr, w_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """y = x * w for interleaved complex fp32 (re, im pairs), through tl.split and tl.join."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    pair = tl.arange(0, 2)
    at = offs[:, None] * 2 + pair[None, :]
    mm = m[:, None] & (pair[None, :] < 2)
    xr, xi = tl.split(tl.load(x_ptr + at, mask=mm, other=0.0))
    wr, wi = tl.split(tl.load(w_ptr + at, mask=mm, other=0.0))
    tl.store(y_ptr + at, tl.join(xr * wr - xi * wi, xr * wi + xi * wr), mask=mm)


@triton.jit
def kahan_row_sum(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    """out[r] = sum of row r in fp64 with Kahan compensation across the chunks."""
    base = tl.program_id(0) * N
    lanes = tl.arange(0, BLOCK)
    total = tl.zeros([BLOCK], dtype=tl.float64)
    comp = tl.zeros([BLOCK], dtype=tl.float64)
    for n0 in tl.range(0, N, BLOCK):
        x = tl.load(x_ptr + base + n0 + lanes, mask=n0 + lanes < N, other=0.0)
        y = x - comp
        t = total + y
        comp = (t - total) - y
        total = t
    tl.store(out_ptr + tl.program_id(0), tl.sum(total, axis=0))
