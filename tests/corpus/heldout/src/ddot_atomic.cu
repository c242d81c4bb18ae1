// Held-out kernel (tests/test_compiler_output_legal.py), second batch: never in the calibration set, and measured only once the generator was frozen.

// Double-precision dot product: grid-stride partials, warp shuffles, one double atomic per warp.
extern "C" __global__ void ddot_atomic(double *__restrict__ result, const double *__restrict__ a,
                                       const double *__restrict__ b, long long n) {
    double sum = 0.0;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        sum = fma(a[i], b[i], sum);
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(result, sum);
}
