// Held-out kernel (tests/test_compiler_output_legal.py), first batch: never in the calibration set (its verdicts guided which families the generator grew, not the generated kernels).
#include <cuda_fp16.h>

// Welford mean/variance per block over a strided range, merged across the warp.
extern "C" __global__ void welford_stats(float2 *__restrict__ stats, const float *__restrict__ in, int n) {
    float mean = 0.0f, m2 = 0.0f, count = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        float x = in[i];
        count += 1.0f;
        float delta = x - mean;
        mean += delta / count;
        m2 += delta * (x - mean);
    }
    for (int o = 16; o > 0; o >>= 1) {
        float c2 = __shfl_down_sync(0xffffffffu, count, o);
        float mean2 = __shfl_down_sync(0xffffffffu, mean, o);
        float m22 = __shfl_down_sync(0xffffffffu, m2, o);
        float total = count + c2;
        float delta = mean2 - mean;
        float w = total > 0.0f ? c2 / total : 0.0f;
        mean += delta * w;
        m2 += m22 + delta * delta * count * w;
        count = total;
    }
    if ((threadIdx.x & 31) == 0) stats[(blockIdx.x * blockDim.x + threadIdx.x) / 32] = make_float2(mean, m2);
}
