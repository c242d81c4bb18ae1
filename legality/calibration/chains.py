"""Dependency-chain kernels: every value feeds the next operation at once, across types.

The fragment kernels (`legality.calibration.kernels`) have independent work to fill
every gap, so ptxas seldom places a consumer right after its producer, and the distance
the verifier learns for a pair is the smallest ptxas leaves *somewhere*. Here one value
threads through a random walk over typed operations (integer, 64-bit, float, double,
half, predicate; conversions with every rounding mode; loads of every width and cache
policy from addresses just computed; stores of values just computed; shuffles, votes,
atomics, shared memory), so each producer -> consumer pair is on the critical path with
nothing to fill the gap: ptxas shows its own floor for it. `{a}` is the chain's current
value; `{c}`, `{lane}`, `{bit}`, `{mask}`, `{perm}` are drawn constants.
"""

from __future__ import annotations

import random
import re
from collections import Counter

from legality.calibration.memory import FAMILIES, Draw

# (input type, output type or None for a store that passes the value on, template)
OPS: tuple[tuple[str, str | None, str], ...] = tuple(
    (src, dst, t)
    for src, dst, templates in (
        (
            "i32",
            "i32",
            (
                "{a} * k + {c}",
                "{a} + k",
                "{a} ^ ({a} >> {c})",
                "({a} << {c}) | ({a} >> 3)",
                "{a} & 0x{mask:x}",
                "__popc({a})",
                "__clz({a})",
                "(int)__brev({a})",
                "__ffs({a})",
                "max({a}, k)",
                "min({a}, n)",
                "abs({a})",
                "{a} / k",
                "{a} % k",
                "{a} / {c}",
                "{a} % {c}",
                "(int)__byte_perm({a}, k, 0x{perm:04x})",
                "(int)__funnelshift_r({a}, k, {c})",
                "__mulhi({a}, k)",
                "__mul24({a}, {c})",
                "{a} < k ? {a} : n",
                "(int)__sad({a}, k, {c}u)",
                "__dp4a({a}, k, n)",
                "{a} * {a}",
                "{a} - (int)threadIdx.x",
                "{a} + (int)(blockIdx.x * k)",
                "{a} * (k * n)",
                "{a} + (k >> 3)",
                "(int)((unsigned){a} / (unsigned)k)",
                "(int)((unsigned){a} % {c}u)",
                "(int)((unsigned){a} >> {c})",
                "(int)__umulhi({a}, {c}u)",
                "__shfl_sync(FULL, {a}, k)",
                "__shfl_xor_sync(FULL, {a}, {lane})",
                "__shfl_up_sync(FULL, {a}, {lane})",
                "__shfl_down_sync(FULL, {a}, {lane})",
                "__reduce_add_sync(FULL, {a})",
                "(int)__reduce_max_sync(FULL, (unsigned){a})",
                "(int)__match_any_sync(FULL, {a})",
                "__popc(__ballot_sync(FULL, {a} > k))",
                "atomicAdd(gi + ({a} & 63), 1)",
                "atomicAdd(gi + {c}, {a})",
                "atomicMax(gi + ({a} & 15), k)",
                "atomicCAS(gi + ({a} & 31), k, {a})",
                "atomicExch(gi + {c}, {a})",
                "atomicOr(gi + 3, {a})",
                "(int)atomicInc((unsigned*)gi, (unsigned){a})",
                "smi[{a} & 255]",
                "atomicAdd(&smi[{a} & 255], 1)",
                "ci[{a}]",
                "ci[(unsigned){a}]",
                "gi[{a}]",
                "__ldg(ci + {a})",
                "__ldcg(ci + {a})",
                "__ldcs(ci + {a})",
                "__ldlu(ci + {a})",
                "__ldcv(gi + {a})",
                "ci[{a} + k]",
                "ci[{a} * {c}]",
                "ci[({a} >> 2) + i]",
                "(int)cs[{a}]",
                "(int)cb[{a}]",
                "(int)gs[{a}]",
                "ci2[{a}].y",
                "ci4[{a}].z",
                "((volatile int*)gi)[{a}]",
                "{a} + (int)(clock() & 3)",
                "(int)cu[{a}]",
                "ci[(long long){a} * sl]",
                "{a} + __syncthreads_count({a} > k)",
                "{a} * __popc(k)",
                "{a} + (int)__brev(k)",
                "{a} + __ffs(n)",
                "{a} * (k << {c})",
                "{a} + (k ^ n)",
                "{a} * max(k, n)",
                "{a} + k / n",
                "{a} + (int)(sl >> 32)",
                "{a} + __clz(k) * n",
                "{a} * (int)(blockIdx.x * blockDim.x)",
                "{a} + (k * n + {c})",
                "{a} + (int)(k > n)",
            ),
        ),
        (
            "i32",
            "f32",
            (
                "(float){a}",
                "__int2float_rd({a})",
                "__int_as_float({a})",
                "cf[{a}]",
                "gf[{a}]",
                "cf[(unsigned){a}]",
                "__ldg(cf + {a})",
                "cf4[{a}].w",
                "cf4[{a}].x + cf4[{a}].y",
                "smf[{a} & 255]",
                "__uint2float_rz((unsigned){a})",
                "cf[{a} + k]",
            ),
        ),
        (
            "i32",
            "f64",
            (
                "(double){a}",
                "cd[{a}]",
                "gd[{a}]",
                "cd2[{a}].y",
                "__hiloint2double({a}, k)",
                "smd[{a} & 255]",
                "__int2double_rn({a})",
                "__uint2double_rn((unsigned){a})",
            ),
        ),
        (
            "i32",
            "i64",
            (
                "(long long){a}",
                "(long long){a} * sl",
                "cl[{a}]",
                "gl[{a}]",
                "(long long){a} * {a}",
                "(long long)((unsigned long long)(unsigned){a} * (unsigned)k)",
                "cl[(unsigned){a}]",
                "(long long)gu[{a} & 511]",
            ),
        ),
        (
            "i32",
            "h",
            (
                "__int2half_rn({a})",
                "ch[{a}]",
                "gh[{a}]",
                "__short_as_half((short){a})",
                "__int2half_rd({a})",
                "__uint2half_rz((unsigned){a})",
            ),
        ),
        (
            "i32",
            "bool",
            (
                "{a} > k",
                "({a} & {bit}) != 0",
                "__any_sync(FULL, {a} > k)",
                "__all_sync(FULL, {a} != n)",
                "(unsigned){a} < (unsigned)n",
            ),
        ),
        (
            "f32",
            "f32",
            (
                "{a} * s + {c}.5f",
                "fmaf({a}, {a}, s)",
                "{a} + s",
                "{a} * s",
                "{a} / s",
                "__fdividef({a}, s)",
                "sqrtf({a})",
                "rsqrtf({a})",
                "__expf({a})",
                "__logf({a})",
                "__sinf({a})",
                "__cosf({a})",
                "exp2f({a})",
                "__frcp_rn({a})",
                "fabsf({a})",
                "-{a}",
                "fminf({a}, s)",
                "fmaxf({a}, s)",
                "floorf({a})",
                "truncf({a})",
                "rintf({a})",
                "__saturatef({a})",
                "{a} > s ? {a} : s",
                "copysignf({a}, s)",
                "__fmul_rz({a}, s)",
                "__fadd_rd({a}, s)",
                "__fmaf_ru({a}, s, s)",
                "tanhf({a})",
                "__shfl_xor_sync(FULL, {a}, {lane})",
                "__shfl_down_sync(FULL, {a}, {lane})",
                "__shfl_up_sync(FULL, {a}, 1)",
                "__shfl_sync(FULL, {a}, k)",
                "atomicAdd(gf + {c}, {a})",
                "atomicExch(gf + {c}, {a})",
                "__fsqrt_rn({a})",
                "__fdiv_rn({a}, s)",
                "erff({a})",
                "{a} * {a} - s",
                "__powf({a}, s)",
                "__log2f({a})",
                "cf[(int){a}]",
                "{a} + smf[threadIdx.x]",
            ),
        ),
        (
            "f32",
            "i32",
            (
                "(int){a}",
                "__float2int_rd({a})",
                "__float2int_ru({a})",
                "__float2int_rz({a})",
                "__float2int_rn({a})",
                "__float_as_int({a})",
                "(int)({a} > s)",
                "(int)__float2uint_rz({a})",
                "ci[(int){a}]",
                "__float_as_int({a}) >> {c}",
            ),
        ),
        ("f32", "f64", ("(double){a}", "(double){a} * sd")),
        ("f32", "h", ("__float2half_rn({a})", "__float2half_rd({a})", "__float2half_rz({a})", "__float2half_ru({a})")),
        ("f32", "h2", ("__floats2half2_rn({a}, s)", "__float2half2_rn({a})")),
        ("f32", "i64", ("(long long){a}", "__float2ll_rd({a})", "(long long)__float2ull_rz({a})")),
        ("f32", "bool", ("{a} > s", "isnan({a})", "{a} == s")),
        (
            "f64",
            "f64",
            (
                "{a} * sd",
                "{a} + sd",
                "fma({a}, sd, {a})",
                "{a} / sd",
                "sqrt({a})",
                "rsqrt({a})",
                "fabs({a})",
                "-{a}",
                "fmin({a}, sd)",
                "floor({a})",
                "rint({a})",
                "trunc({a})",
                "__drcp_rn({a})",
                "__dadd_rz({a}, sd)",
                "__dmul_ru({a}, sd)",
                "__fma_rd({a}, sd, sd)",
                "{a} > sd ? {a} : sd",
                "__shfl_xor_sync(FULL, {a}, {lane})",
                "__shfl_down_sync(FULL, {a}, {lane})",
                "atomicAdd(gd + {c}, {a})",
                "__longlong_as_double(__double_as_longlong({a}) ^ 1)",
                "{a} * {a} - sd",
                "cd[(int){a}]",
                "{a} + smd[threadIdx.x]",
            ),
        ),
        (
            "f64",
            "f32",
            (
                "(float){a}",
                "__double2float_rd({a})",
                "__double2float_ru({a})",
                "__double2float_rz({a})",
                "__double2float_rn({a})",
            ),
        ),
        (
            "f64",
            "i32",
            (
                "(int){a}",
                "__double2int_rd({a})",
                "__double2int_ru({a})",
                "__double2int_rz({a})",
                "__double2hiint({a})",
                "__double2loint({a})",
                "(int)__double2uint_rn({a})",
            ),
        ),
        (
            "f64",
            "i64",
            ("(long long){a}", "__double2ll_rd({a})", "__double_as_longlong({a})", "(long long)__double2ull_rz({a})"),
        ),
        ("f64", "bool", ("{a} > sd", "isnan({a})")),
        (
            "i64",
            "i64",
            (
                "{a} * sl",
                "{a} + sl",
                "{a} ^ ({a} >> {c})",
                "{a} << {c}",
                "(long long)((unsigned long long){a} >> {c})",
                "{a} / sl",
                "{a} % {c}",
                "__mul64hi({a}, sl)",
                "(long long)__umul64hi((unsigned long long){a}, {c}ull)",
                "max({a}, sl)",
                "{a} & 0x{mask:x}LL",
                "{a} - (long long)threadIdx.x",
                "llabs({a})",
                "(long long)__brevll({a})",
                "{a} * {c}",
                "__shfl_xor_sync(FULL, {a}, {lane})",
                "(long long)atomicAdd(gu + {c}, (unsigned long long){a})",
                "(long long)atomicCAS(gu + ({a} & 7), (unsigned long long){a}, 1ull)",
                "(long long)atomicMax(gu + 1, (unsigned long long){a})",
                "cl[{a} & 0xffff]",
                "gl[{a}]",
                "cl[{a}]",
                "sml[{a} & 127]",
                "{a} + (long long)k * sl",
                "(long long)gu[(unsigned){a} & 1023u]",
            ),
        ),
        (
            "i64",
            "i32",
            ("(int){a}", "(int)({a} >> 32)", "__popcll({a})", "__clzll({a})", "__ffsll({a})", "(int)({a} % k)"),
        ),
        (
            "i64",
            "f64",
            (
                "(double){a}",
                "__ll2double_rd({a})",
                "__longlong_as_double({a})",
                "cd[{a}]",
                "__ull2double_rz((unsigned long long){a})",
            ),
        ),
        ("i64", "f32", ("(float){a}", "__ll2float_rz({a})", "cf[{a}]")),
        ("i64", "bool", ("{a} > sl", "{a} == 0")),
        (
            "h",
            "h",
            (
                "__hadd({a}, __float2half(s))",
                "__hmul({a}, {a})",
                "__hfma({a}, {a}, {a})",
                "__hneg({a})",
                "__habs({a})",
                "hsqrt({a})",
                "hexp({a})",
                "__hmax({a}, __float2half(s))",
                "__hdiv({a}, {a})",
                "__shfl_xor_sync(FULL, {a}, {lane})",
                "__hsub({a}, ch[i])",
            ),
        ),
        ("h", "f32", ("__half2float({a})",)),
        (
            "h",
            "i32",
            (
                "__half2int_rn({a})",
                "__half2int_rd({a})",
                "__half2int_ru({a})",
                "__half2int_rz({a})",
                "(int)__half_as_short({a})",
                "(int)__half2short_rn({a})",
                "(int)__half2uint_rd({a})",
            ),
        ),
        ("h", "h2", ("__halves2half2({a}, {a})", "__half2half2({a})")),
        ("h", "bool", ("__hgt({a}, __float2half(s))", "__hisnan({a})")),
        (
            "h2",
            "h2",
            (
                "__hfma2({a}, {a}, {a})",
                "__hadd2({a}, {a})",
                "__hmul2({a}, {a})",
                "__hsub2({a}, {a})",
                "__hmax2({a}, __float2half2_rn(s))",
                "__hmin2({a}, {a})",
                "__hneg2({a})",
                "__habs2({a})",
                "h2sqrt({a})",
                "h2exp({a})",
                "__h2div({a}, {a})",
                "__hfma2_relu({a}, {a}, {a})",
                "__lowhigh2highlow({a})",
                "__shfl_xor_sync(FULL, {a}, {lane})",
                "atomicAdd(reinterpret_cast<__half2*>(gh) + {c}, {a})",
                "__hadd2({a}, ch2[i])",
            ),
        ),
        ("h2", "h", ("__low2half({a})", "__high2half({a})", "__hadd(__low2half({a}), __high2half({a}))")),
        ("h2", "f32", ("__low2float({a}) + __high2float({a})", "__high2float({a})")),
        (
            "bool",
            "i32",
            (
                "{a} ? k : n",
                "(int){a}",
                "__popc(__ballot_sync(FULL, {a}))",
                "__any_sync(FULL, {a})",
                "__syncthreads_count({a})",
                "__syncthreads_or({a})",
            ),
        ),
        ("bool", "f32", ("{a} ? s : -s",)),
        ("bool", "f64", ("{a} ? sd : 1.0",)),
        ("bool", "i64", ("{a} ? sl : 0LL",)),
        ("bool", "h", ("{a} ? __float2half(s) : __float2half(0.0f)",)),
        (
            "i32",
            None,
            (
                "gi[i + {c}] = {a};",
                "gi[{a}] = k;",
                "gs[{a}] = (short){a};",
                "gb[{a} & 1023] = (unsigned char){a};",
                "reinterpret_cast<int2*>(gi)[i] = make_int2({a}, k);",
                "reinterpret_cast<int4*>(gi)[{a}] = make_int4({a}, {a}, k, n);",
                "smi[threadIdx.x] = {a}; __syncthreads();",
                "atomicAdd(gi + ({a} & 63), {a});",
                "__stcs(gi + i, {a});",
                "__stwt(gi + {a}, k);",
                "__stcg(gi + i, {a});",
                "((volatile int*)gi)[{c}] = {a};",
                "if ({a} > n) gi[i] = {a};",
            ),
        ),
        (
            "f32",
            None,
            (
                "gf[i] = {a};",
                "gf[(unsigned)i] = {a};",
                "reinterpret_cast<float2*>(gf)[i] = make_float2({a}, s);",
                "reinterpret_cast<float4*>(gf)[i] = make_float4({a}, {a}, s, s);",
                "atomicAdd(gf + {c}, {a});",
                "smf[threadIdx.x] = {a}; __syncthreads();",
                "gf[i + k] = {a};",
            ),
        ),
        (
            "f64",
            None,
            (
                "gd[i] = {a};",
                "gd[(unsigned)i * 2u] = {a};",
                "reinterpret_cast<double2*>(gd)[i] = make_double2({a}, sd);",
                "atomicAdd(gd + {c}, {a});",
                "smd[threadIdx.x] = {a}; __syncthreads();",
            ),
        ),
        (
            "i64",
            None,
            (
                "gl[i] = {a};",
                "gl[{a} & 1023] = sl;",
                "atomicAdd(gu + {c}, (unsigned long long){a});",
                "gu[(unsigned)i] = (unsigned long long){a};",
                "sml[threadIdx.x & 127] = {a}; __syncthreads();",
            ),
        ),
        ("h", None, ("gh[i] = {a};", "gh[(unsigned)i + k] = {a};")),
        ("h2", None, ("reinterpret_cast<__half2*>(gh)[i] = {a};",)),
        ("bool", None, ("if ({a}) gi[i] = k;",)),
    )
    for t in templates
)

