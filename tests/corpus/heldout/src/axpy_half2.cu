// Held-out kernel (tests/test_compiler_output_legal.py), first batch: never in the calibration set (its verdicts guided which families the generator grew, not the generated kernels).
#include <cuda_fp16.h>

// y = a*x + y over half2 pairs, with an odd-length scalar tail.
extern "C" __global__ void axpy_half2(__half *__restrict__ y, const __half *__restrict__ x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int pairs = n / 2;
    __half2 a2 = __float2half2_rn(a);
    if (i < pairs) {
        __half2 xv = reinterpret_cast<const __half2 *>(x)[i];
        __half2 yv = reinterpret_cast<__half2 *>(y)[i];
        reinterpret_cast<__half2 *>(y)[i] = __hfma2(a2, xv, yv);
    } else if (i == pairs && (n & 1)) {
        y[n - 1] = __hfma(__low2half(a2), x[n - 1], y[n - 1]);
    }
}
