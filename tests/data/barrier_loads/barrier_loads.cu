// Row kernels whose loads of read-only weights follow the block's reduction barrier, in
// straight-line code (one element per thread, 256 threads per row): the shape of a LayerNorm
// or a scale-by-row-sum epilogue when the row fits in one block.

#define THREADS 256
#define WARPS (THREADS / 32)

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// y = x * rsqrt(mean(x^2) + eps) * w + b, one row of THREADS per block.
extern "C" __global__ void __launch_bounds__(THREADS) rmsnorm_row256(
    const float* x, const float* w, const float* b, float* y, float eps) {
    __shared__ float partial[WARPS];
    const int row = blockIdx.x, t = threadIdx.x;
    const float v = x[row * THREADS + t];
    const float s = warp_sum(v * v);
    if ((t & 31) == 0) partial[t >> 5] = s;
    __syncthreads();
    float total = 0.f;
#pragma unroll
    for (int k = 0; k < WARPS; ++k) total += partial[k];
    const float r = rsqrtf(total / THREADS + eps);
    y[row * THREADS + t] = v * r * w[t] + b[t];
}

// LayerNorm over one row of THREADS per block: mean, then variance, then gamma and beta.
extern "C" __global__ void __launch_bounds__(THREADS) layernorm_row256(
    const float* x, const float* gamma, const float* beta, float* y, float eps) {
    __shared__ float part_mean[WARPS];
    __shared__ float part_var[WARPS];
    const int row = blockIdx.x, t = threadIdx.x;
    const float v = x[row * THREADS + t];
    float s = warp_sum(v);
    if ((t & 31) == 0) part_mean[t >> 5] = s;
    __syncthreads();
    float mean = 0.f;
#pragma unroll
    for (int k = 0; k < WARPS; ++k) mean += part_mean[k];
    mean /= THREADS;
    const float d = v - mean;
    s = warp_sum(d * d);
    if ((t & 31) == 0) part_var[t >> 5] = s;
    __syncthreads();
    float var = 0.f;
#pragma unroll
    for (int k = 0; k < WARPS; ++k) var += part_var[k];
    const float r = rsqrtf(var / THREADS + eps);
    y[row * THREADS + t] = d * r * gamma[t] + beta[t];
}

// The same row scaled by its sum, but the row's sum is first written to `x` itself before the
// barrier (an in-place scratch): the load of x after the barrier must not move above it.
extern "C" __global__ void __launch_bounds__(THREADS) scale_inplace_row256(float* x, float* y) {
    __shared__ float partial[WARPS];
    const int row = blockIdx.x, t = threadIdx.x;
    const float v = x[row * THREADS + t];
    const float s = warp_sum(v);
    if ((t & 31) == 0) partial[t >> 5] = s;
    if (t == 0) x[row * THREADS + THREADS - 1] = 0.f;
    __syncthreads();
    float total = 0.f;
#pragma unroll
    for (int k = 0; k < WARPS; ++k) total += partial[k];
    y[row * THREADS + t] = x[row * THREADS + ((t + 1) % THREADS)] * total;
}

// The row's sum of squares is also kept in `stats` before the barrier: the loads of w after it
// may cross the barrier only if `stats` and `w` are distinct buffers (--assume-noalias).
extern "C" __global__ void __launch_bounds__(THREADS) rmsnorm_stats_row256(
    const float* x, const float* w, float* stats, float* y, float eps) {
    __shared__ float partial[WARPS];
    const int row = blockIdx.x, t = threadIdx.x;
    const float v = x[row * THREADS + t];
    const float s = warp_sum(v * v);
    if ((t & 31) == 0) partial[t >> 5] = s;
    if (t == 0) stats[row] = s;
    __syncthreads();
    float total = 0.f;
#pragma unroll
    for (int k = 0; k < WARPS; ++k) total += partial[k];
    y[row * THREADS + t] = v * rsqrtf(total / THREADS + eps) * w[t];
}
