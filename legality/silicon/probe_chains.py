"""Per-pair latency probe kernels: CUDA source, compile, locate the chain, stall variants.

For each producer -> consumer pair (FFMA->FFMA, ISETP->@P BRA, LOP3->IMAD, ...) this
writes a small kernel whose threads run a dependent chain of `LINKS` links written in
inline PTX, compiles it with `nvcc -cubin -O3 -arch=sm_XX`, decodes the cubin and finds
the chain in the SASS: the longest run of consecutive instructions where each link reads
what the previous one wrote, with the expected opcodes. If ptxas did not emit that run
(it folded, if-converted or re-associated the PTX) the pair is reported `not generated`
with the reason; nothing is guessed.

Each kernel reads WORDS u32 input words per thread, runs WARMUP links that consume every
input (so no load is still in flight when the first clock is read), reads clock64, runs
the measured chain, reads clock64 again, and writes its result words plus the cycle count.

Variants: for stall s in 1..15 every *producer* instruction of the chain gets stall s
(in alternating chains, e.g. LOP3->IMAD, only the LOP3s; the IMAD->LOP3 edges keep the
compiler's stalls). Nothing else moves. Encoding rules of the control field are kept:
for s >= 12 the yield bit (109) is cleared, which also requires clearing the operand
reuse flags (reuse needs the transN form); for s <= 11 the yield bit is left as ptxas set
it. Variants are written with reorder.sass.writer.patch_kernel (same order, new words).

The verifier's verdict (legality.verify with the tables in place at build time) is
recorded per variant in the manifest, so the GPU side needs no nvdisasm.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from legality.latency import latency_class
from reorder.base.errors import InputError, ToolError
from reorder.base.files import write_atomic
from reorder.binary.arches import arch_number
from reorder.binary.cubin import read_cubin
from reorder.binary.tools import find_tool
from reorder.sass.model import Instruction, decode_kernel
from reorder.sass.writer import patch_kernel

LINKS = 32  # measured links per chain
WORDS = 32  # u32 input words per thread
OUT_WORDS = 2  # u32 result words per thread
STALLS = tuple(range(1, 16))
MANIFEST = "manifest.json"


# --------------------------------------------------------------------------- pair specs


@dataclass(frozen=True)
class Pair:
    """One probe: its PTX chain and how to recognise the SASS that ptxas must emit for it.

    `producer` / `consumer` are predicates on the SASS opcode (with modifiers). In a
    homogeneous chain (producer == consumer) every link is a producer. In an alternating
    chain the measured edge is producer -> consumer and only producers get the stall.
    `kind` is the dependency kind the verifier uses for that edge.
    """

    name: str
    producer: str  # opcode (with modifiers) or base prefix the producer must match
    consumer: str
    kind: str  # raw | raw_pred | raw_guard
    decls: str  # C declarations reading p[0..WORDS-1]
    link: Callable[[int], str]  # C statement(s) of link k
    store: str  # C statements writing out[0], out[1]
    inputs: str  # input generator name (see make_inputs)
    note: str = ""
    extra: tuple[str, ...] = ()  # further opcodes the chain may hold (not swept)


def _asm(text: str, outs: str, ins: str = "") -> str:
    return f'asm volatile("{text}" : {outs}{" : " + ins if ins else ""});'


_F32_DECLS = """
    float x = __uint_as_float(p[0]);
    float a0 = __uint_as_float(p[1]), a1 = __uint_as_float(p[2]);
    float a2 = __uint_as_float(p[3]), a3 = __uint_as_float(p[4]);
    float b0 = __uint_as_float(p[5]), b1 = __uint_as_float(p[6]);
    float b2 = __uint_as_float(p[7]), b3 = __uint_as_float(p[8]);
"""
_F32_STORE = "out[0] = __float_as_uint(x); out[1] = 0u;"
_F64_DECLS = """
    const double* q = reinterpret_cast<const double*>(p);
    double x = q[0], a0 = q[1], a1 = q[2], a2 = q[3], a3 = q[4], b0 = q[5], b1 = q[6], b2 = q[7], b3 = q[8];
