"""Row softmax, online (one pass for the running maximum and sum, one to write).

Per lane of a BLOCK-wide vector the kernel keeps the largest value seen and the sum of
exp(x - that maximum), rescaling the sum whenever the maximum grows (Milakov and
Gimelshein's online normaliser); the lanes are combined once at the end. The second pass
reads the row again and writes exp(x - max) / sum. Loads feed no dot, so only
`tl.range(..., num_stages=LOOP_STAGES)` pipelines them. Inputs fp16 or fp32, arithmetic in
fp32, output in the input's type.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def softmax_rows(x_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, BLOCK: tl.constexpr, LOOP_STAGES: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    lanes = tl.arange(0, BLOCK)
    run_max = tl.full([BLOCK], float("-inf"), tl.float32)
    run_sum = tl.zeros([BLOCK], tl.float32)
    for start in tl.range(0, n_cols, BLOCK, num_stages=LOOP_STAGES):
        cols = start + lanes
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        new_max = tl.maximum(run_max, x)
        shift = tl.where(new_max == float("-inf"), 0.0, new_max)  # a lane with nothing yet stays at 0
        run_sum = run_sum * tl.exp(run_max - shift) + tl.exp(x - shift)
        run_max = new_max
    row_max = tl.max(run_max, axis=0)
    row_sum = tl.sum(run_sum * tl.exp(run_max - row_max), axis=0)
    scale = 1.0 / row_sum
    for start in tl.range(0, n_cols, BLOCK, num_stages=LOOP_STAGES):
        cols = start + lanes
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + cols, (tl.exp(x - row_max) * scale).to(y_ptr.dtype.element_ty), mask=mask)
