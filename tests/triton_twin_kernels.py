"""Small Triton kernels for the Triton tests (Triton reads a kernel's source from
its module file): a `tl.range` row sum under `@triton.heuristics`, small enough that its twin
list builds in seconds."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.heuristics({"EVEN_N": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def row_sums(x_ptr, y_ptr, n, BLOCK: tl.constexpr, EVEN_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    lanes = tl.arange(0, BLOCK)
    total = tl.zeros([BLOCK], tl.float32)
    for start in tl.range(0, n, BLOCK, num_stages=1):
        if EVEN_N:
            total += tl.load(x_ptr + row * n + start + lanes)
        else:
            total += tl.load(x_ptr + row * n + start + lanes, mask=start + lanes < n, other=0.0)
    tl.store(y_ptr + row, tl.sum(total, axis=0))


def broken_heuristic(args):
    return args["no_such_argument"]


@triton.heuristics({"EVEN_N": broken_heuristic})
@triton.jit
def row_sums_broken(x_ptr, y_ptr, n, BLOCK: tl.constexpr, EVEN_N: tl.constexpr):
    tl.store(y_ptr + tl.program_id(0), tl.sum(tl.load(x_ptr + tl.arange(0, BLOCK)), axis=0))


@triton.jit
def add_rows(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = x + y, a row per program (two inputs a caller may give the same tensor)."""
    row = tl.program_id(0).to(tl.int64)
    lanes = tl.arange(0, BLOCK)
    for start in tl.range(0, n, BLOCK, num_stages=1):
        cols = start + lanes
        x = tl.load(x_ptr + row * n + cols, mask=cols < n, other=0.0)
        y = tl.load(y_ptr + row * n + cols, mask=cols < n, other=0.0)
        tl.store(out_ptr + row * n + cols, x + y, mask=cols < n)


@triton.jit
def scale_in_place(x_ptr, n, BLOCK: tl.constexpr):
    """Each row overwritten chunk by chunk with 2x + 1: one pointer read and written in the
    loop, so its loads run early only by the affine address proof."""
    row = x_ptr + tl.program_id(0).to(tl.int64) * n
    lanes = tl.arange(0, BLOCK)
    for start in tl.range(0, n, BLOCK, num_stages=1):
        mask = start + lanes < n
        x = tl.load(row + start + lanes, mask=mask)
        tl.store(row + start + lanes, x * 2.0 + 1.0, mask=mask)


@triton.jit
def copy_tiles(src_desc, dst_desc, BLOCK: tl.constexpr):
    """Rows copied a tile at a time through host TMA descriptors, whose block shape the
    config's pre_hook sets (as Triton's persistent matmul and attention tutorials do)."""
    start = tl.program_id(0) * BLOCK
    tile = src_desc.load([start, 0]) + tl.zeros([BLOCK, 64], tl.float32)  # the shapes must agree
    dst_desc.store([start, 0], tile)