"""
_F64_STORE = (
    "unsigned long long r = (unsigned long long)__double_as_longlong(x); "
    "out[0] = (unsigned)r; out[1] = (unsigned)(r >> 32);"
)
_U32_DECLS = """
    unsigned x = p[0];
    unsigned a0 = p[1], a1 = p[2], a2 = p[3], a3 = p[4];
    unsigned b0 = p[5], b1 = p[6], b2 = p[7], b3 = p[8];
    unsigned s0 = p[9], s1 = p[10], s2 = p[11], s3 = p[12];
"""
_U32_STORE = "out[0] = x; out[1] = 0u;"


def _f32(op: str) -> Callable[[int], str]:
    def link(k: int) -> str:
        j = k % 4
        if op == "fma":
            return _asm("fma.rn.f32 %0, %0, %1, %2;", '"+f"(x)', f'"f"(a{j}), "f"(b{j})')
        if op == "add":
            return _asm("add.f32 %0, %0, %1;", '"+f"(x)', f'"f"(b{j})')
        return _asm("mul.f32 %0, %0, %1;", '"+f"(x)', f'"f"(a{j})')

    return link


def _f64(op: str) -> Callable[[int], str]:
    def link(k: int) -> str:
        j = k % 4
        if op == "fma":
            return _asm("fma.rn.f64 %0, %0, %1, %2;", '"+d"(x)', f'"d"(a{j}), "d"(b{j})')
        return _asm("add.f64 %0, %0, %1;", '"+d"(x)', f'"d"(b{j})')

    return link


def _u32(template: str) -> Callable[[int], str]:
    """`template` is PTX with %0 = x and {a} {b} {s} naming link k's operands (%1 %2 %3)."""

    def link(k: int) -> str:
        j = k % 4
        return _asm(template, '"+r"(x)', f'"r"(a{j}), "r"(b{j}), "r"(s{j})')

    return link


def _fsetp_guarded(k: int) -> str:
    # even links: if (x < b) x += a; odd links: if (x > b) x -= a, so x oscillates in a band
    # and the predicate changes from link to link
    j = k % 4
    cmp, op = ("lt", "add") if k % 2 == 0 else ("gt", "sub")
    return (
        f'asm volatile("{{ .reg .pred p; setp.{cmp}.f32 p, %0, %1; @p {op}.f32 %0, %0, %2; }}" '
        f': "+f"(x) : "f"(b{j}), "f"(a{j}));'
    )


def _isetp_guarded(k: int) -> str:
    j = k % 4
    cmp, op = ("lt", "add") if k % 2 == 0 else ("gt", "sub")
    return (
        f'asm volatile("{{ .reg .pred p; setp.{cmp}.s32 p, %0, %1; @p {op}.u32 %0, %0, %2; }}" '
        f': "+r"(x) : "r"(b{j}), "r"(a{j}));'
    )


def _isetp_sel(k: int) -> str:
    j = k % 4
    return (
        'asm volatile("{ .reg .pred p; setp.lt.s32 p, %0, %1; selp.b32 %0, %2, %0, p; }" '
        f': "+r"(x) : "r"(b{j}), "r"(a{j}));'
    )


def _isetp_bra(k: int) -> str:
    j = k % 4
    return (
        'asm volatile("{ .reg .pred p; setp.lt.s32 p, %0, %1; @p bra.uni SKIP'
        + str(k)
        + "; "
        + "xor.b32 %0, %0, %2; mul.lo.u32 %0, %0, %3; " * 4
        + "SKIP"
        + str(k)
        + ': }" '
        f': "+r"(x) : "r"(b{j}), "r"(a{j}), "r"(s{j}));'
    )


def _i2fp(k: int) -> str:
    j = k % 4
    return (
        'asm volatile("{ .reg .f32 f; cvt.rn.f32.s32 f, %0; mov.b32 %0, f; add.u32 %0, %0, %1; }" '
        f': "+r"(x) : "r"(a{j}));'
    )


def _lop3_imad(k: int) -> str:
    j = k % 4
    return (
        'asm volatile("lop3.b32 %0, %0, %1, %2, 0x96; mad.lo.u32 %0, %0, %3, %1;" '
        f': "+r"(x) : "r"(a{j}), "r"(b{j}), "r"(s{j}));'
    )


