// Kernels whose loads sit in a block entered from one predecessor by a guarded branch, with
// their address known before the branch: the branch tests a value loaded first, and the
// guarded block loads again from the same row (the shape of a gated epilogue, or of the tail
// of an unrolled loop that tests how much is left).

// y[i] = x[i] * x[i + 32] where x[i] > 0: the second load needs only the first's address.
extern "C" __global__ void gated_pair(const float* x, float* y) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float a = x[i];
    if (a > 0.0f) {
        y[i] = a * x[i + 32];
    }
}

// The same, but the guarded block first stores to y: without --assume-noalias the load of x
// may read what that store wrote, so it stays below it. (Each thread writes its own two
// elements of y: no two threads write one element.)
extern "C" __global__ void gated_after_store(const float* x, float* y) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float a = x[i];
    if (a > 0.0f) {
        y[2 * i] = a;
        y[2 * i + 1] = x[i + 32];
    }
}
