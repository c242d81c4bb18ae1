"""`.nv.info` records checked for the shape reorder reads them in, before anything acts on them.

A record whose length lies can still parse to its section's end: an SVAL length 4 bytes longer
swallows the short record after it, and the section still ends on a record boundary. What
catches it is the shape of the records reorder reads: a KPARAM_INFO is 12 bytes, a per-symbol
REGCOUNT 8, an offset list whole u32 words that are instruction offsets inside the kernel's
code, an indirect-branch table that decodes exactly to its end. The shapes are those of every
record of the 103 cubins of the corpus, the suite and nvcc 13.0 builds (sm_75 to sm_90); the
offsets are instruction offsets because the mover remaps them as such (nvinfo.remap_record).
"""

from __future__ import annotations

from collections.abc import Iterable

from reorder.base.errors import InputError
from reorder.binary.elf import STT_FUNC, Symbol
from reorder.binary.nvinfo import (
    ATTR_CBANK_PARAM_SIZE,
    ATTR_FRAME_SIZE,
    ATTR_INDIRECT_BRANCH_TARGETS,
    ATTR_KPARAM_INFO,
    ATTR_MAX_STACK_SIZE,
    ATTR_MAXREG_COUNT,
    ATTR_MIN_STACK_SIZE,
    ATTR_NUM_BARRIERS,
    ATTR_PARAM_CBANK,
    ATTR_REGCOUNT,
    FMT_SVAL,
    OFFSET_LIST_ATTRS,
    NvAttr,
    decode_indirect_branches,
)

INSTRUCTION_BYTES = 16
# SVAL payload bytes of the records reorder reads (KPARAM_INFO: index, ordinal, offset, packed size;
# the per-symbol ones: symbol index, value; PARAM_CBANK: section symbol, offset, size).
PAYLOAD_BYTES: dict[int, int] = {
    ATTR_KPARAM_INFO: 12,
    ATTR_REGCOUNT: 8,
    ATTR_FRAME_SIZE: 8,
    ATTR_MIN_STACK_SIZE: 8,
    ATTR_MAX_STACK_SIZE: 8,
    ATTR_PARAM_CBANK: 8,
}
SHORT_ATTRS = frozenset({ATTR_CBANK_PARAM_SIZE, ATTR_MAXREG_COUNT, ATTR_NUM_BARRIERS})  # a u16 value, no payload
PER_SYMBOL_ATTRS = frozenset({ATTR_REGCOUNT, ATTR_FRAME_SIZE, ATTR_MIN_STACK_SIZE, ATTR_MAX_STACK_SIZE})


def check_shapes(records: Iterable[NvAttr], where: str) -> None:
    """Each record reorder reads has its one shape: the short form, or an SVAL payload of its size."""
    for r in records:
        if r.attr in SHORT_ATTRS and r.fmt == FMT_SVAL:
            raise InputError(
                f"{where}: {r.name} at byte {r.offset} has a {len(r.payload)}-byte payload; it is a u16 value"
            )
        if r.attr in PAYLOAD_BYTES and (r.fmt != FMT_SVAL or len(r.payload) != PAYLOAD_BYTES[r.attr]):
            size = f"{len(r.payload)} bytes" if r.fmt == FMT_SVAL else "a u16 value"
            raise InputError(
                f"{where}: {r.name} at byte {r.offset} holds {size}; it is {PAYLOAD_BYTES[r.attr]} "
                "(a record's length wrong?)"
            )
        if r.attr in OFFSET_LIST_ATTRS and (r.fmt != FMT_SVAL or len(r.payload) % 4):
            raise InputError(
                f"{where}: {r.name} at byte {r.offset} is not a list of u32 offsets (a record's length wrong?)"
            )


def check_global_records(records: tuple[NvAttr, ...], symbols: tuple[Symbol, ...], where: str) -> None:
    """The global `.nv.info`: shapes, and each per-symbol record (REGCOUNT, stack and frame
    sizes) names a function symbol, at most once per attribute."""
    check_shapes(records, where)
    seen: set[tuple[int, int]] = set()
    for r in records:
        if r.attr not in PER_SYMBOL_ATTRS:
            continue
        index = r.words()[0]
        if index >= len(symbols) or symbols[index].kind != STT_FUNC:
            what = (
                f"symbol {index} of {len(symbols)}"
                if index >= len(symbols)
                else f"{symbols[index].name or 'symbol'} ({index}), not a function"
            )
            raise InputError(f"{where}: {r.name} at byte {r.offset} is for {what}")
        if (r.attr, index) in seen:
            raise InputError(f"{where}: two {r.name} records for {symbols[index].name} (symbol {index})")
        seen.add((r.attr, index))


def check_kernel_records(records: tuple[NvAttr, ...], text_bytes: int, where: str) -> None:
    """A kernel's `.nv.info.<k>`: shapes, and every instruction offset it lists (offset lists,
    indirect branches and their targets) at an instruction of its `.text`."""
    check_shapes(records, where)
    for r in records:
        if r.attr in OFFSET_LIST_ATTRS:
            _check_offsets(r, r.words(), text_bytes, where)
        elif r.attr == ATTR_INDIRECT_BRANCH_TARGETS and r.fmt == FMT_SVAL:
            try:
                branches = decode_indirect_branches(r)
            except InputError as exc:
                raise InputError(f"{where}: {exc}") from None
            used = sum(12 + 4 * len(b.targets) for b in branches)
            if used != len(r.payload):
                raise InputError(
                    f"{where}: {r.name} at byte {r.offset}: {len(r.payload)} bytes, of which its "
                    f"branch tables use {used}"
                )
            _check_offsets(r, [o for b in branches for o in (b.branch, *b.targets)], text_bytes, where)


def _check_offsets(record: NvAttr, offsets, text_bytes: int, where: str) -> None:
    for offset in offsets:
        if offset % INSTRUCTION_BYTES or offset >= text_bytes:
            raise InputError(
                f"{where}: {record.name} at byte {record.offset} lists offset {offset:#x}, which is not an "
                f"instruction of the kernel's {text_bytes} bytes of code"
            )