def _imad_iadd3(k: int) -> str:
    j = k % 4
    return (
        'asm volatile("mad.lo.u32 %0, %0, %3, %1; add.u32 %0, %0, %1; add.u32 %0, %0, %2;" '
        f': "+r"(x) : "r"(a{j}), "r"(b{j}), "r"(s{j}));'
    )


def _mov(k: int) -> str:
    # MOV moves a value unchanged, so a chain of MOVs alone cannot show a stale read;
    # each link pairs a MOV with a rotate that makes every value distinct.
    j = k % 4
    return f'asm volatile("{{ .reg .b32 t; mov.b32 t, %0; shf.l.wrap.b32 %0, t, t, %1; }}" : "+r"(x) : "r"(s{j}));'


_I2FP_IADD: dict[str, Any] = {
    "decls": _U32_DECLS,
    "link": _i2fp,
    "store": _U32_STORE,
    "inputs": "u32",
    "extra": ("I2FP", "IADD3", "IMAD.IADD"),
}
_HFMA2: dict[str, Any] = {
    "decls": _U32_DECLS,
    "link": _u32("fma.rn.f16x2 %0, %0, %1, %2;"),
    "store": _U32_STORE,
    "inputs": "f16",
    "extra": ("HFMA2", "HFMA2.MMA"),
}

