// Held-out kernel (tests/test_compiler_output_legal.py), second batch: never in the calibration set, and measured only once the generator was frozen.

// Per-block histogram of one 4-bit radix digit of 64-bit keys, 16 bins in shared memory.
extern "C" __global__ void radix_digits(unsigned *__restrict__ hist, const unsigned long long *__restrict__ keys,
                                        int n, int shift) {
    __shared__ unsigned bins[16];
    if (threadIdx.x < 16) bins[threadIdx.x] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        unsigned d = (unsigned)(keys[i] >> shift) & 15u;
        atomicAdd(&bins[d], 1u);
    }
    __syncthreads();
    if (threadIdx.x < 16) hist[blockIdx.x * 16 + threadIdx.x] = bins[threadIdx.x];
}
