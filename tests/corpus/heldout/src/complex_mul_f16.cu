// Held-out kernel (tests/test_compiler_output_legal.py), third batch (2026-11-30): written after the
// calibration tables were generated; never in the calibration set.
#include <cuda_fp16.h>

// Complex multiply-accumulate in half precision over interleaved (re, im) half2, with a float norm.
extern "C" __global__ void complex_mul_f16(__half2 *__restrict__ acc, const __half2 *__restrict__ a,
                                           const __half2 *__restrict__ b, float *__restrict__ norm, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    __half2 x = a[i], y = b[i], z = acc[i];
    __half2 re = __hmul2(x, y);
    __half2 im = __hmul2(x, __lowhigh2highlow(y));
    __half real = __hsub(__low2half(re), __high2half(re));
    __half imag = __hadd(__low2half(im), __high2half(im));
    z = __hadd2(z, __halves2half2(real, imag));
    acc[i] = z;
    float r = __half2float(__low2half(z)), m = __half2float(__high2half(z));
    norm[i] = sqrtf(r * r + m * m);
}