PAIRS: tuple[Pair, ...] = (
    Pair("FFMA", "FFMA", "FFMA", "raw", _F32_DECLS, _f32("fma"), _F32_STORE, "f32"),
    Pair("FADD", "FADD", "FADD", "raw", _F32_DECLS, _f32("add"), _F32_STORE, "f32"),
    Pair("FMUL", "FMUL", "FMUL", "raw", _F32_DECLS, _f32("mul"), _F32_STORE, "f32"),
    Pair("DFMA", "DFMA", "DFMA", "raw", _F64_DECLS, _f64("fma"), _F64_STORE, "f64"),
    Pair("DADD", "DADD", "DADD", "raw", _F64_DECLS, _f64("add"), _F64_STORE, "f64"),
    Pair("IMAD", "IMAD", "IMAD", "raw", _U32_DECLS, _u32("mad.lo.u32 %0, %0, %1, %2;"), _U32_STORE, "u32"),
    Pair(
        "IMAD.IADD",
        "IMAD.IADD",
        "I2FP",
        "raw",
        **_I2FP_IADD,
        note="from the I2FP chain (x = bits(float(x)) + a), where ptxas emits the add as IMAD.IADD; "
        "a plain add chain is merged into IADD3",
    ),
    Pair(
        "IADD3", "IADD3", "IADD3", "raw", _U32_DECLS, _u32("add.u32 %0, %0, %1; add.u32 %0, %0, %2;"), _U32_STORE, "u32"
    ),
    Pair("LOP3", "LOP3", "LOP3", "raw", _U32_DECLS, _u32("lop3.b32 %0, %0, %1, %2, 0x6a;"), _U32_STORE, "u32"),
    Pair("SHF", "SHF", "SHF", "raw", _U32_DECLS, _u32("shf.l.wrap.b32 %0, %0, %0, %3;"), _U32_STORE, "u32"),
    Pair(
        "LEA",
        "LEA",
        "LEA",
        "raw",
        _U32_DECLS,
        _u32("{ .reg .b32 t; shr.u32 t, %0, 13; add.u32 %0, t, %1; }"),
        _U32_STORE,
        "u32",
        note="x = a + (x >> 13) gives LEA.HI; a shl+add chain alternates LEA with IMAD",
    ),
    Pair("PRMT", "PRMT", "PRMT", "raw", _U32_DECLS, _u32("prmt.b32 %0, %0, %1, %3;"), _U32_STORE, "prmt"),
    Pair(
        "SEL",
        "SEL",
        "SEL",
        "raw",
        _U32_DECLS + "    bool pt = (s0 & 1) != 0, pf = (s1 & 1) != 0;\n",
        lambda k: (
            f'asm volatile("{{ .reg .pred q; setp.ne.u32 q, %2, 0; selp.b32 %0, %1, %0, q; }}" '
            f': "+r"(x) : "r"(a{k % 4}), "r"((unsigned)({"pt" if k % 2 == 0 else "pf"})));'
        ),
        _U32_STORE,
        "sel",
        note="x = p_k ? a_k : x with two predicates taken in turn",
    ),
    Pair(
        "MOV",
        "MOV",
        "SHF",
        "raw",
        _U32_DECLS,
        _mov,
        _U32_STORE,
        "u32",
        note="MOV -> SHF (rotate): a MOV chain alone cannot show a stale value; ptxas copy-propagates moves",
    ),
    Pair(
        "HADD2",
        "HADD2",
        "HFMA2.MMA|HADD2",
        "raw",
        _U32_DECLS,
        _u32("add.f16x2 %0, %0, %2;"),
        _U32_STORE,
        "f16",
        extra=("HADD2", "HFMA2.MMA"),
        note="ptxas alternates HADD2 with HFMA2.MMA (x*1+a) in a dependent add chain; measured HADD2 -> next",
    ),
    Pair(
        "HFMA2",
        "HFMA2",
        "HFMA2.MMA|HFMA2",
        "raw",
        **_HFMA2,
        note="ptxas alternates HFMA2 and HFMA2.MMA; measured HFMA2 -> next",
    ),
    Pair("HFMA2.MMA", "HFMA2.MMA", "HFMA2|HFMA2.MMA", "raw", **_HFMA2, note="measured HFMA2.MMA -> next (HFMA2)"),
    Pair(
        "I2FP",
        "I2FP",
        "IMAD.IADD|IADD3",
        "raw",
        **_I2FP_IADD,
        note="I2FP -> add (x = bits(float(x)) + a): a pure I2FP chain reaches a fixed point",
    ),
    Pair(
        "FSETP->guarded",
        "FSETP",
        "FADD",
        "raw_guard",
        _F32_DECLS,
        _fsetp_guarded,
        _F32_STORE,
        "f32osc",
        note="FSETP P, x, b; @P FADD x, x, +-a (comparison and sign alternate)",
    ),
    Pair(
        "ISETP->guarded",
        "ISETP",
        "IADD3|IMAD.IADD",
        "raw_guard",
        _U32_DECLS,
        _isetp_guarded,
        _U32_STORE,
        "iosc",
        note="ISETP P, x, b; @P IADD x, x, +-a (comparison and sign alternate)",
    ),
    Pair(
        "ISETP->SEL",
        "ISETP",
        "SEL",
        "raw_pred",
        _U32_DECLS,
        _isetp_sel,
        _U32_STORE,
        "u32",
        note="ISETP P, x, b; SEL x, a, x, P",
    ),
    Pair(
        "ISETP->branch",
        "ISETP",
        "BRA",
        "raw_guard",
        _U32_DECLS,
        _isetp_bra,
        _U32_STORE,
        "u32",
        extra=("LOP3", "IMAD"),
        note="ISETP P, x, b; @P BRA skip; x = (((x ^ a) * s ^ a) * s ...) four times",
    ),
    Pair("LOP3->IMAD", "LOP3", "IMAD", "raw", _U32_DECLS, _lop3_imad, _U32_STORE, "u32"),
    Pair("IMAD->IADD3", "IMAD", "IADD3", "raw", _U32_DECLS, _imad_iadd3, _U32_STORE, "u32"),
)
PAIR_BY_NAME = {p.name: p for p in PAIRS}


def kernel_name(pair: Pair) -> str:
    return "probe_" + "".join(c if c.isalnum() else "_" for c in pair.name.lower())


WARMUP = 4


