// Held-out kernel (tests/test_compiler_output_legal.py), third batch (2026-11-30): written after the
// calibration tables were generated; never in the calibration set.
#include <cuda_bf16.h>

// One warp per row: mean and variance by xor-shuffles, then a bf16 affine normalisation.
extern "C" __global__ void layernorm_bf16(__nv_bfloat16 *__restrict__ out, const __nv_bfloat16 *__restrict__ in,
                                          const float *__restrict__ gamma, int rows, int cols) {
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x & 31;
    if (row >= rows) return;
    const __nv_bfloat16 *x = in + (long long)row * cols;
    float s = 0.f, q = 0.f;
    for (int c = lane; c < cols; c += 32) {
        float v = __bfloat162float(x[c]);
        s += v;
        q = fmaf(v, v, q);
    }
    for (int m = 16; m; m >>= 1) {
        s += __shfl_xor_sync(0xffffffffu, s, m);
        q += __shfl_xor_sync(0xffffffffu, q, m);
    }
    float mean = s / cols;
    float inv = rsqrtf(fmaxf(q / cols - mean * mean, 0.f) + 1e-5f);
    for (int c = lane; c < cols; c += 32)
        out[(long long)row * cols + c] = __float2bfloat16((__bfloat162float(x[c]) - mean) * inv * gamma[c]);
}