C_TYPES = {
    "i32": "int",
    "f32": "float",
    "f64": "double",
    "i64": "long long",
    "h": "__half",
    "h2": "__half2",
    "bool": "bool",
}
TO_INT = {
    "i32": "{a}",
    "f32": "(int){a}",
    "f64": "(int){a}",
    "i64": "(int){a}",
    "h": "__half2int_rz({a})",
    "h2": "__half2int_rz(__low2half({a}))",
    "bool": "(int){a}",
}
FINAL_STORE = {
    "i32": "gi[{idx}] = {a};",
    "f32": "gf[{idx}] = {a};",
    "f64": "gd[{idx}] = {a};",
    "i64": "gl[{idx}] = {a};",
    "h": "gh[{idx}] = {a};",
    "h2": "reinterpret_cast<__half2*>(gh)[{idx}] = {a};",
    "bool": "gb[{idx}] = {a};",
}

SIGNATURE = (
    "const float* __restrict__ cf, const double* __restrict__ cd, const int* __restrict__ ci, "
    "const long long* __restrict__ cl, const __half* __restrict__ ch, const __half2* __restrict__ ch2, "
    "const short* __restrict__ cs, const unsigned char* __restrict__ cb, const unsigned short* __restrict__ cu, "
    "const float4* __restrict__ cf4, const double2* __restrict__ cd2, const int2* __restrict__ ci2, "
    "const int4* __restrict__ ci4, float* gf, double* gd, int* gi, long long* gl, __half* gh, short* gs, "
    "unsigned char* gb, unsigned long long* gu, const void* __restrict__ cv, void* gv, int k, int n, float s, "
    "double sd, long long sl"
)
PROLOGUE = (
    "#define FULL 0xffffffffu\n__shared__ __align__(16) float smf[256]; __shared__ double smd[256];\n"
    "__shared__ int smi[256]; __shared__ long long sml[128]; __shared__ __align__(16) unsigned char smraw[4096];\n"
)


