// Normalisation layers: RMSNorm and softmax rows (one block per row).
#include <cuda_runtime.h>

__device__ __forceinline__ float warp_sum(float v) {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
    return v;
}

// RMSNorm: y = x * rsqrt(mean(x^2) + eps) * w ; blockDim.x multiple of 32.
extern "C" __global__ void rmsnorm_rows(float *__restrict__ y,
                                        const float *__restrict__ x,
                                        const float *__restrict__ w, int cols,
                                        float eps) {
    __shared__ float warp_part[32];
    const float *xr = x + (size_t)blockIdx.x * cols;
    float *yr = y + (size_t)blockIdx.x * cols;
    float ss = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float v = xr[c];
        ss += v * v;
    }
    ss = warp_sum(ss);
    int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    if (lane == 0) warp_part[wid] = ss;
    __syncthreads();
    if (wid == 0) {
        float t = (lane < (int)(blockDim.x >> 5)) ? warp_part[lane] : 0.0f;
        t = warp_sum(t);
        if (lane == 0) warp_part[0] = rsqrtf(t / (float)cols + eps);
    }
    __syncthreads();
    float inv = warp_part[0];
    for (int c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = xr[c] * inv * __ldg(&w[c]);
}

// Numerically stable softmax over a row; block-wide max and sum.
extern "C" __global__ void softmax_rows(float *__restrict__ y,
                                        const float *__restrict__ x, int cols) {
    __shared__ float red[32];
    const float *xr = x + (size_t)blockIdx.x * cols;
    float *yr = y + (size_t)blockIdx.x * cols;
    int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    int nw = blockDim.x >> 5;

    float m = -3.0e38f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, xr[c]);
    m = warp_max(m);
    if (lane == 0) red[wid] = m;
    __syncthreads();
    m = warp_max(lane < nw ? red[lane] : -3.0e38f);
    __syncthreads();

    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += __expf(xr[c] - m);
    s = warp_sum(s);
    if (lane == 0) red[wid] = s;
    __syncthreads();
    s = warp_sum(lane < nw ? red[lane] : 0.0f);
    float inv = 1.0f / s;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = __expf(xr[c] - m) * inv;
}
