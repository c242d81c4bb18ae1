// Held-out kernel (tests/test_compiler_output_legal.py), third batch (2026-11-30): written after the
// calibration tables were generated; never in the calibration set.

// 64-bit bit twiddling: reverse, population count, leading zeros, funnel shifts, a multiply-high.
extern "C" __global__ void bits64_mix(unsigned long long *__restrict__ out, const unsigned long long *__restrict__ in,
                                      int *__restrict__ counts, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long v = in[i];
    unsigned long long r = __brevll(v) ^ (v >> 7);
    int pc = __popcll(v);
    int lz = __clzll(r | 1ull);
    unsigned lo = (unsigned)v, hi = (unsigned)(v >> 32);
    unsigned f = __funnelshift_l(lo, hi, pc & 31) + __funnelshift_r(hi, lo, lz & 31);
    unsigned long long h = __umul64hi(v, 0x9e3779b97f4a7c15ull);
    out[i] = (h + f) * (unsigned long long)(lz + 1);
    counts[i] = pc - lz;
}
