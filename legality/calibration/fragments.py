"""CUDA statement fragments the calibration kernels are assembled from, grouped by family.

Each fragment is one C++ statement (or braced block) over the kernel's six working
values `vf` (float), `vd` (double), `vx` (int), `vu` (unsigned), `vl` (long long) and
`vh` (__half2), the thread index `i`, and the parameters `k n s sd sl` (which live in
the constant bank, so ptxas reads them with ULDC/LDC and computes on them in the uniform
datapath). `{c}` is a small constant, `{lane}` a shuffle distance, `{perm}` a byte
selector, `{bit}` a one-bit mask, `{body}` a nested arithmetic fragment. They are data,
not code: what matters is that together they make ptxas emit the producer -> consumer
pairs real kernels have (see `legality.calibration.kernels`).
"""

from __future__ import annotations

FLOAT = (
    "vf = fmaf(vf, s, {c}.5f);",
    "vf = vf * vf + s;",
    "vf = vf / (s + {c}.0f);",
    "vf = sqrtf(fabsf(vf));",
    "vf = rsqrtf(vf * vf + 1.0f);",
    "vf = __expf(vf) - 1.0f;",
    "vf = expf(vf * 0.25f);",
    "vf = logf(fabsf(vf) + 1.0f);",
    "vf = __sinf(vf) + __cosf(vf);",
    "vf = sinf(vf);",
    "vf = fminf(fmaxf(vf, -s), s);",
    "vf = __fdividef(vf, s + 2.0f);",
    "vf = floorf(vf * {c}.0f) + truncf(vf);",
    "vf = vf > s ? vf - s : -vf;",
    "vf = tanhf(vf);",
    "vf = powf(fabsf(vf), 1.5f);",
    "vf = atan2f(vf, s);",
    "vf = __saturatef(vf) * {c}.0f;",
    "vf = copysignf(vf * 0.5f, s);",
    "vf += vf * 3.0f - s * {c}.0f;",
    "vf = exp2f(vf) + log2f(fabsf(vf) + 2.0f);",
    "vf = __frcp_rn(vf + {c}.0f);",
    "vf = erff(vf);",
)

DOUBLE = (
    "vd = fma(vd, sd, {c}.25);",
    "vd = vd * vd + sd;",
    "vd = vd / (sd + {c}.0);",
    "vd = sqrt(fabs(vd));",
    "vd = vd - sd * {c}.0;",
    "vd = fmax(fmin(vd, sd), -sd);",
    "vd = rint(vd * 0.5) + floor(vd);",
    "vd = exp(vd * 0.125);",
    "vd = log(fabs(vd) + 1.0);",
    "vd = vd > sd ? vd * 2.0 : vd + 1.0;",
    "vd = rsqrt(vd * vd + 1.0);",
    "vd = vd * {c}.0 + vd * sd;",
    "vd += vd * vd * vd - sd;",
    "vd = __drcp_rn(vd + {c}.0);",
    "vd = fabs(vd) < sd ? -vd : trunc(vd);",
)

INT = (
    "vx = vx * k + {c};",
    "vx = vx / (k | 1);",
    "vx = vx % (k + {c});",
    "vx = vx / {c};",
    "vx = vx % {c};",
    "vx += __popc(vx) + __clz(vx);",
    "vx = __brev(vx) ^ (vx >> {c});",
    "vx = max(vx, k) - min(vx, {c});",
    "vx = (vx << (k & 7)) | (vx >> 3);",
    "vx = __byte_perm(vx, k, 0x{perm:04x});",
    "vx = __mul24(vx, k) + __umulhi(vx, {c}u);",
    "vx = abs(vx - k);",
    "vx = __funnelshift_l(vx, k, {c});",
    "vx = __ffs(vx) + __sad(vx, k, {c}u);",
    "vx = vx * {c} - (vx >> 4);",
    "vx ^= vx >> 13; vx *= 0x5bd1e995;",
    "vx = __dp4a(vx, k, vx);",
    "vx = vx < k ? vx + {c} : vx - n;",
    "vx = __mulhi(vx, k) + (vx & {c});",
)

