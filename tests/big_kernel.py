"""A large kernel made at test time: an unrolled FMA chain over 8 accumulators, each step a
load and an FMA, written as nvcc's PTX writes it (ld.global.nc at growing immediate offsets
off one address, fma.rn.f32), then compiled by ptxas -O3. `loads=10_000` gives 20,040 SASS
instructions on sm_90. A generator, not a checked-in binary: the size is a parameter."""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

KERNEL = "fma_chain"
ACCUMULATORS = 8


def _f32(value: float) -> str:
    return f"0f{struct.unpack('<I', struct.pack('<f', value))[0]:08X}"


def ptx_text(loads: int) -> str:
    """The PTX of `fma_chain(const float *a, float *out, int n)` with `loads` load+FMA steps."""
    body, count, accs = [], 0, []

    def reg() -> str:
        nonlocal count
        count += 1
        return f"%f{count}"

    for j in range(ACCUMULATORS):
        accs.append(reg())
        body.append(f"\tmov.f32 \t{accs[-1]}, {_f32(j + 0.5)};")
    for k in range(loads):
        x, y = reg(), reg()
        body.append(f"\tld.global.nc.f32 \t{x}, [%rd6+{k * 256}];")
        body.append(f"\tfma.rn.f32 \t{y}, {x}, {accs[k % ACCUMULATORS]}, {_f32((k % 7) * 0.125 + 0.5)};")
        accs[k % ACCUMULATORS] = y
    total = accs[0]
    for a in accs[1:]:
        t = reg()
        body.append(f"\tadd.f32 \t{t}, {total}, {a};")
        total = t
    head = f""".version 9.0
.target sm_90
.address_size 64

.visible .entry {KERNEL}(
\t.param .u64 {KERNEL}_param_0,
\t.param .u64 {KERNEL}_param_1,
\t.param .u32 {KERNEL}_param_2
)
{{
\t.reg .f32 \t%f<{count + 1}>;
\t.reg .b32 \t%r<5>;
\t.reg .b64 \t%rd<8>;

\tld.param.u64 \t%rd1, [{KERNEL}_param_0];
\tld.param.u64 \t%rd2, [{KERNEL}_param_1];
\tcvta.to.global.u64 \t%rd3, %rd2;
\tcvta.to.global.u64 \t%rd4, %rd1;
\tmov.u32 \t%r1, %ctaid.x;
\tmov.u32 \t%r2, %ntid.x;
\tmov.u32 \t%r3, %tid.x;
\tmad.lo.s32 \t%r4, %r1, %r2, %r3;
\tmul.wide.s32 \t%rd5, %r4, 4;
\tadd.s64 \t%rd6, %rd4, %rd5;
"""
    tail = f"""
\tadd.s64 \t%rd7, %rd3, %rd5;
\tst.global.f32 \t[%rd7], {total};
\tret;
}}
"""
    return head + "\n".join(body) + tail


def build(folder: Path, loads: int = 10_000) -> Path:
    """ptxas -O3's cubin of the kernel, in `folder`."""
    from reorder.binary.tools import find_tool

    folder.mkdir(parents=True, exist_ok=True)
    ptx = folder / f"{KERNEL}_{loads}.ptx"
    ptx.write_text(ptx_text(loads))
    cubin = ptx.with_suffix(".cubin")
    ptxas = str(find_tool("ptxas"))
    subprocess.run([ptxas, "-O3", "-arch=sm_90", "-o", str(cubin), str(ptx)], check=True, capture_output=True)
    return cubin
