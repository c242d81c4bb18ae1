"""A Triton kernel with an optional pointer argument (None makes it a constexpr), for
tests/test_triton_launch.py; Triton reads a kernel's source from its module file."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def add_optional(x_ptr, b_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if b_ptr is not None:
        x += tl.load(b_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x, mask=mask)