def cuda_source(pair: Pair, links: int = LINKS) -> str:
    """The CUDA source of one pair's probe kernel."""
    warm = "\n    ".join(pair.link(k) for k in range(WARMUP))
    body = "\n    ".join(pair.link(k) for k in range(links))
    return f"""// reorder latency-probe: {pair.name} ({pair.producer} -> {pair.consumer}, {pair.kind})
extern "C" __global__ void __launch_bounds__(256) {kernel_name(pair)}(
    const unsigned* __restrict__ in, unsigned* __restrict__ out_all, long long* __restrict__ clk)
{{
    const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned* p = in + (size_t)t * {WORDS};
    unsigned* out = out_all + (size_t)t * {OUT_WORDS};
{pair.decls}
    // warm-up links consume every input so no load is in flight at the first clock read
    {warm}
    long long c0 = clock64();
    {body}
    long long c1 = clock64();
    {pair.store}
    clk[t] = c1 - c0;
}}
"""


# --------------------------------------------------------------------------- inputs


def make_inputs(kind: str, seed: int, threads: int) -> np.ndarray:
    """u32 words [threads, WORDS] for one input set; values chosen so a stale operand changes the result."""
    rng = np.random.default_rng(seed)
    w = rng.integers(0, 2**32, size=(threads, WORDS), dtype=np.uint64).astype(np.uint32)
    if kind in ("f32", "f32osc"):
        f = np.empty((threads, WORDS), np.float32)
        f[:, 0] = rng.uniform(-4, 4, threads)
        sign = rng.choice([-1.0, 1.0], size=(threads, 4))
        f[:, 1:5] = sign * rng.uniform(0.55, 0.98, (threads, 4))  # |a| < 1 keeps x bounded
        f[:, 5:9] = rng.uniform(-1.5, 1.5, (threads, 4))
        if kind == "f32osc":  # x < b ? x += a : x, then x > b ? x -= a : x; a > 0, thresholds around x
            f[:, 1:5] = rng.uniform(0.5, 2.5, (threads, 4))
            f[:, 5:9] = rng.uniform(-1.0, 1.0, (threads, 4))
        f[:, 9:] = rng.uniform(-1, 1, (threads, WORDS - 9))
        return f.view(np.uint32)
    if kind == "f64":
        d = np.empty((threads, WORDS // 2), np.float64)
        d[:, 0] = rng.uniform(-4, 4, threads)
        sign = rng.choice([-1.0, 1.0], size=(threads, 4))
        d[:, 1:5] = sign * rng.uniform(0.55, 0.98, (threads, 4))
        d[:, 5:9] = rng.uniform(-1.5, 1.5, (threads, 4))
        d[:, 9:] = rng.uniform(-1, 1, (threads, WORDS // 2 - 9))
        return d.view(np.uint32)
    if kind == "f16":
        h = np.empty((threads, WORDS * 2), np.float16)
        h[:, 0:2] = rng.uniform(-2, 2, (threads, 2))
        h[:, 2:10] = rng.uniform(0.55, 0.95, (threads, 8)) * rng.choice([-1, 1], (threads, 8))
        h[:, 10:18] = rng.uniform(-1, 1, (threads, 8))
        h[:, 18:] = rng.uniform(-1, 1, (threads, WORDS * 2 - 18))
        return h.view(np.uint32)
    if kind == "prmt":  # selectors mixing bytes of x and a, never a constant
        sel = rng.integers(0, 8, size=(threads, 4, 4))
        sel[:, :, 0] = rng.integers(0, 4, size=(threads, 4))  # at least one byte of x survives
        words = (sel[..., 0] | sel[..., 1] << 4 | sel[..., 2] << 8 | sel[..., 3] << 12).astype(np.uint32)
        w[:, 9:13] = words
        return w
    if kind == "iosc":  # the integer form of f32osc: a in 1..2^21, b and x in +-2^20
        w[:, 1:5] = rng.integers(1, 1 << 21, size=(threads, 4))
        w[:, 5:9] = rng.integers(-(1 << 20), 1 << 20, size=(threads, 4)).astype(np.int64) & 0xFFFFFFFF
        w[:, 0] = rng.integers(-(1 << 20), 1 << 20, size=threads).astype(np.int64) & 0xFFFFFFFF
        return w
    if kind == "sel":  # first predicate mostly true, second mostly false: x = a_k, then kept
        w[:, 9] = (rng.random(threads) < 0.8).astype(np.uint32)
        w[:, 10] = (rng.random(threads) < 0.2).astype(np.uint32)
        return w
    # u32: odd multipliers / varied bits; rotate amounts 1..31
    w[:, 1:5] |= 1
    w[:, 9:13] = rng.integers(1, 32, size=(threads, 4))
    return w


# --------------------------------------------------------------------------- compile and locate


@dataclass
class Located:
    """Where the chain sits in the SASS, or why it was not found."""

    pair: str
    kernel: str
    ok: bool
    reason: str = ""
    chain: tuple[int, ...] = ()  # offsets of every instruction of the run
    producers: tuple[int, ...] = ()  # offsets whose stall is swept
    producer_opcode: str = ""
    consumer_opcode: str = ""
    producer_class: str = ""
    consumer_class: str = ""
    ptxas_stalls: tuple[int, ...] = ()
    edges: int = 0  # measured producer -> consumer edges


def target_name(arch: int | str) -> str:
    """The nvcc target of an arch given as a number (90) or a name (`sm_100a`, kept as given)."""
    return arch if isinstance(arch, str) else f"sm_{arch}"


def compile_pair(pair: Pair, workdir: Path, arch: int | str = 90) -> Path:
    """Write and compile one pair's kernel for `arch` (a number or a target name such as
    `sm_100a`); returns the cubin path."""
    workdir.mkdir(parents=True, exist_ok=True)
    src = workdir / f"{kernel_name(pair)}.cu"
    out = workdir / f"{kernel_name(pair)}.cubin"
    src.write_text(cuda_source(pair))
    nvcc = str(find_tool("nvcc"))
    cmd = [nvcc, "-cubin", "-O3", f"-arch={target_name(arch)}", "-o", str(out), str(src)]
    done = subprocess.run(cmd, capture_output=True, timeout=300, check=False)
    if done.returncode != 0:
        err = done.stderr.decode(errors="replace").strip()
        raise ToolError(
            f"nvcc failed for {pair.name}: {err.splitlines()[0] if err else done.returncode}", tuple(cmd), err
        )
    return out


_ALIASES = {"IMAD": {"IADD", "MOV", "SHL", "WIDE", "HI", "X"}, "HFMA2": {"MMA"}}


def _matches(ins: Instruction, want: str) -> bool:
    """`want` is `A|B|...`; each is an opcode prefix with modifiers (`IMAD.IADD`, `HFMA2.MMA`) or a
    plain base, which excludes the aliases that run on another pipe (IMAD.IADD, HFMA2.MMA)."""
    for w in want.split("|"):
        if "." in w:
            if ins.opcode == w or ins.opcode.startswith(w + "."):
                return True
        elif ins.base == w and not set(ins.modifiers) & _ALIASES.get(w, set()):
            return True
    return False


def _feeds(a: Instruction, b: Instruction) -> set[str]:
    return set(a.access.writes) & set(b.access.reads)


def locate_chain(pair: Pair, instructions: tuple[Instruction, ...], minimum: int = LINKS // 2 - 4) -> Located:
    """Find the longest dependent run of the pair's opcodes and the producer -> consumer edges in it.

    Only edges whose (producer class, consumer class) is the most common one are swept, so a
    row measures one class pair."""
    best: list[int] = []
    i = 0
    while i < len(instructions):
        run = _run_from(pair, instructions, i)
        if len(run) > len(best):
            best = run
        i += max(1, len(run))
    members = set(best)
    edges = [k for k in best if k + 1 in members and _is_measured_edge(pair, instructions, k)]
    classes: dict[tuple[str, str], list[int]] = {}
    for k in edges:
        classes.setdefault((latency_class(instructions[k]), latency_class(instructions[k + 1])), []).append(k)
    producers = max(classes.values(), key=len) if classes else []
    loc = Located(pair.name, kernel_name(pair), False)
    if len(producers) < minimum:
        seen = sorted({instructions[k].opcode for k in best})
        loc.reason = (
            f"not generated: the longest dependent run has {len(producers)} {pair.producer}->"
            f"{pair.consumer} ({pair.kind}) edges, need {minimum}; run opcodes: {', '.join(seen) or 'none'}"
        )
        return loc
    p, c = instructions[producers[0]], instructions[producers[0] + 1]
    loc.ok = True
    loc.chain = tuple(instructions[k].offset for k in best)
    loc.producers = tuple(instructions[k].offset for k in producers)
    loc.producer_opcode, loc.consumer_opcode = p.opcode, c.opcode
    loc.producer_class, loc.consumer_class = latency_class(p), latency_class(c)
    loc.ptxas_stalls = tuple(instructions[k].ctrl.stall for k in producers)
    loc.edges = len(producers)
    return loc


def _is_measured_edge(pair: Pair, ins: tuple[Instruction, ...], k: int) -> bool:
    a, b = ins[k], ins[k + 1]
    if not (_matches(a, pair.producer) and _matches(b, pair.consumer)):
        return False
    shared = _feeds(a, b)
    guard = b.guard.lstrip("@!")
    if pair.kind == "raw_guard":
        return bool(guard) and guard in shared
    if pair.kind == "raw_pred":
        return any(r.startswith("P") and r != guard for r in shared)
    return any(r.startswith("R") for r in shared)


def _allowed(pair: Pair, ins: Instruction) -> bool:
    return ins.known and any(_matches(ins, w) for w in (pair.producer, pair.consumer, *pair.extra))


def _run_from(pair: Pair, ins: tuple[Instruction, ...], i: int) -> list[int]:
    """Indices of the dependent run starting at i: consecutive allowed instructions, each
    reading something an earlier member wrote (in the branch chain the skipped code reads
    what the previous link's code wrote, past the ISETP and the BRA)."""
    if not _allowed(pair, ins[i]):
        return []
    run = [i]
    written = set(ins[i].access.writes)
    k = i + 1
    while k < len(ins) and _allowed(pair, ins[k]) and written & set(ins[k].access.reads):
        run.append(k)
        written |= set(ins[k].access.writes)
        k += 1
    return run


# --------------------------------------------------------------------------- variants


def with_stall(ins: Instruction, stall: int) -> Instruction:
    """`ins` with stall `stall`, keeping the control field encodable (see module docstring)."""
    c = ins.ctrl
    c = c.with_(stall=stall, yield_bit=0, reuse=0) if stall >= 12 else c.with_(stall=stall)
    if c.encoding_problem():
        raise InputError(
            f"{ins.offset:#x} {ins.opcode}: stall {stall} gives an illegal control code: {c.encoding_problem()}"
        )
    return ins.with_ctrl(c)


def variant_instructions(
    instructions: tuple[Instruction, ...], producers: Iterable[int], stall: int
) -> tuple[Instruction, ...]:
    targets = set(producers)
    return tuple(with_stall(i, stall) if i.offset in targets else i for i in instructions)


@dataclass
class Built:
    """One pair, built: where its cubins are and what the verifier said about each variant."""

    pair: str
    kernel: str
    located: Located
    original: str = ""
    variants: dict[int, str] = field(default_factory=dict)  # stall -> cubin path (relative to the dir)
    verifier_ok: dict[int, bool] = field(default_factory=dict)
    verifier_detail: dict[int, str] = field(default_factory=dict)
    original_verifier_ok: bool = True
    error: str = ""

    def as_dict(self) -> dict:
        loc = self.located
        return {
            "pair": self.pair,
            "kernel": self.kernel,
            "error": self.error,
            "original": self.original,
            "located": loc.ok,
            "reason": loc.reason,
            "chain": list(loc.chain),
            "producers": list(loc.producers),
            "producer_opcode": loc.producer_opcode,
            "consumer_opcode": loc.consumer_opcode,
            "producer_class": loc.producer_class,
            "consumer_class": loc.consumer_class,
            "kind": PAIR_BY_NAME[self.pair].kind,
            "ptxas_stalls": list(loc.ptxas_stalls),
            "edges": loc.edges,
            "inputs": PAIR_BY_NAME[self.pair].inputs,
            "variants": {str(s): p for s, p in self.variants.items()},
            "verifier_ok": {str(s): v for s, v in self.verifier_ok.items()},
            "verifier_detail": {str(s): v for s, v in self.verifier_detail.items()},
            "original_verifier_ok": self.original_verifier_ok,
        }


def build_pair(pair: Pair, outdir: Path, arch: int | str = 90, verify: bool = True) -> Built:
    """Compile, locate and write every stall variant of one pair into `outdir/<kernel>/`."""
    from legality.verify import verify_instructions

    kdir = outdir / kernel_name(pair)
    built = Built(pair.name, kernel_name(pair), Located(pair.name, kernel_name(pair), False))
    try:
        path = compile_pair(pair, kdir, arch)
        cubin = read_cubin(path)
        code = decode_kernel(cubin, kernel_name(pair))
    except (ToolError, InputError) as exc:
        built.error = str(exc)
        built.located.reason = f"not generated: {exc}"
        return built
    built.original = str(path.relative_to(outdir))
    loc = locate_chain(pair, code.instructions)
    built.located = loc
    if not loc.ok:
        return built
    base = {v.key for v in verify_instructions(code.instructions, cubin.arch)} if verify else set()
    built.original_verifier_ok = not base
    for s in STALLS:
        ins = variant_instructions(code.instructions, loc.producers, s)
        data = patch_kernel(cubin, code.kernel, ins)
        target = kdir / f"s{s:02d}.cubin"
        write_atomic(target, data)
        built.variants[s] = str(target.relative_to(outdir))
        if verify:
            new = [v for v in verify_instructions(ins, cubin.arch) if v.key not in base]
            built.verifier_ok[s] = not new
            built.verifier_detail[s] = new[0].line() if new else ""
    return built


def build_all(
    outdir: str | Path,
    pairs: Iterable[Pair] = PAIRS,
    arch: int | str = 90,
    jobs: int | None = None,
    verify: bool = True,
) -> list[Built]:
    """Build every pair (compiles in parallel) and write `outdir/manifest.json`; `arch` as for
    `compile_pair` (the manifest records the number a cubin of that target says, and the target)."""
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    pairs = list(pairs)
    with ThreadPoolExecutor(max_workers=jobs or min(8, os.cpu_count() or 1)) as pool:
        built = list(pool.map(lambda p: build_pair(p, out, arch, verify), pairs))
    doc = {
        "canary": write_canary(out, built),
        "arch": arch_number(target_name(arch)),
        "target": target_name(arch),
        "links": LINKS,
        "words": WORDS,
        "out_words": OUT_WORDS,
        "stalls": list(STALLS),
        "pairs": [b.as_dict() for b in built],
    }
    write_atomic(out / MANIFEST, json.dumps(doc, indent=1).encode())
    return built


def write_canary(out: Path, built: list[Built]) -> dict | None:
    """The canary of the first located pair (legality.silicon.canary): its original with the first
    global store silenced, which the GPU must run differently, or the patched `.text` did not run."""
    from legality.silicon.canary import canary_bytes

    first = next((b for b in built if b.located.ok), None)
    if first is None:
        return None
    code = decode_kernel(read_cubin(out / first.original), first.kernel)
    write_atomic(out / "canary.cubin", canary_bytes(code))
    return {"pair": first.pair, "kernel": first.kernel, "original": first.original, "cubin": "canary.cubin"}


def read_manifest(folder: str | Path) -> dict:
    path = Path(folder) / MANIFEST
    if not path.is_file():
        raise InputError(f"{path}: no manifest; build the variants first (--build-only / --prebuild)")
    return json.loads(path.read_text())


def selected_pairs(names: str | None) -> list[Pair]:
    if not names:
        return list(PAIRS)
    out = []
    for name in (n.strip() for n in names.split(",") if n.strip()):
        match = PAIR_BY_NAME.get(name) or next((p for p in PAIRS if p.name.lower() == name.lower()), None)
        if match is None:
            raise InputError(f"unknown pair {name!r}; known: {', '.join(PAIR_BY_NAME)}")
        out.append(match)
    return out


def scratch_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="reorder-latency-probe-"))


__all__ = ["PAIRS", "Pair", "build_all", "build_pair", "cuda_source", "locate_chain", "make_inputs", "read_manifest"]