def fill(template: str, value: str, rng: random.Random) -> str:
    """A template with the chain's value and drawn constants in place."""
    return template.format(
        a=value,
        c=rng.randint(2, 29),
        lane=rng.choice((1, 2, 4, 8, 16)),
        bit=1 << rng.randrange(8),
        mask=rng.randrange(1, 1 << 16),
        perm=rng.randrange(1 << 16),
    )


def step(draw: Draw, value: str, kind: str, last: str, seen: Counter) -> tuple[str | None, str, str]:
    """One step from `value` of type `kind`: a memory, atomic or warp step almost half the
    time (dealt from the run's decks), else the arithmetic step, of three drawn, whose
    pairing with the previous step (`last`) `seen` has counted least, so the kernels spread
    over producer -> consumer pairs: (type it leaves or None, expression or statement, what
    step it was)."""
    rng = draw.rng
    if rng.random() < 0.45:
        for family in rng.sample(FAMILIES, len(FAMILIES)):
            made = family(draw, value, kind)
            if made is not None:
                return (*made, family.__name__)
    ops = [o for o in OPS if o[0] == kind]
    candidates = [rng.choice(ops) for _ in range(3)]
    _, dst, template = min(candidates, key=lambda o: seen[(last, o[2])])
    return dst, fill(template, value, rng), template


