// Held-out kernel (tests/test_compiler_output_legal.py), second batch: never in the calibration set, and measured only once the generator was frozen.
#include <cuda_bf16.h>

// bfloat16 pairs scaled and shifted in float, rounded back, with a saturating clamp.
extern "C" __global__ void bf16_scale(__nv_bfloat162 *__restrict__ out, const __nv_bfloat162 *__restrict__ in,
                                      float scale, float shift, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float2 v = __bfloat1622float2(in[i]);
    v.x = fminf(fmaxf(v.x * scale + shift, -448.f), 448.f);
    v.y = fminf(fmaxf(v.y * scale + shift, -448.f), 448.f);
    out[i] = __floats2bfloat162_rn(v.x, v.y);
}