UNSIGNED = (
    "vu = vu * 2654435761u + k;",
    "vu = vu / (unsigned)(k | 1);",
    "vu = vu % {c}u;",
    "vu = __usad(vu, k, vu);",
    "vu = (vu >> {c}) | (vu << (32 - {c}));",
    "vu = __vabsdiffu4(vu, (unsigned)k);",
    "vu = __uhadd(vu, k);",
    "vu = vu / {c}u + vu % 7u;",
    "vu = __umul24(vu, vu) ^ __brev(vu);",
    "vu = min(vu, (unsigned)n) + {c}u;",
)

INT64 = (
    "vl = vl * sl + vx;",
    "vl ^= vl >> {c}; vl *= 0x9e3779b97f4a7c15LL;",
    "vl = vl / (sl | 1);",
    "vl = vl % {c};",
    "vl += __mul64hi(vl, sl);",
    "vl += __popcll(vl) + __clzll(vl);",
    "vl = (long long)vu * vu + vl;",
    "vl = (long long)vx * k + vl;",
    "vl = vl < sl ? vl << {c} : vl >> 2;",
    "vl = max(vl, sl) - {c};",
    "vl = (long long)((unsigned long long)vl >> (k & 31));",
    "vl = (long long)__brevll(vl) ^ vl;",
    "vl = (unsigned long long)vl / {c}ull;",
    "vl += (long long)i * sl;",
)

HALF = (
    "vh = __hfma2(vh, vh, vh);",
    "vh = __hadd2(vh, __float2half2_rn(s));",
    "vh = __hmul2(vh, vh);",
    "vh = __hmax2(vh, __hneg2(vh));",
    "vh = h2sqrt(__habs2(vh));",
    "vh = __h2div(vh, __float2half2_rn({c}.0f));",
    "vh = __hsub2(vh, __lowhigh2highlow(vh));",
    "vh = h2exp(vh);",
    "vh = __hfma2_relu(vh, vh, vh);",
    "vh = __hmin2(vh, __float2half2_rn(s));",
    "vh = __hgt2(vh, __float2half2_rn(s));",
)

CONVERT = (
    "vf = (float)vd;",
    "vd = (double)vf;",
    "vx = (int)vf;",
    "vf = (float)vx;",
    "vx = __float2int_rn(vf);",
    "vl = (long long)vd;",
    "vd = (double)vl;",
    "vf = (float)vl;",
    "vl = __float2ll_rz(vf);",
    "vu = __float2uint_rn(vf);",
    "vf = (float)vu * 0.5f;",
    "vf = __low2float(vh) + __high2float(vh);",
    "vh = __floats2half2_rn(vf, vf * 2.0f);",
    "vd = (double)vx;",
    "vx = (int)vd;",
    "vf = __int_as_float(vx ^ 0x7f);",
    "vx = __float_as_int(vf) >> {c};",
    "vd = __hiloint2double(vx, vx + 1);",
    "vx = __double2hiint(vd) ^ __double2loint(vd);",
    "vd = (double)vu;",
    "vu = (unsigned)vd;",
    "vh = __halves2half2(__float2half_rz(vf), __int2half_rn(vx));",
    "vx = __half2int_rn(__low2half(vh));",
    "vd = __longlong_as_double(vl);",
    "vl = __double_as_longlong(vd) ^ vl;",
    "vf = (float)vd * vf;",
    "vx = __float2int_rz(vf * s);",
    "vd = (double)__half2float(__high2half(vh));",
    "vl = (long long)vf;",
    "vd = __int2double_rn(vx) + (double)vf;",
    "vf = (float)(vd * sd);",
    "vu = (unsigned)vl + __double2uint_rz(vd);",
)

