// Held-out kernel (tests/test_compiler_output_legal.py), first batch: never in the calibration set (its verdicts guided which families the generator grew, not the generated kernels).

// 64-bin histogram of bytes in shared memory (shared atomics), merged into global with atomics.
extern "C" __global__ void histo64_shared(unsigned *__restrict__ bins, const unsigned char *__restrict__ data, int n) {
    __shared__ unsigned local[64];
    for (int b = threadIdx.x; b < 64; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&local[data[i] >> 2], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < 64; b += blockDim.x)
        if (local[b]) atomicAdd(&bins[b], local[b]);
}
