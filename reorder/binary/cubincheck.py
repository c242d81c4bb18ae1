"""What a cubin's kernels claim, checked before anything (nvdisasm, a move, a launch) trusts it:
relocations, register counts, shared memory and the parameter table.

Fuzzed and hand-edited cubins showed what a reader that trusts its input does: a register count
of 60,437 or 4 GiB of shared memory passed `verify` and reached `stalls`' output; a register
count of 0 divided by zero in the load batcher's occupancy note; a parameter at offset 0xFFFF
was accepted; a relocation of `.debug_frame` whose addend points past its function made
nvdisasm spin for over 11 minutes. Each check here names the table and the entry that is
wrong, as one InputError line. (The ELF's own tables: reorder.binary.elfcheck.)
"""

from __future__ import annotations

import itertools
import struct

from reorder.base.errors import InputError
from reorder.binary.arches import ARCHS
from reorder.binary.elf import SHT_REL, SHT_RELA, Section, Symbol
from reorder.binary.elfcheck import defined_in
from reorder.binary.nvinfo import ATTR_CBANK_PARAM_SIZE, FMT_SVAL


def check_relocations(data: bytes, sections: tuple[Section, ...], symbols: tuple[Symbol, ...], where: str) -> None:
    """Every relocation patches a byte of its section and points, through a symbol that
    exists, inside the section that symbol is defined in. nvdisasm follows these without
    bounds (the `.rela.debug_frame` spins)."""
    for s in sections:
        if s.type in (SHT_RELA, SHT_REL):
            _check_relocations(data, s, sections, symbols, where)


def _check_relocations(data: bytes, rel: Section, sections, symbols: tuple[Symbol, ...], where: str) -> None:
    if not 0 < rel.info < len(sections):
        raise InputError(
            f"{where}: corrupt {rel.name or 'relocation section'}: it applies to section {rel.info} of {len(sections)}"
        )
    target = sections[rel.info]
    width = 24 if rel.type == SHT_RELA else 16
    if rel.size % width:
        raise InputError(f"{where}: corrupt {rel.label}: {rel.size} bytes, not a whole number of {width}-byte records")
    for n, pos in enumerate(range(rel.offset, rel.offset + rel.size - width + 1, width)):
        r_offset, r_info = struct.unpack_from("<QQ", data, pos)
        symbol = r_info >> 32
        bad = ""
        if r_offset >= target.size:
            bad = f"patches byte {r_offset} of {target.name}, which holds {target.size}"
        elif symbol >= max(len(symbols), 1):
            bad = f"names symbol {symbol}; .symtab holds {len(symbols)}"
        elif rel.type == SHT_RELA and (home := defined_in(sections, symbols[symbol].shndx)) is not None:
            addend = struct.unpack_from("<q", data, pos + 16)[0]
            place = symbols[symbol].value + addend
            if not 0 <= place <= home.size:
                bad = f"points to byte {place} of {home.name}, which holds {home.size}"
        if bad:
            raise InputError(f"{where}: corrupt {rel.name}: relocation {n} {bad}")


def check_kernel_limits(kernel, arch: int, where: str) -> None:
    """Register count, shared memory and parameter bytes within what the architecture allows
    (a mutated header would otherwise pass `verify` as legal and reach a written output)."""
    limits = ARCHS[arch]  # registers, shared memory, parameter bytes, with their source (reorder.binary.arches)
    if not 1 <= kernel.regcount <= limits.registers:
        missing = " (no EIATTR_REGCOUNT for it?)" if kernel.regcount == 0 else " (corrupt EIATTR_REGCOUNT?)"
        raise InputError(
            f"{where}: {kernel.name}: register count {kernel.regcount}; sm_{arch} allows 1 to "
            f"{limits.registers}{missing}"
        )
    if kernel.shared_bytes > limits.shared_bytes:
        raise InputError(
            f"{where}: {kernel.name}: {kernel.shared_bytes} bytes of shared memory; sm_{arch} allows "
            f"at most {limits.shared_bytes} per block (corrupt .nv.shared.{kernel.name}?)"
        )
    check_params(kernel.name, kernel.params, param_space(kernel.attrs, limits.param_bytes), where)


def param_space(attrs, arch_bytes: int) -> int:
    """The bytes of the kernel's parameter space: EIATTR_CBANK_PARAM_SIZE where the kernel has
    one (every kernel with parameters of the corpus does), else what the arch allows."""
    sizes = [a.value for a in attrs if a.attr == ATTR_CBANK_PARAM_SIZE and a.fmt != FMT_SVAL]
    return min(sizes[0], arch_bytes) if sizes else arch_bytes


def check_params(name: str, params, space: int, where: str) -> None:
    """EIATTR_KPARAM_INFO: ordinals 0..n-1 each once; each parameter inside the parameter space;
    no two overlapping (a launch packs arguments at these offsets)."""
    ordinals = sorted(p.ordinal for p in params)
    if ordinals != list(range(len(params))):
        raise InputError(
            f"{where}: {name}: parameter ordinals {ordinals}; {len(params)} parameters are numbered "
            "0 to n-1, each once (corrupt EIATTR_KPARAM_INFO?)"
        )
    for p in params:
        if p.offset + p.size > space:
            raise InputError(
                f"{where}: {name}: parameter {p.ordinal} (bytes {p.offset} to {p.offset + p.size}) ends past "
                f"its {space}-byte parameter space (corrupt EIATTR_KPARAM_INFO?)"
            )
    spans = sorted((p.offset, p.offset + p.size, p.ordinal) for p in params if p.size)
    for (start, end, first), (later, _, second) in itertools.pairwise(spans):
        if later < end:
            raise InputError(
                f"{where}: {name}: parameters {first} (bytes {start} to {end}) and {second} (from byte "
                f"{later}) overlap (corrupt EIATTR_KPARAM_INFO?)"
            )