MEMORY = (
    "vf += pf[i + k];",
    "vf += __ldg(pf + (i ^ {c}));",
    "vd += pd[(unsigned)vx & 4095u];",
    "vx += pi[vx & 1023];",
    "vl += pl[i + {c}];",
    "{{ float4 t = reinterpret_cast<const float4*>(pf)[i]; vf += t.x * t.w + t.y - t.z; }}",
    "{{ double2 t = reinterpret_cast<const double2*>(pd)[i]; vd += t.x * t.y; }}",
    "{{ int4 t = reinterpret_cast<const int4*>(pi)[i]; vx += t.x ^ t.y ^ t.z ^ t.w; }}",
    "{{ int2 t = reinterpret_cast<const int2*>(pi)[i + k]; vx += t.x * t.y; }}",
    "{{ longlong2 t = reinterpret_cast<const longlong2*>(pl)[i]; vl += t.x - t.y; }}",
    "od[(unsigned)vx] = vd;",
    "of[(unsigned)(vx & 1023) * {c}u] = vf;",
    "reinterpret_cast<float2*>(of)[i] = make_float2(vf, vf + 1.0f);",
    "reinterpret_cast<double2*>(od)[i + k] = make_double2(vd, vd * 2.0);",
    "reinterpret_cast<int4*>(oi)[i] = make_int4(vx, vx + 1, vx + 2, vx + 3);",
    "ol[(long long)vx * {c}] = vl;",
    "__stcs(of + i, vf);",
    "vf += __ldcs(pf + i + {c});",
    "vh = __hadd2(vh, ph[vu & 255u]);",
    "{{ float t[8]; for (int j = 0; j < 8; ++j) t[j] = vf * j; vf = t[vx & 7]; }}",
    "od[vu] = (double)vf;",
    "vd += pd[(long long)vl & 0xffff];",
    "ol[vu * 2u] = vl + vx;",
)

SHARED = (
    "smf[threadIdx.x] = vf; __syncthreads(); vf += smf[(threadIdx.x + {c}) & 255]; __syncthreads();",
    "smd[threadIdx.x] = vd; __syncthreads(); vd = smd[255 - threadIdx.x] * vd;",
    "atomicAdd(&smi[vx & 255], 1); __syncthreads(); vx += smi[threadIdx.x];",
    "smi[threadIdx.x] = vx; __syncwarp(); vx ^= smi[threadIdx.x ^ 1];",
    "{{ float4 t = reinterpret_cast<float4*>(smf)[threadIdx.x & 63]; vf += t.x + t.w; }}",
    (
        "smf[threadIdx.x] = vf; __syncthreads(); for (int o = 128; o > 0; o >>= 1) {{ if (threadIdx.x < o) "
        "smf[threadIdx.x] += smf[threadIdx.x + o]; __syncthreads(); }} vf = smf[0];"
    ),
    "sml[threadIdx.x & 127] = vl; __syncthreads(); vl += sml[(threadIdx.x + {c}) & 127];",
    "atomicMax(&smi[vu & 63], vx); __syncthreads(); vx = smi[threadIdx.x & 63];",
    "smh[threadIdx.x] = vh; __syncthreads(); vh = __hadd2(vh, smh[threadIdx.x ^ {lane}]);",
)

WARP = (
    "vf += __shfl_xor_sync(0xffffffffu, vf, {lane});",
    "vd += __shfl_down_sync(0xffffffffu, vd, {lane});",
    "vx = __shfl_sync(0xffffffffu, vx, k & 31);",
    "vl += __shfl_up_sync(0xffffffffu, vl, 1);",
    "vx += __popc(__ballot_sync(0xffffffffu, vf > s));",
    "if (__all_sync(0xffffffffu, vx > k)) vf += 1.0f;",
    "vx += __reduce_add_sync(0xffffffffu, vx);",
    "vu = __reduce_max_sync(0xffffffffu, vu);",
    "vx = __match_any_sync(0xffffffffu, vx) ^ vx;",
    "vx += (__activemask() >> (threadIdx.x & 31)) & 1;",
    "vh = __shfl_xor_sync(0xffffffffu, vh, {lane});",
    "if (__any_sync(0xffffffffu, vd > sd)) vx -= {c};",
    "vu = __reduce_or_sync(0xffffffffu, vu) + __reduce_min_sync(0xffffffffu, vu);",
)

