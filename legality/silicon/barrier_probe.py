"""Barrier sweeps on silicon: how soon after a barrier may a memory access issue?

The latency probe (legality.silicon.latency_probe) finds register floors from dependent chains.
A barrier links no registers: what goes wrong is a read of shared memory that issues
before another warp's store has landed. So the probe kernels (probes/barrier_probe.cu)
have every thread store a value that depends on the input, synchronize, and read the
value of a thread in another warp. Variants are built on the CPU from the compiler's
cubin:

- `after_dN`: the first memory access after the barrier moved to sit directly behind it,
  the barrier's stall set to N (the access issues N cycles after the barrier);
- `before_dN`: the last shared store before the barrier issued N cycles before it;
- `asis`: the compiler's schedule (reference, and a control that must be identical).

Each variant is then checked on the GPU against the compiler's cubin over many blocks, on
fresh inputs, with every SM's shared memory poisoned before each launch (timing.check):
a read that races the store returns the poison. The floor is the smallest N at and above
which every variant was byte-identical on every input set. A variant whose only verifier
complaint is the barrier rule isolates it (`other` lists any other violation, in which
case a wrong result cannot be blamed on the barrier alone).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from legality.silicon.canary import canary_bytes
from legality.verify import verify_kernel
from reorder.binary.cubin import read_cubin
from reorder.sass.model import Instruction, KernelCode, decode_kernel
from reorder.sass.writer import patch_kernel

SOURCE = Path(__file__).parent / "probes" / "barrier_probe.cu"
PROBES = Path(__file__).parent / "probes"
PROBES_CUBIN = PROBES / "barrier_probe_sm_90.cubin"  # SOURCE, nvcc -cubin -O3 -arch=sm_90
# Checked in too (nvcc 13.0, the same command): barrier_probe_sm_100a.cubin, barrier_probe_sm_120.cubin.
BARRIER_OF = {"bar_sync_lds": "BAR.SYNC", "bar_red_lds": "BAR.RED"}
KERNELS = ("bar_sync_lds", "bar_red_lds")
AFTER = tuple(range(1, 9))
BEFORE = tuple(range(1, 6))


@dataclass(frozen=True)
class Variant:
    """One probe build: which kernel, what was changed, and what the verifier says besides
    the barrier rule (empty: the variant is legal by every other rule)."""

    kernel: str
    name: str  # asis, after_dN, before_dN
    side: str  # after | before | asis
    cycles: int  # barrier -> access (after) or store -> barrier (before); 0 for asis
    barrier: str
    access: str
    data: bytes
    other: str


def compile_probes(out_dir: Path, arch: str = "sm_90") -> Path:
    """nvcc -cubin -O3 of the probe kernels (the compiler's schedule is the reference)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    cubin = out_dir / f"barrier_probe_{arch}.cubin"
    subprocess.run(
        ["nvcc", "-cubin", "-O3", f"-arch={arch}", "-o", str(cubin), str(SOURCE)], check=True, capture_output=True
    )
    return cubin


def probe_cubin(target: str, workdir: Path) -> Path:
    """The probe cubin for an nvcc target: the checked-in build where there is one, else SOURCE
    compiled into `workdir` (needs nvcc)."""
    checked_in = PROBES / f"barrier_probe_{target}.cubin"
    if checked_in.is_file():
        return checked_in
    from reorder.base.errors import ToolError

    try:
        return compile_probes(workdir, target)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise ToolError(f"nvcc could not build the barrier probe for {target}: {exc}", ("nvcc",)) from None


def _barrier_index(ins: tuple[Instruction, ...]) -> int:
    return next(i for i, x in enumerate(ins) if x.base == "BAR")


def _touches_memory(x: Instruction) -> bool:
    return bool(x.access.mem_reads or x.access.mem_writes)


def after_variant(code: KernelCode, cycles: int) -> tuple[tuple[Instruction, ...], str]:
    """The first memory access after the barrier moved directly behind it, `cycles` after it."""
    ins = list(code.instructions)
    b = _barrier_index(code.instructions)
    a = next(i for i in range(b + 1, len(ins)) if _touches_memory(ins[i]))
    access = ins.pop(a)
    ins.insert(b + 1, access)
    ins[b] = ins[b].with_ctrl(ins[b].ctrl.with_(stall=cycles))
    return tuple(ins), access.opcode


def before_variant(code: KernelCode, cycles: int) -> tuple[tuple[Instruction, ...], str] | None:
    """The shared store right before the barrier issued `cycles` before it (None when the
    instruction before the barrier is not a store)."""
    ins = list(code.instructions)
    b = _barrier_index(code.instructions)
    store = ins[b - 1]
    if not store.access.mem_writes:
        return None
    ins[b - 1] = store.with_ctrl(store.ctrl.with_(stall=cycles))
    return tuple(ins), store.opcode


def _other_violations(code: KernelCode, ins: tuple[Instruction, ...]) -> str:
    report = verify_kernel(code, ins, original=code.instructions)  # the compiler's own are inherited
    others = [v for v in report.violations if not v.kind.startswith("barrier")]
    return "; ".join(v.line() for v in others[:2])


def build_variants(cubin: Path, kernels: tuple[str, ...] = KERNELS) -> list[Variant]:
    """Every sweep variant of every probe kernel, as cubin bytes."""
    parsed = read_cubin(cubin)
    out: list[Variant] = []
    for kernel in kernels:
        code = decode_kernel(parsed, kernel)
        bar = code.instructions[_barrier_index(code.instructions)].opcode
        out.append(Variant(kernel, "asis", "asis", 0, bar, "", cubin.read_bytes(), ""))
        out.append(Variant(kernel, "canary", "canary", 0, bar, "STG", canary_bytes(code), "its first store silenced"))
        for d in AFTER:
            ins, access = after_variant(code, d)
            out.append(
                Variant(
                    kernel,
                    f"after_d{d}",
                    "after",
                    d,
                    bar,
                    access,
                    patch_kernel(code.cubin, code.kernel, ins, code.kernel.regcount),
                    _other_violations(code, ins),
                )
            )
        for d in BEFORE:
            built = before_variant(code, d)
            if built is None:
                continue
            ins, access = built
            out.append(
                Variant(
                    kernel,
                    f"before_d{d}",
                    "before",
                    d,
                    bar,
                    access,
                    patch_kernel(code.cubin, code.kernel, ins, code.kernel.regcount),
                    _other_violations(code, ins),
                )
            )
    return out


def floor(rows: list[dict], kernel: str, side: str) -> int | None:
    """The smallest distance at and above which every variant of (kernel, side) was
    byte-identical; None when even the largest was wrong (or nothing was measured)."""
    measured = sorted(
        (int(r["cycles"]), r["check"] == "identical" and r["status"] == "ok")
        for r in rows
        if r["kernel"] == kernel and r["side"] == side
    )
    if not measured or not measured[-1][1]:
        return None
    best = measured[-1][0]
    for cycles, ok in reversed(measured):
        if not ok:
            break
        best = cycles
    return best


def canary_ran(rows: list[dict]) -> bool:
    """Whether every canary launch differed from the original (legality.silicon.canary): else
    the GPU did not run the patched `.text`, and no floor can be trusted."""
    canaries = [r for r in rows if r["side"] == "canary"]
    return bool(canaries) and all(r["check"] != "identical" and r["status"] == "ok" for r in canaries)


def to_toml(rows: list[dict], arch: int, gpu: str, date: str | None = None, commit: str | None = None) -> str:
    """barriers_sm_XX.toml: the measured distance after each barrier whose sweep found a floor
    (a barrier without one keeps its neighbours, legality.barriers)."""
    import datetime
    import json

    from reorder.base import provenance

    date = date or datetime.date.today().isoformat()
    commit = commit or provenance.commit(12)
    lines = [
        f"# Barrier distances measured on sm_{arch} (generated by reorder latency-probe --barriers; do not edit).",
        "# A memory access after the barrier needs `cycles` from its issue (legality/barriers.py).",
    ]
    for kernel, barrier in BARRIER_OF.items():
        cycles = floor(rows, kernel, "after")
        if cycles is None:
            continue
        swept = sorted({int(r["cycles"]) for r in rows if r["kernel"] == kernel and r["side"] == "after"})
        prov = (
            f"measured on {gpu}, {date}, legality/silicon/barrier_probe.py at {commit}: {kernel}, an access "
            f"{swept[0]}-{swept[-1]} cycles after {barrier}, byte-identical from {cycles} cycles on at every "
            f"launch ({SETS} input sets each, shared memory poisoned)"
        )
        lines += ["[[distance]]", f"arch = {arch}", f'barrier = "{barrier}"', f"cycles = {cycles}"]
        lines += ["provenance = " + json.dumps(prov)]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- GPU part

GRID, BLOCK, SETS = 2048, 1024, 8
SHIFTS = (32, 544)  # a thread of the next warp; one in the other half of the block


def probe_spec(kernel: str, grid: int, shift: int):
    """The launch of a probe kernel: one float in and out per thread, `shift` picks the partner."""
    from timing.spec import parse_spec

    n = grid * BLOCK
    return parse_spec(
        {
            "kernel": {"name": kernel, "grid": [grid], "block": [BLOCK], "seed": 77},
            "param": [
                {
                    "name": "in",
                    "kind": "buffer",
                    "dtype": "float32",
                    "shape": [n],
                    "role": "in",
                    "init": {"dist": "normal"},
                },
                {"name": "out", "kind": "buffer", "dtype": "float32", "shape": [n], "role": "out"},
                {"name": "shift", "kind": "scalar", "dtype": "int32", "value": shift},
            ],
        },
        source=f"probe {kernel} grid {grid} shift {shift}",
    )


def probe_launches(kernel: str):
    """(label, spec): many blocks with each partner distance, and one block alone."""
    for shift in SHIFTS:
        yield f"grid {GRID} shift {shift}", probe_spec(kernel, GRID, shift)
    yield f"grid 1 shift {SHIFTS[0]}", probe_spec(kernel, 1, SHIFTS[0])


def run_sweep(reference: Path, variants: list[tuple[dict, Path]], pool) -> list[dict]:
    """Byte-check each variant (a manifest row and its cubin) against the compiler's cubin at
    every probe launch, shared memory poisoned; one row per (variant, launch)."""
    from timing.evaluate import check_job, describe_status
    from timing.worker import Job

    rows = []
    for entry, path in variants:
        for label, spec in probe_launches(entry["kernel"]):
            res = describe_status(
                pool.run(Job.of(check_job, str(reference), str(path), spec, sets=SETS, timeout_s=120))
            )
            rows.append({**entry, "launch": label, "poisoned": True, **res})
    return rows


def rows_csv(rows: list[dict]) -> str:
    """The sweep's rows as CSV text, every field any row has."""
    import csv
    import io

    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=keys)
    writer.writeheader()
    writer.writerows(rows)
    return text.getvalue()
