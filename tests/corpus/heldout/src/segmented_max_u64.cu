// Held-out kernel (tests/test_compiler_output_legal.py), second batch: never in the calibration set, and measured only once the generator was frozen.

// Per-segment maximum of 64-bit keys: segment id from a sorted offsets array (binary search), atomicMax.
extern "C" __global__ void segmented_max_u64(unsigned long long *__restrict__ seg_max, const unsigned long long *__restrict__ keys,
                                             const int *__restrict__ offsets, int segments, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int lo = 0, hi = segments;
    while (lo + 1 < hi) {
        int mid = (lo + hi) >> 1;
        if (offsets[mid] <= i) lo = mid; else hi = mid;
    }
    atomicMax(&seg_max[lo], keys[i]);
}
