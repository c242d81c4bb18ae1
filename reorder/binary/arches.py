"""The architectures reorder reads, as data: family, limits, and what has been checked on silicon.

An arch's *family* is the set of arches that share its instruction encoding and its reference
latency table (`legality/tables/sm_<family>.toml`): Turing and Ampere/Ada (sm_75..sm_89) are
family 80, Hopper (sm_90, sm_90a) 90, datacenter Blackwell (sm_100, sm_100a, sm_103) 100, and
consumer Blackwell (sm_120) 120. A cubin names its arch in e_flags without the `a` suffix: an
sm_100a cubin says sm_100 (nvcc 13.0, checked on the Blackwell corpus).

Limits: CUDA C++ Programming Guide, "Technical Specifications per Compute Capability": 255
registers per thread everywhere; maximum shared memory per thread block (the opt-in maximum,
static and dynamic together) 64 KB (7.5), 163 KB (8.0, 8.7), 99 KB (8.6, 8.9, 12.0), 227 KB (9.0,
10.0, 10.3); kernel parameters up to 32,764 bytes (CUDA 12.1 on, Volta and later).

`silicon` says which GPU the arch's own latency and barrier facts were measured on; None for an
arch none of whose facts was measured on its own silicon by this project (its tables rest on the
compiler's choices and on Hopper's measurements carried over, each labelled so:
`legality.latency`). `reorder optimize` without a GPU refuses such an arch unless told
`--unmeasured-arch` (docs/blackwell.md).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Arch:
    """One architecture reorder reads: its number, family, per-kernel limits and silicon evidence."""

    number: int
    family: int
    registers: int
    shared_bytes: int
    param_bytes: int
    silicon: str | None  # the GPU its own floors were measured on, None if never

    @property
    def name(self) -> str:
        return f"sm_{self.number}"


_KB = 1024
ARCHS: dict[int, Arch] = {
    a.number: a
    for a in (
        Arch(75, 80, 255, 64 * _KB, 32764, None),
        Arch(80, 80, 255, 163 * _KB, 32764, None),
        Arch(86, 80, 255, 99 * _KB, 32764, None),
        Arch(87, 80, 255, 163 * _KB, 32764, None),
        Arch(89, 80, 255, 99 * _KB, 32764, None),
        Arch(90, 90, 255, 227 * _KB, 32764, "NVIDIA H200"),
        Arch(100, 100, 255, 227 * _KB, 32764, None),
        Arch(103, 100, 255, 227 * _KB, 32764, None),
        Arch(120, 120, 255, 99 * _KB, 32764, None),
    )
}
SUPPORTED_ARCHS: frozenset[int] = frozenset(ARCHS)
# Blackwell: CUDA 13 emits these cubins with Capsule Mercury sections (.nv.capmerc.<kernel>,
# .nv.merc.*) beside .text, from which a driver can finalize SASS itself (docs/blackwell.md).
BLACKWELL: frozenset[int] = frozenset(a for a, info in ARCHS.items() if info.family >= 100)


def family(arch: int) -> int:
    """The family of a supported arch; an unknown arch falls into the nearest family below it."""
    if arch in ARCHS:
        return ARCHS[arch].family
    below = [a for a in ARCHS if a <= arch]
    return ARCHS[max(below)].family if below else 80


def arch_number(name: str) -> int:
    """`sm_100a`, `sm_90`, `100` -> the number a cubin of that target says (ValueError if none)."""
    text = name.lower().removeprefix("sm_").removeprefix("compute_")
    return int(text.rstrip("af"))