def steps(draw: Draw, count: int, first: int, seen: Counter) -> tuple[list[str], str, str]:
    """`count` chained statements starting from the int `v{first}`: lines, last value, its type."""
    lines, value, kind, last = [], f"v{first}", "i32", ""
    for j in range(first + 1, first + 1 + count):
        dst, code, what = step(draw, value, kind, last, seen)
        seen[(last, what)] += 1
        last = what
        if dst is None:
            lines.append(code if code.endswith(";") else code + ";")
            continue
        if dst == kind and "_sync(" not in code and draw.rng.random() < 0.15:  # no warp op under a branch
            code = f"(i & {1 << draw.rng.randrange(6)}) ? ({code}) : {value}"  # guarded: SEL or predicated code
        lines.append(f"{C_TYPES[dst]} v{j} = {code};")
        value, kind = f"v{j}", dst
    return lines, value, kind


def rename(text: str) -> str:
    return re.sub(r"\bv(\d+)\b", r"w\1", text)


def twin(lines: list[str]) -> list[str]:
    """The same steps on a second, independent value (`w` for `v`), interleaved line by line:
    what unrolled code looks like (two address computations, then two loads), where ptxas
    packs producer -> consumer pairs differently than in a single chain."""
    return [x for line in lines for x in (line, rename(line))]


