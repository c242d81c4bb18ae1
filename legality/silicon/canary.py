"""Does the GPU run the `.text` reorder wrote? A canary build that must change the output.

From sm_100 on, CUDA 13 writes each kernel twice into a cubin: as SASS in `.text.<kernel>` and as
Capsule Mercury in `.nv.capmerc.text.<kernel>` (with its own `.nv.merc.*` tables), from which a
driver can finalize SASS itself at load time. reorder patches `.text` only. If a driver loaded the
Mercury copy instead, every stall sweep would read the compiler's schedule at every stall: no
variant would ever be wrong, and the sweep would write floors of 1, a silent wrong answer in the
tables (whether drivers do so has not been observed here: there is no Blackwell GPU).

So every probe build carries a canary: the compiler's cubin with its first unguarded global store
turned off (guard `@!PT`: never executes; nothing else changes). Run on the GPU beside the original,
its output must differ. If it does not, the patched `.text` is not what ran, and the probe refuses
to write a table.
"""

from __future__ import annotations

from reorder.base.errors import ReorderError
from reorder.binary.cubin import parse_cubin
from reorder.sass.model import KernelCode, decode_kernel
from reorder.sass.writer import patch_kernel

GUARD_SHIFT, GUARD_BITS = 12, 0xF  # Pg [14:12] with its negation at bit 15
ALWAYS, NEVER = 0x7, 0xF  # @PT (no guard) and @!PT


def canary_bytes(code: KernelCode) -> bytes:
    """The cubin of `code` with its first unguarded STG never executed, checked by decoding it."""
    ins = list(code.instructions)
    index = next(
        (i for i, x in enumerate(ins) if x.base == "STG" and not x.guard and _guard(x.word) == ALWAYS),
        None,
    )
    if index is None:
        raise ReorderError(f"{code.kernel.name}: no unguarded global store to silence for the canary")
    ins[index] = ins[index].with_word(ins[index].word & ~(GUARD_BITS << GUARD_SHIFT) | NEVER << GUARD_SHIFT)
    data = patch_kernel(code.cubin, code.kernel, ins)
    check = decode_kernel(parse_cubin(data, "canary"), code.kernel.name).instructions[index]
    if check.guard != "@!PT" or check.opcode != ins[index].opcode:
        raise ReorderError(f"{code.kernel.name}: the canary store reads as {check.text!r}, not '@!PT ...'")
    return data


def _guard(word: int) -> int:
    return word >> GUARD_SHIFT & GUARD_BITS
