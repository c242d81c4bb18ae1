"""A row softmax written over its input: the in-place loop shape of a cross-entropy gradient.

Pass 1 walks the row in BLOCK chunks for its running maximum and sum of exponentials; pass 2
walks it again and overwrites each chunk with exp(x - max) / sum. Pass 2 reads and writes one
pointer, so only the affine address proof (reorder.ptx.analyses.affine) lets its loads run
rounds early. `python tests/corpus/triton/inplace_softmax.py` remakes the PTX beside it
(Triton for sm_90, no GPU needed).
"""

from __future__ import annotations

import sys
from pathlib import Path

import triton
import triton.language as tl


@triton.jit
def softmax_in_place(x_ptr, row_stride, n_cols, BLOCK: tl.constexpr):
    row = x_ptr + tl.program_id(0).to(tl.int64) * row_stride
    lanes = tl.arange(0, BLOCK)
    top = float("-inf")
    total = 0.0
    for start in range(0, n_cols, BLOCK):
        x = tl.load(row + start + lanes, mask=start + lanes < n_cols, other=float("-inf")).to(tl.float32)
        new_top = tl.maximum(top, tl.max(x, axis=0))
        total = total * tl.exp(top - new_top) + tl.sum(tl.exp(x - new_top), axis=0)
        top = new_top
    for start in range(0, n_cols, BLOCK):
        mask = start + lanes < n_cols
        x = tl.load(row + start + lanes, mask=mask, other=0.0).to(tl.float32)
        tl.store(row + start + lanes, (tl.exp(x - top) / total).to(x_ptr.dtype.element_ty), mask=mask)


def ptx() -> str:
    """Triton's PTX of the kernel for sm_90: bf16 rows, BLOCK 8192, 8 warps, 16-aligned."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    aligned = {(k,): [["tt.divisibility", 16]] for k in range(3)}  # pointer, stride and length multiples of 16
    signature = {"x_ptr": "*bf16", "row_stride": "i32", "n_cols": "i32", "BLOCK": "constexpr"}
    source = ASTSource(softmax_in_place, signature, constexprs={"BLOCK": 8192}, attrs=aligned)
    return triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": 8}).asm["ptx"]


if __name__ == "__main__":
    out = Path(__file__).with_name("inplace_softmax_sm90.ptx")
    out.write_text(ptx())
    print(out, file=sys.stderr)
