// Half precision: half2 arithmetic (HADD2 / HMUL2 / HFMA2).
#include <cuda_fp16.h>

// half2 axpy: y = a*x + y with packed HFMA2.
extern "C" __global__ void haxpy_half2(__half2 *__restrict__ y,
                                       const __half2 *__restrict__ x,
                                       float a, int n2) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n2) {
        __half2 a2 = __float2half2_rn(a);
        y[i] = __hfma2(a2, x[i], y[i]);
    }
}

// Residual add + ReLU in half2 (HADD2, HMAX2-style compare/select).
extern "C" __global__ void hadd_relu_half2(__half2 *__restrict__ out,
                                           const __half2 *__restrict__ a,
                                           const __half2 *__restrict__ b, int n2) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n2) {
        __half2 s = __hadd2(a[i], b[i]);
        __half2 zero = __float2half2_rn(0.0f);
        out[i] = __hmax2(s, zero);
    }
}

// Mixed precision: half inputs, float accumulation, half output.
extern "C" __global__ void half_dot4_mixed(__half *__restrict__ out,
                                           const __half2 *__restrict__ a,
                                           const __half2 *__restrict__ b,
                                           float scale, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        __half2 p0 = __hmul2(a[2 * i], b[2 * i]);
        __half2 p1 = __hmul2(a[2 * i + 1], b[2 * i + 1]);
        __half2 s = __hadd2(p0, p1);
        float2 f = __half22float2(s);
        out[i] = __float2half((f.x + f.y) * scale);
    }
}

// Per-element degree-`deg` polynomial in half2, Horner with a runtime loop.
extern "C" __global__ void half2_horner(__half2 *__restrict__ y,
                                        const __half2 *__restrict__ x,
                                        const __half2 *__restrict__ coeffs,
                                        int deg, int n2) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n2) {
        __half2 v = x[i];
        __half2 r = coeffs[deg];
        for (int k = deg - 1; k >= 0; --k) r = __hfma2(r, v, coeffs[k]);
        y[i] = __hmul2(r, __hsub2(v, coeffs[0]));
    }
}
