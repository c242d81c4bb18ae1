"""Inclusive prefix sum along each row, y[i] = x[0] + ... + x[i], in fp32.

One program per row walks it in BLOCK-wide chunks (a `tl.range` loop): the chunk's scan
(`tl.cumsum`) plus the running total of the chunks before it is written, then the chunk's
sum is added to the total. `@triton.heuristics` sets EVEN_N when the row length is a
multiple of BLOCK, and the loads and stores then carry no mask. Input fp16 or fp32, output
fp32 (a long row's sums outgrow fp16's precision).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.heuristics({"EVEN_N": lambda args: args["n_cols"] % args["BLOCK"] == 0})
@triton.jit
def cumsum_rows(
    x_ptr,
    y_ptr,
    n_cols,
    x_row_stride,
    y_row_stride,
    BLOCK: tl.constexpr,
    EVEN_N: tl.constexpr,
    LOOP_STAGES: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    lanes = tl.arange(0, BLOCK)
    carry = 0.0
    for start in tl.range(0, n_cols, BLOCK, num_stages=LOOP_STAGES):
        cols = start + lanes
        if EVEN_N:
            x = tl.load(x_row + cols).to(tl.float32)
        else:
            x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        scan = tl.cumsum(x, axis=0) + carry
        if EVEN_N:
            tl.store(y_row + cols, scan)
        else:
            tl.store(y_row + cols, scan, mask=cols < n_cols)
        carry += tl.sum(x, axis=0)
