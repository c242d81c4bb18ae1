"""Residual add, then LayerNorm: h = x + r is written out (the new residual stream) and read
back twice, y = (h - mean(h)) * rstd * w + b.

One program per row, three `tl.range` passes over BLOCK-wide chunks: the first adds, rounds
h to the input type, stores it and sums it; the second reads h back and sums the squared
deviations from the mean (two-pass variance, fp32); the third reads h back again and writes
y. The program reads exactly the elements it wrote (the same chunk layout in every pass),
so the later passes' loads of h must stay after the first pass's stores of it. The mean and
rstd of each row are written for a backward pass.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def add_layernorm(
    x_ptr,
    r_ptr,
    h_ptr,
    w_ptr,
    b_ptr,
    y_ptr,
    mean_ptr,
    rstd_ptr,
    n_cols,
    row_stride,
    eps,
    BLOCK: tl.constexpr,
    LOOP_STAGES: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * row_stride
    r_row = r_ptr + row * row_stride
    h_row = h_ptr + row * row_stride
    y_row = y_ptr + row * row_stride
    lanes = tl.arange(0, BLOCK)
    total = tl.zeros([BLOCK], tl.float32)
    for start in tl.range(0, n_cols, BLOCK, num_stages=LOOP_STAGES):
        cols = start + lanes
        mask = cols < n_cols
        h = tl.load(x_row + cols, mask=mask, other=0.0) + tl.load(r_row + cols, mask=mask, other=0.0)
        tl.store(h_row + cols, h, mask=mask)
        total += h.to(tl.float32)
    mean = tl.sum(total, axis=0) / n_cols
    squares = tl.zeros([BLOCK], tl.float32)
    for start in tl.range(0, n_cols, BLOCK, num_stages=LOOP_STAGES):
        cols = start + lanes
        mask = cols < n_cols
        h = tl.load(h_row + cols, mask=mask, other=0.0).to(tl.float32)
        d = tl.where(mask, h - mean, 0.0)
        squares += d * d
    rstd = tl.rsqrt(tl.sum(squares, axis=0) / n_cols + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    for start in tl.range(0, n_cols, BLOCK, num_stages=LOOP_STAGES):
        cols = start + lanes
        mask = cols < n_cols
        h = tl.load(h_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + cols, ((h - mean) * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)
