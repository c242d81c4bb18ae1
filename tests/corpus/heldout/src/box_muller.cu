// Held-out kernel (tests/test_compiler_output_legal.py), second batch: never in the calibration set, and measured only once the generator was frozen.

// xorshift32 uniforms turned into normal samples with Box-Muller.
extern "C" __global__ void box_muller(float2 *__restrict__ out, unsigned seed, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned s = seed ^ (i * 2654435761u);
    s ^= s << 13; s ^= s >> 17; s ^= s << 5;
    float u1 = (s >> 8) * (1.0f / 16777216.0f) + 1e-7f;
    s ^= s << 13; s ^= s >> 17; s ^= s << 5;
    float u2 = (s >> 8) * (1.0f / 16777216.0f);
    float r = sqrtf(-2.0f * logf(u1)), sn, cs;
    sincospif(2.0f * u2, &sn, &cs);
    out[i] = make_float2(r * cs, r * sn);
}
