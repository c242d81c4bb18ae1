// Elementwise / memory-bound kernels: grid-stride loops, __ldg, vector loads.
#include <cuda_runtime.h>

// memcpy-like grid-stride loop with read-only (__ldg) loads.
extern "C" __global__ void saxpy_grid_stride(float *__restrict__ y,
                                             const float *__restrict__ x,
                                             float a, int n) {
    int stride = blockDim.x * gridDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        y[i] = a * __ldg(&x[i]) + y[i];
    }
}

// Plain grid-stride copy (memcpy-like), byte granularity tail-free version.
extern "C" __global__ void copy_grid_stride(int *__restrict__ dst,
                                            const int *__restrict__ src, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += blockDim.x * gridDim.x) {
        dst[i] = src[i];
    }
}

// float4 vectorised scale + bias (128-bit loads/stores).
extern "C" __global__ void scale_bias_float4(float4 *__restrict__ out,
                                             const float4 *__restrict__ in,
                                             float scale, float bias, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = in[i];
        v.x = v.x * scale + bias;
        v.y = v.y * scale + bias;
        v.z = v.z * scale + bias;
        v.w = v.w * scale + bias;
        out[i] = v;
    }
}

// int4 vectorised xor-mix.
extern "C" __global__ void xor_mix_int4(int4 *__restrict__ out,
                                        const int4 *__restrict__ a,
                                        const int4 *__restrict__ b, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        int4 p = a[i];
        int4 q = __ldg(&b[i]);
        out[i] = make_int4(p.x ^ q.y, p.y ^ q.z, p.z ^ q.w, p.w ^ q.x);
    }
}

// float2 complex multiply.
extern "C" __global__ void complex_mul_float2(float2 *__restrict__ out,
                                              const float2 *__restrict__ a,
                                              const float2 *__restrict__ b,
                                              int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float2 p = a[i];
        float2 q = b[i];
        out[i] = make_float2(p.x * q.x - p.y * q.y, p.x * q.y + p.y * q.x);
    }
}
