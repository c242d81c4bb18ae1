"""Cross-entropy forward over a vocabulary row: loss = logsumexp(logits) - logits[target].

One program per row. The row is read once, in BLOCK-wide chunks of a `tl.range` loop: each
chunk's maximum is reduced across the program (a block reduction every iteration), the
running sum of exp(x - max) is rescaled when the maximum grows, and the chunk's exps are
summed at the new maximum. After the loop the target's logit is read once. The loop's
loads feed no dot, so only `tl.range(..., num_stages=LOOP_STAGES)` pipelines them. Logits
fp16 or fp32, statistics in fp32; writes the loss and the row's logsumexp (what a backward
pass needs).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def xent_forward(
    logits_ptr,
    target_ptr,
    loss_ptr,
    lse_ptr,
    n_vocab,
    row_stride,
    BLOCK: tl.constexpr,
    LOOP_STAGES: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    logits = logits_ptr + row * row_stride
    lanes = tl.arange(0, BLOCK)
    top = float("-inf")
    total = 0.0
    for start in tl.range(0, n_vocab, BLOCK, num_stages=LOOP_STAGES):
        cols = start + lanes
        x = tl.load(logits + cols, mask=cols < n_vocab, other=float("-inf")).to(tl.float32)
        new_top = tl.maximum(top, tl.max(x, axis=0))
        total = total * tl.exp(top - new_top) + tl.sum(tl.exp(x - new_top), axis=0)
        top = new_top
    lse = top + tl.log(total)
    target = tl.load(target_ptr + row)
    picked = tl.load(logits + target).to(tl.float32)
    tl.store(loss_ptr + row, lse - picked)
    tl.store(lse_ptr + row, lse)
