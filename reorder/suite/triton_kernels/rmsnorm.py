"""RMSNorm, y = x / sqrt(mean(x^2) + eps) * w, one program per row; two shapes of kernel.

`rmsnorm_row`: the whole row in registers (BLOCK >= n_cols), one read of x and w.
`rmsnorm_looped`: BLOCK-wide chunks, a first pass summing squares and a second reading x
again with w; `tl.range(..., num_stages=LOOP_STAGES)` pipelines the chunk loads (the
kernel-level num_stages does nothing here: no dot). Arithmetic in fp32.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def rmsnorm_row(x_ptr, w_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    inv_rms = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * y_row_stride + cols, (x * inv_rms * w).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def rmsnorm_looped(
    x_ptr, w_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, eps, BLOCK: tl.constexpr, LOOP_STAGES: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    lanes = tl.arange(0, BLOCK)
    squares = tl.zeros([BLOCK], tl.float32)
    for start in tl.range(0, n_cols, BLOCK, num_stages=LOOP_STAGES):
        cols = start + lanes
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        squares += x * x
    inv_rms = tl.rsqrt(tl.sum(squares, axis=0) / n_cols + eps)
    for start in tl.range(0, n_cols, BLOCK, num_stages=LOOP_STAGES):
        cols = start + lanes
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + cols, (x * inv_rms * w).to(y_ptr.dtype.element_ty), mask=mask)
