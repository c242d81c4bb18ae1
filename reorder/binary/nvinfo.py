"""Decode and re-encode `.nv.info` records (EIATTR attributes).

A record is `fmt:u8, id:u8` then either a u16 value (NVAL/BVAL/HVAL) or, for SVAL
(fmt 4), a u16 byte length and a payload. Several attributes list instruction offsets
inside the kernel's `.text`; a tool that moves instructions must remap and re-sort those
lists, which is why they are singled out here. Ids and names: NVIDIA's attribute
enumeration as recovered by the denvdis project (reference/sass_hopper_facts.md §6).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from reorder.base.errors import InputError

FMT_SVAL = 4

EIATTR_NAMES: dict[int, str] = {
    0x01: "PAD",
    0x02: "IMAGE_SLOT",
    0x03: "JUMPTABLE_RELOCS",
    0x04: "CTAIDZ_USED",
    0x05: "MAX_THREADS",
    0x06: "IMAGE_OFFSET",
    0x07: "IMAGE_SIZE",
    0x08: "TEXTURE_NORMALIZED",
    0x09: "SAMPLER_INIT",
    0x0A: "PARAM_CBANK",
    0x0B: "SMEM_PARAM_OFFSETS",
    0x0C: "CBANK_PARAM_OFFSETS",
    0x0D: "SYNC_STACK",
    0x0E: "TEXID_SAMPID_MAP",
    0x0F: "EXTERNS",
    0x10: "REQNTID",
    0x11: "FRAME_SIZE",
    0x12: "MIN_STACK_SIZE",
    0x13: "SAMPLER_FORCE_UNNORMALIZED",
    0x14: "BINDLESS_IMAGE_OFFSETS",
    0x15: "BINDLESS_TEXTURE_BANK",
    0x16: "BINDLESS_SURFACE_BANK",
    0x17: "KPARAM_INFO",
    0x18: "SMEM_PARAM_SIZE",
    0x19: "CBANK_PARAM_SIZE",
    0x1A: "QUERY_NUMATTRIB",
    0x1B: "MAXREG_COUNT",
    0x1C: "EXIT_INSTR_OFFSETS",
    0x1D: "S2RCTAID_INSTR_OFFSETS",
    0x1E: "CRS_STACK_SIZE",
    0x1F: "NEED_CNP_WRAPPER",
    0x20: "NEED_CNP_PATCH",
    0x21: "EXPLICIT_CACHING",
    0x22: "ISTYPEP_USED",
    0x23: "MAX_STACK_SIZE",
    0x24: "SUQ_USED",
    0x25: "LD_CACHEMOD_INSTR_OFFSETS",
    0x26: "LOAD_CACHE_REQUEST",
    0x27: "ATOM_SYS_INSTR_OFFSETS",
    0x28: "COOP_GROUP_INSTR_OFFSETS",
    0x29: "COOP_GROUP_MASK_REGIDS",
    0x2A: "SW1850030_WAR",
    0x2B: "WMMA_USED",
    0x2C: "HAS_PRE_V10_OBJECT",
    0x2D: "ATOMF16_EMUL_INSTR_OFFSETS",
    0x2E: "ATOM16_EMUL_INSTR_REG_MAP",
    0x2F: "REGCOUNT",
    0x30: "SW2393858_WAR",
    0x31: "INT_WARP_WIDE_INSTR_OFFSETS",
    0x32: "SHARED_SCRATCH",
    0x33: "STATISTICS",
    0x34: "INDIRECT_BRANCH_TARGETS",
    0x35: "SW2861232_WAR",
    0x36: "SW_WAR",
    0x37: "CUDA_API_VERSION",
    0x38: "NUM_MBARRIERS",
    0x39: "MBARRIER_INSTR_OFFSETS",
    0x3A: "COROUTINE_RESUME_ID_OFFSETS",
    0x3B: "SAM_REGION_STACK_SIZE",
    0x3C: "PER_REG_TARGET_PERF_STATS",
    0x3D: "CTA_PER_CLUSTER",
    0x3E: "EXPLICIT_CLUSTER",
    0x3F: "MAX_CLUSTER_RANK",
    0x40: "INSTR_REG_MAP",
    0x41: "RESERVED_SMEM_USED",
    0x42: "RESERVED_SMEM_0_SIZE",
    0x43: "UCODE_SECTION_DATA",
    0x44: "UNUSED_LOAD_BYTE_OFFSET",
    0x45: "KPARAM_INFO_V2",
    0x46: "SYSCALL_OFFSETS",
    0x47: "SW_WAR_MEMBAR_SYS_INSTR_OFFSETS",
    0x48: "GRAPHICS_GLOBAL_CBANK",
    0x49: "SHADER_TYPE",
    0x4A: "VRC_CTA_INIT_COUNT",
    0x4B: "TOOLS_PATCH_FUNC",
    0x4C: "NUM_BARRIERS",
    0x4D: "TEXMODE_INDEPENDENT",
    0x4E: "PERF_STATISTICS",
    0x4F: "AT_ENTRY_FRAGMENTS",
    0x50: "SPARSE_MMA_MASK",
    0x51: "TCGEN05_1CTA_USED",
    0x52: "TCGEN05_2CTA_USED",
    0x53: "GEN_ERRBAR_AT_EXIT",
    0x54: "REG_RECONFIG",
    0x55: "ANNOTATIONS",
    0x57: "STACK_CANARY_TRAP_OFFSETS",
    0x58: "STUB_FUNCTION_KIND",
    0x59: "LOCAL_CTA_ASYNC_STORE_OFFSETS",
    0x5A: "MERCURY_FINALIZER_OPTIONS",
    0x5B: "BLOCKS_ARE_CLUSTERS",
    0x5C: "SANITIZE",
    0x5D: "SYSCALLS_FALLBACK",
    0x5E: "CUDA_REQ",
    0x5F: "MERCURY_ISA_VERSION",
    0x60: "EXPORTED_FUNCTION",
    0x61: "RTCORE_ENTRY",
    0x62: "CLUSTER_LAUNCH_CONTROL_USED",
    0x63: "LAUNCH_PRE_REG_ALLOC",
    0x64: "MIN_PER_CTA_MEMORY_SIZE",
    0x65: "IGNOREOOB_CP_ASYNC_BULK_INSTR_OFFSETS",
    0x66: "LANGUAGE",
    0x67: "WAR5829587_NEEDED",
    0x68: "GRID_ATTRIBUTES",
    0x69: "STACK_OFFSET",
    0x6A: "RT_LIVESTATE_SASS_MAP",
    0x6B: "NVSAL_SW_WAR",
    0x6C: "INSTR_OFFSETS",
    0x6D: "PREEXIT_USED",
}

# Attributes whose SVAL payload is a plain list of u32 offsets into the kernel's .text.
OFFSET_LIST_ATTRS: frozenset[int] = frozenset(
    {0x1C, 0x1D, 0x25, 0x27, 0x28, 0x2D, 0x31, 0x39, 0x46, 0x47, 0x57, 0x59, 0x65, 0x6C}
)
ATTR_INDIRECT_BRANCH_TARGETS = 0x34
ATTR_KPARAM_INFO = 0x17
ATTR_EXIT_INSTR_OFFSETS = 0x1C
ATTR_REGCOUNT = 0x2F
ATTR_MAX_THREADS = 0x05
ATTR_REQNTID = 0x10
ATTR_FRAME_SIZE = 0x11
ATTR_MAX_STACK_SIZE = 0x23
ATTR_MIN_STACK_SIZE = 0x12
ATTR_CBANK_PARAM_SIZE = 0x19
ATTR_PARAM_CBANK = 0x0A
ATTR_MAXREG_COUNT = 0x1B
ATTR_NUM_BARRIERS = 0x4C


@dataclass(frozen=True, slots=True)
class NvAttr:
    """One `.nv.info` record: where it sits in its section, its format, id and payload."""

    offset: int
    fmt: int
    attr: int
    payload: bytes  # SVAL payload, or the 2 value bytes of the short forms

    @property
    def name(self) -> str:
        return "EIATTR_" + EIATTR_NAMES.get(self.attr, f"UNKNOWN_{self.attr:#x}")

    @property
    def value(self) -> int:
        """The u16 value of a short record (NVAL/BVAL/HVAL)."""
        return struct.unpack_from("<H", self.payload)[0] if self.fmt != FMT_SVAL else -1

    def words(self) -> tuple[int, ...]:
        """The SVAL payload as u32 words (the usual shape of lists and per-symbol values)."""
        count = len(self.payload) // 4
        return struct.unpack_from(f"<{count}I", self.payload)

    def encode(self) -> bytes:
        if self.fmt == FMT_SVAL:
            return struct.pack("<BBH", self.fmt, self.attr, len(self.payload)) + self.payload
        return struct.pack("<BB", self.fmt, self.attr) + self.payload


@dataclass(frozen=True, slots=True)
class KernelParam:
    """One kernel parameter from EIATTR_KPARAM_INFO: its ordinal, cbank offset and byte size."""

    ordinal: int
    offset: int
    size: int
    log_alignment: int


@dataclass(frozen=True, slots=True)
class IndirectBranch:
    """An indirect branch (BRX/JMX) and the offsets it may jump to."""

    branch: int
    header: bytes  # the two u16 fields whose meaning is undocumented; carried unchanged
    targets: tuple[int, ...]


def parse_nv_info(data: bytes, where: str) -> tuple[NvAttr, ...]:
    """Every record of an `.nv.info` section, or InputError when a record runs past the end."""
    records: list[NvAttr] = []
    pos = 0
    while pos < len(data):
        if pos + 4 > len(data):
            raise InputError(f"{where}: truncated .nv.info record at byte {pos}")
        fmt, attr, short = struct.unpack_from("<BBH", data, pos)
        if fmt == FMT_SVAL:
            end = pos + 4 + short
            if end > len(data):
                raise InputError(f"{where}: .nv.info record {attr:#x} runs past the section end")
            records.append(NvAttr(pos, fmt, attr, bytes(data[pos + 4 : end])))
            pos = end
        elif fmt in (1, 2, 3):
            records.append(NvAttr(pos, fmt, attr, bytes(data[pos + 2 : pos + 4])))
            pos += 4
        else:
            raise InputError(f"{where}: unknown .nv.info record format {fmt} at byte {pos}")
    return tuple(records)


def encode_nv_info(records: tuple[NvAttr, ...]) -> bytes:
    """Inverse of parse_nv_info."""
    return b"".join(record.encode() for record in records)


def decode_kparam(record: NvAttr) -> KernelParam:
    """KPARAM_INFO payload: u32 index, u16 ordinal, u16 offset, u32 packed (size in bits 31:18)."""
    _index, ordinal, offset, packed = struct.unpack_from("<IHHI", record.payload)
    return KernelParam(ordinal=ordinal, offset=offset, size=packed >> 18, log_alignment=packed & 0xFF)


def decode_indirect_branches(record: NvAttr) -> tuple[IndirectBranch, ...]:
    """INDIRECT_BRANCH_TARGETS: repeated {u32 branch, u16, u16, u32 count, count x u32 target}."""
    data, pos, out = record.payload, 0, []
    while pos + 12 <= len(data):
        branch = struct.unpack_from("<I", data, pos)[0]
        header = data[pos + 4 : pos + 8]
        count = struct.unpack_from("<I", data, pos + 8)[0]
        end = pos + 12 + 4 * count
        if end > len(data):
            raise InputError("INDIRECT_BRANCH_TARGETS record runs past its payload")
        out.append(IndirectBranch(branch, header, struct.unpack_from(f"<{count}I", data, pos + 12)))
        pos = end
    return tuple(out)


def encode_indirect_branches(branches: tuple[IndirectBranch, ...]) -> bytes:
    parts = [
        struct.pack("<I", b.branch) + b.header + struct.pack(f"<I{len(b.targets)}I", len(b.targets), *b.targets)
        for b in branches
    ]
    return b"".join(parts)


def remap_record(record: NvAttr, new_offset_of: dict[int, int]) -> NvAttr:
    """The record with every instruction offset it holds mapped through `new_offset_of`.

    Offset lists are re-sorted (the driver expects them sorted); records that hold no
    offsets come back unchanged, the same object.
    """
    if record.attr in OFFSET_LIST_ATTRS and record.fmt == FMT_SVAL:
        old = record.words()
        new = tuple(sorted(new_offset_of.get(o, o) for o in old))
        if new == tuple(old):
            return record
        return NvAttr(record.offset, record.fmt, record.attr, struct.pack(f"<{len(new)}I", *new))
    if record.attr == ATTR_INDIRECT_BRANCH_TARGETS and record.fmt == FMT_SVAL:
        branches = decode_indirect_branches(record)
        moved = tuple(
            IndirectBranch(
                new_offset_of.get(b.branch, b.branch), b.header, tuple(new_offset_of.get(t, t) for t in b.targets)
            )
            for b in branches
        )
        if moved == branches:
            return record
        return NvAttr(record.offset, record.fmt, record.attr, encode_indirect_branches(moved))
    return record
