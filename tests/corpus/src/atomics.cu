// Atomic operations: shared/global histogram, atomicMax, atomicCAS loops.
#include <cuda_runtime.h>

// 256-bin histogram with shared-memory atomics, flushed with global atomics.
extern "C" __global__ void histogram256(unsigned *__restrict__ hist,
                                        const unsigned char *__restrict__ data,
                                        int n) {
    __shared__ unsigned bins[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) bins[b] = 0u;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += blockDim.x * gridDim.x)
        atomicAdd(&bins[data[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x) {
        unsigned c = bins[b];
        if (c) atomicAdd(&hist[b], c);
    }
}

// Integer atomicMax + atomicMin over a key array, returning old values.
extern "C" __global__ void atomic_minmax_int(int *__restrict__ gmax,
                                             int *__restrict__ gmin,
                                             int *__restrict__ old_out,
                                             const int *__restrict__ keys, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int k = keys[i];
        int old = atomicMax(gmax, k);
        atomicMin(gmin, k);
        old_out[i] = old;
    }
}

// Float max implemented with an atomicCAS retry loop.
extern "C" __global__ void atomic_cas_fmax(float *__restrict__ result,
                                           const float *__restrict__ in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = in[i];
    int *addr = reinterpret_cast<int *>(result);
    int old = *addr;
    while (__int_as_float(old) < v) {
        int assumed = old;
        old = atomicCAS(addr, assumed, __float_as_int(v));
        if (old == assumed) break;
    }
}

// Integer atomicAdd used as a work-queue ticket counter (uses return value).
extern "C" __global__ void ticket_compact(int *__restrict__ out,
                                          int *__restrict__ counter,
                                          const int *__restrict__ in,
                                          int threshold, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int v = in[i];
        if (v > threshold) {
            int slot = atomicAdd(counter, 1);
            out[slot] = v;
        }
    }
}
