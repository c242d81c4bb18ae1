"""Several cubins decoded by one nvdisasm process.

nvdisasm costs about 0.3 CPU-s a call however small its input (0.27 s for one 16-byte word
on the 2-core host, 0.32 s for a 14 KB cubin): a Triton twin list that compiles a dozen PTX
builds of a kernel Triton itself compiles in 0.1 CPU-s paid that per build. `prime` lays
the `.text` of every cubin it can read this way end to end in one raw buffer, lists it once
with `nvdisasm -b SMxx -json`, and holds each cubin's slice as its listing
(reorder.sass.model.prime_listing), so a later `decode_kernel` of that cubin starts no
process.

A raw listing is the cubin listing wherever the record depends on the word and its address
only: every record but the ones that name a symbol (a CALL's callee, a RET's function) or
that nvdisasm's cubin mode completes from the ELF (relocated words, jump tables). A cubin is
taken only when it has one function, no relocation in it and no indirect-branch table, and
its slice holds no CALL, RET, BRX, JMX or JMP; every other cubin keeps its own nvdisasm run.
Raw addresses count from the buffer's start: a PC-relative record (BRA, BSSY, BREAK) of the
cubin laid at byte S prints its target S bytes on, and is given back its own. tests/
test_together.py checks the primed listings equal nvdisasm's cubin listings record for record
on Triton's and nvcc's cubins.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from reorder.base.errors import ReorderError
from reorder.binary.cubin import Cubin, parse_cubin
from reorder.binary.nvinfo import ATTR_INDIRECT_BRANCH_TARGETS
from reorder.sass import model
from reorder.sass import opcodes as op

# Ops whose cubin-mode record can name what a raw buffer does not hold (a symbol, a table).
NAMED = frozenset({"CALL", "RET", "BRX", "JMX", "JMP"})
_HEX = re.compile(r"0x[0-9a-f]+")


def prime(datas: Sequence[bytes]) -> int:
    """Decode every cubin of `datas` that is not decoded yet and can be read raw, in one
    nvdisasm run per arch; returns how many got their listing this way."""
    held, todo = set(), []
    for data in datas:
        digest = hashlib.sha256(data).hexdigest()
        if digest in held or digest in model._PRIMED:
            continue
        held.add(digest)
        cubin = _readable(data)
        if cubin is not None:
            todo.append(cubin)
    done = 0
    for arch in sorted({c.arch for c in todo}):
        done += _prime_arch([c for c in todo if c.arch == arch], arch)
    return done


def _readable(data: bytes) -> Cubin | None:
    """The parsed cubin when a raw listing of its text is its listing (see the docstring)."""
    try:
        cubin = parse_cubin(data, "cubin")
    except ReorderError:
        return None
    if len(cubin.kernels) != 1:
        return None
    kernel = cubin.kernels[0]
    if kernel.relocations or kernel.attr(ATTR_INDIRECT_BRANCH_TARGETS) or not kernel.text or len(kernel.text) % 16:
        return None
    return cubin


def _prime_arch(cubins: Sequence[Cubin], arch: int) -> int:
    if len(cubins) < 2:  # one cubin: its own cubin-mode run costs the same
        return 0
    starts, blob = [], bytearray()
    for c in cubins:
        starts.append(len(blob))
        blob += c.kernels[0].text
    try:
        doc = model.nvdisasm_json(bytes(blob), ".bin", "-b", f"SM{arch}")
        records = doc[1][0]["sass-instructions"]
    except (ReorderError, IndexError, KeyError, TypeError):
        return 0
    if not isinstance(records, list) or len(records) != len(blob) // 16:
        return 0
    done = 0
    for cubin, start in zip(cubins, starts):
        kernel = cubin.kernels[0]
        first = start // 16
        listing = [_own_address(r, start) for r in records[first : first + len(kernel.text) // 16]]
        if all(r is not None for r in listing):
            model.prime_listing(cubin.data, {kernel.name: listing})  # type: ignore[dict-item]
            done += 1
    return done


def _own_address(record: object, start: int) -> dict | None:
    """`record` as nvdisasm lists it at `start` bytes earlier; None when a raw record cannot
    stand for the cubin's (see the docstring)."""
    if not isinstance(record, dict) or not isinstance(record.get("opcode"), str):
        return None
    base = record["opcode"].split(".")[0]
    if base in NAMED:
        return None
    if base not in op.PC_RELATIVE or start == 0:
        return record
    operands = record.get("operands", "")
    found = list(_HEX.finditer(operands)) if isinstance(operands, str) else []
    if not found or int(found[-1].group(), 16) < start:
        return None
    last = found[-1]
    own = f"0x{int(last.group(), 16) - start:x}"
    return {**record, "operands": operands[: last.start()] + own + operands[last.end() :]}
