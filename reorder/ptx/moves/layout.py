"""Lay a loop out from its header: the text order the loop moves work on.

The loop moves (Prefetch, UnrollBatch) take a loop whose blocks run from its header to its
latch in the text, entered by falling into the header (reorder.ptx.analyses.counted.shape_refusal).
LLVM often places part of a loop above its header instead: when the body holds a branch (an
`if`, an inlined `tanhf` or `erff` with its slow path), the blocks after the branch, latch
included, can come first, and the block before them jumps down to the header:

    P:   ...                      P:   ...
         bra.uni  H;                                      (falls into H)
    S:   ... (loop blocks,  -->   H:   ...  (header .. Z)
         latch: @%p bra H;        Z:   ...  bra.uni ...;
         bra.uni  EXIT;           S:   ... (as before, latch last)
    H:   ...  (header .. Z)            bra.uni  EXIT;
    Z:   ...  bra.uni ...;        M:   ...
    M:   ...

Every block keeps its successors: P's jump to H becomes its fall-through, and both Z and the
end of S leave by an unconditional branch (required), so nothing falls into or out of the
moved text. Any other layout is returned as it is (the loop moves then say why they cannot
take it)."""

from __future__ import annotations

from reorder.ptx.analyses.cfg import Cfg
from reorder.ptx.model.model import Function, Statement

UNCONDITIONAL = ("bra", "ret", "exit", "trap")


def from_header(function: Function, header: str) -> Function:
    """`function` with the loop headed by `header` laid out from its header (see the module
    docstring), or `function` itself when it already is or the layout is not the one handled."""
    cfg = Cfg(function)
    loop = next((lp for lp in cfg.loops if header in cfg.blocks[lp.header].labels), None)
    if loop is None:
        return function
    h, blocks = loop.header, sorted(loop.blocks)
    above, below = [b for b in blocks if b < h], [b for b in blocks if b >= h]
    if not above or below != list(range(h, below[-1] + 1)) or above[0] == 0:
        return function
    body = function.body
    pre, first, z = above[0] - 1, above[0], below[-1]
    jump = cfg.blocks[pre].terminator
    if jump is None or not _jumps_to(body[jump], header) or _falls_through(cfg, body, h - 1):
        return function
    outside = [p for p in cfg.graph.predecessors(h) if p not in loop.blocks]
    if outside != [pre] or any(s.kind in ("open", "close") for s in body[cfg.blocks[pre].start : cfg.blocks[z].end]):
        return function
    if _falls_through(cfg, body, z):
        return function  # a jump out of the loop text would sit between its blocks
    moved = body[cfg.blocks[first].start : cfg.blocks[h].start]
    head = body[: cfg.blocks[first].start]
    head = head[:jump] + head[jump + 1 :]
    return function.with_body(
        (*head, *body[cfg.blocks[h].start : cfg.blocks[z].end], *moved, *body[cfg.blocks[z].end :])
    )


def _jumps_to(s: Statement, label: str) -> bool:
    return s.ins is not None and s.ins.base == "bra" and s.ins.guard is None and s.ins.operands[-1] == label


def _falls_through(cfg: Cfg, body, b: int) -> bool:
    """Block b may continue into the block after it."""
    term = cfg.blocks[b].terminator
    ins = body[term].ins if term is not None else None
    return ins is None or ins.base not in UNCONDITIONAL or ins.guard is not None