ATOMIC = (
    "atomicAdd(of + (vx & 255), vf);",
    "vx += atomicAdd(oi + (vx & 63), 1);",
    "atomicMax(oi + {c}, vx);",
    "atomicAdd(od + (i & 127), vd);",
    "vx = atomicCAS(oi + (i & 31), vx, vx + 1);",
    "vu = atomicInc((unsigned*)oi, vu);",
    "atomicExch(of + i, vf);",
    "vl = (long long)atomicAdd((unsigned long long*)ol, (unsigned long long)vl);",
    "atomicMin(oi + (vu & 15), vx);",
    "atomicOr(oi, vx);",
    "__threadfence(); atomicAdd(oi + 1, 1);",
    "atomicAdd(oh + (i & 15), vh);",
    "vf = atomicAdd(of + {c}, vf) * 2.0f;",
)

UNIFORM = (
    "vx += k * blockIdx.x + n;",
    "vf += pf[blockIdx.x * k + threadIdx.x];",
    "vl += sl * (long long)blockIdx.y;",
    "vf *= s * s + (float)k;",
    "vd += sd * (double)k;",
    "vx += (k >> 2) * (n & 0xff) + blockIdx.x * blockDim.x;",
    "vf += pf[(blockIdx.x * k + n) * 4 + threadIdx.x];",
    "vu += threadIdx.x % 32 + blockIdx.z * (unsigned)k;",
    "vx += (int)(clock() & 7);",
    "vl += clock64() & 0xff;",
    "vd += pd[blockIdx.x * (unsigned)n + {c}] * sd;",
    "vl += pl[(long long)blockIdx.x * sl + threadIdx.x];",
)

LOOPS = (
    "for (int j = 0; j < k; ++j) {{ {body} }}",
    "#pragma unroll 4\nfor (int j = 0; j < k; ++j) {{ {body} }}",
    "for (int j = 0; j < {c}; ++j) {{ {body} }}",
    "while (vx > {c} && vx < k) {{ vx = (vx & 1) ? 3 * vx + 1 : vx >> 1; }}",
    "for (int j = 0; j < k; ++j) vf = fmaf(vf, s, pf[i + j * n]);",
    "for (int j = n; j > 0; j -= {c}) {{ {body} }}",
)

BRANCH = (
    "if (vx & {bit}) {{ {body} }}",
    "if (vf > s) {{ {body} }} else {{ {body} }}",
    "if (i < k) {{ {body} }}",
    "if (vl > sl) {{ {body} }}",
    "if (threadIdx.x < {c}) {{ {body} }}",
)

# Families and how often a kernel draws from each: arithmetic dominates, as in real code.
FAMILIES: dict[str, tuple[tuple[str, ...], int]] = {
    "float": (FLOAT, 6),
    "double": (DOUBLE, 5),
    "int": (INT, 6),
    "unsigned": (UNSIGNED, 3),
    "int64": (INT64, 5),
    "half": (HALF, 3),
    "convert": (CONVERT, 6),
    "memory": (MEMORY, 5),
    "shared": (SHARED, 2),
    "warp": (WARP, 3),
    "atomic": (ATOMIC, 2),
    "uniform": (UNIFORM, 3),
    "loop": (LOOPS, 2),
    "branch": (BRANCH, 3),
}

# Families whose fragments may nest inside a loop or a branch (`{body}`).
NESTABLE = ("float", "double", "int", "unsigned", "int64", "half", "convert", "memory", "uniform")
