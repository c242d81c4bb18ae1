// Reductions: shared-memory tree, warp shuffles, dynamic shared memory.
#include <cuda_runtime.h>

// Classic shared-memory tree reduction over blockDim (power of two <= 1024).
extern "C" __global__ void block_reduce_sum(float *__restrict__ partial,
                                            const float *__restrict__ in, int n) {
    __shared__ float smem[1024];
    unsigned tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    smem[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) smem[tid] += smem[tid + s];
        __syncthreads();
    }
    if (tid == 0) partial[blockIdx.x] = smem[0];
}

// Warp-level reduction with __shfl_down_sync, then float atomicAdd.
extern "C" __global__ void warp_reduce_atomic(float *__restrict__ total,
                                              const float *__restrict__ in, int n) {
    float v = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += blockDim.x * gridDim.x)
        v += in[i];
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, off);
    if ((threadIdx.x & 31) == 0) atomicAdd(total, v);
}

// Butterfly all-reduce max with __shfl_xor_sync; every lane writes result.
extern "C" __global__ void warp_allreduce_max(float *__restrict__ out,
                                              const float *__restrict__ in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = (i < n) ? in[i] : -3.0e38f;
    for (int mask = 16; mask > 0; mask >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, mask));
    if (i < n) out[i] = in[i] - v;
}

// Dynamic shared memory (extern __shared__) reduction of ints.
extern "C" __global__ void dyn_shared_reduce(int *__restrict__ partial,
                                             const int *__restrict__ in, int n) {
    extern __shared__ int dsm[];
    unsigned tid = threadIdx.x;
    int acc = 0;
    for (int i = blockIdx.x * blockDim.x + tid; i < n; i += blockDim.x * gridDim.x)
        acc += in[i];
    dsm[tid] = acc;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 32; s >>= 1) {
        if (tid < s) dsm[tid] += dsm[tid + s];
        __syncthreads();
    }
    if (tid < 32) {
        int v = dsm[tid] + (blockDim.x > 32 ? dsm[tid + 32] : 0);
        for (int off = 16; off > 0; off >>= 1)
            v += __shfl_down_sync(0xffffffffu, v, off);
        if (tid == 0) partial[blockIdx.x] = v;
    }
}
