"""The builds every path of reorder.triton makes from a Triton cubin without a launch: the
static SASS moves and the wgmma PTX step, both verified, and where results are kept. The
stages hook's rewrite (reorder.triton.rewrite) and the twin lists (reorder.triton.twins) use
them; neither imports the other's module for them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from reorder.base.diskcache import cache_root
from reorder.base.errors import LegalityError, NotApplicable

MMA = "wgmma.mma_async"  # what reorder.ptx.moves.wgmma moves the waits of (its MMA)


def store_dir(kind: str, root: Path | None = None) -> Path:
    return (root if root is not None else cache_root()) / "triton" / kind


def moves_binary(cubin: bytes, noalias: bool) -> bytes:
    """LoadBatch then stall cuts (reorder.build.pipeline), verified against the compiler's own
    schedule; the original when the static model predicts no gain.

    No SliceBatch here: nothing this returns is checked on a GPU unless the user calls
    `verify`, and on an H200 (2026-11-30, benchmarks/results/2026-11-30_verifier_rules_triton_loops) three
    Triton candidates whose slice batches renamed 51-117 instructions computed wrong bytes or
    raised an illegal instruction while the verifier accepted them. The cause was found a day
    later (a register overwritten before an op without a read scoreboard had read it; the
    verifier now requires the wait, and the three, repaired by that alone, were identical), but
    slice batches have not been checked on silicon in numbers since, so this path, whose output
    no GPU checks, still leaves them out. Without them: 561 of 561 Triton checks identical."""
    from legality.verify import verify_kernel
    from reorder.analysis.costmodel import kernel_cycles
    from reorder.binary.cubin import parse_cubin
    from reorder.build.pipeline import batch_loads, cut_stalls
    from reorder.sass.model import decode_kernel, prime_listing

    code = decode_kernel(parse_cubin(cubin, "Triton cubin"))
    batched = batch_loads(code, noalias, slices=False)
    final = cut_stalls(batched.after).after
    verdict = verify_kernel(final, original=code.instructions)
    if not verdict.ok:
        raise LegalityError(f"verifier rejected the result: {verdict.violations[0].line()}", verdict.violations)
    if kernel_cycles(final.instructions) > kernel_cycles(code.instructions):
        return cubin
    if len(final.cubin.kernels) == 1 and len(final.records) == len(final.instructions):
        # the records the verifier judged (read back from the written words): the build's
        # listing, so the twin list's prediction of it starts no nvdisasm of its own
        prime_listing(final.cubin.data, {final.kernel.name: list(final.records)})
    return final.cubin.data


def async_wgmma(ptx: str, compile_cubin: Callable[[str], bytes]) -> tuple[bytes, str] | None:
    """reorder.ptx.moves.wgmma on Triton's PTX (every kernel, every loop-exit wait it can move),
    compiled by the config's own cubin stage and verified as a compiler's cubin is: (the
    cubin, a note), or None when nothing moves (every Triton kernel whose wgmma ptxas does
    not serialize, and every kernel without wgmma).

    Safe without a GPU in the same sense as the SASS moves: nothing is reordered, the waits
    only get stronger where PTX's register rules need it, and the tensor-core ops and their
    order are unchanged; on the H200 the feed-forward's candidates were byte-identical
    (benchmarks/results, README)."""
    if MMA not in ptx:  # no wgmma to move (WgmmaAsync offers none): skip parsing the PTX
        return None
    from legality.verify import verify_kernel
    from reorder.binary.cubin import parse_cubin
    from reorder.ptx.model.model import parse_module
    from reorder.ptx.moves.wgmma import WgmmaAsync
    from reorder.sass.model import decode_kernel

    module = parse_module(ptx)
    moved, loops = module, 0
    for kernel in module.kernels:
        for move in WgmmaAsync.instances(moved, kernel.name):
            try:
                moved, loops = move.apply(moved), loops + 1
            except NotApplicable:  # an earlier move of this kernel changed what this one judged
                continue
    if loops == 0:
        return None
    cubin = compile_cubin(moved.text)
    code = decode_kernel(parse_cubin(cubin, "Triton cubin"))
    verdict = verify_kernel(code, original=code.instructions)
    if not verdict.ok:
        raise LegalityError(
            f"verifier rejected the wgmma move's cubin: {verdict.violations[0].line()}", verdict.violations
        )
    return cubin, f"wgmma waits made exact in {loops} loop(s), so ptxas keeps the tensor-core ops asynchronous"
