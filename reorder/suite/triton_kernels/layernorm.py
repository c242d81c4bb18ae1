"""LayerNorm over rows, y = (x - mean) * rstd * w + b, also writing each row's mean and rstd.

Looped over BLOCK-wide chunks: the first pass accumulates the sum and the sum of squares per
lane (fp32), the variance is E[x^2] - mean^2 (clamped at 0), the second pass reads x, w and
b again and writes y. `tl.range(..., num_stages=LOOP_STAGES)` pipelines the chunk loads.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def layernorm_looped(
    x_ptr,
    w_ptr,
    b_ptr,
    y_ptr,
    mean_ptr,
    rstd_ptr,
    n_cols,
    x_row_stride,
    y_row_stride,
    eps,
    BLOCK: tl.constexpr,
    LOOP_STAGES: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    lanes = tl.arange(0, BLOCK)
    total = tl.zeros([BLOCK], tl.float32)
    squares = tl.zeros([BLOCK], tl.float32)
    for start in tl.range(0, n_cols, BLOCK, num_stages=LOOP_STAGES):
        cols = start + lanes
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        total += x
        squares += x * x
    mean = tl.sum(total, axis=0) / n_cols
    var = tl.maximum(tl.sum(squares, axis=0) / n_cols - mean * mean, 0.0)
    rstd = tl.rsqrt(var + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    for start in tl.range(0, n_cols, BLOCK, num_stages=LOOP_STAGES):
        cols = start + lanes
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + cols, ((x - mean) * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)