def chain_kernel(name: str, draw: Draw, seen: Counter) -> str:
    """One kernel: a chain from the thread index (twinned on half the kernels), in a loop
    over `k` on some (the values carried back as ints), its ends stored."""
    rng = draw.rng
    body, value, kind = steps(draw, rng.randint(12, 30), 1, seen)
    twinned = rng.random() < 0.5
    values = [value, rename(value)] if twinned else [value]
    if twinned:
        body = twin(body)
    if rng.random() < 0.4:
        carry = [f"    {rename('v1') if n else 'v1'} = {TO_INT[kind].format(a=v)};" for n, v in enumerate(values)]
        body = ["for (int it = 0; it < k; ++it) {"] + ["    " + x for x in body] + carry + ["}"]
        values, kind = ["v1", "w1"][: len(values)], "i32"
    start = ["int v1 = i;"] + (["int w1 = i ^ (k & 31);"] if twinned else [])
    end = [FINAL_STORE[kind].format(a=v, idx="i" if n == 0 else "i + n") for n, v in enumerate(values)]
    lines = ["int i = blockIdx.x * blockDim.x + threadIdx.x;", *start, *body, *end]
    text = "\n    ".join(lines)
    bounds = rng.choice(("", "", "__launch_bounds__(256, 8) ", "__launch_bounds__(1024) "))
    return f'extern "C" __global__ void {bounds}{name}({SIGNATURE}) {{\n    {text}\n}}\n'
