// Held-out kernel (tests/test_compiler_output_legal.py), first batch: never in the calibration set (its verdicts guided which families the generator grew, not the generated kernels).

// Block-wide inclusive scan: warp scans with shuffles, then a scan of warp totals.
extern "C" __global__ void scan_block(int *__restrict__ out, const int *__restrict__ in, int n) {
    __shared__ int totals[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int v = i < n ? in[i] : 0;
    for (int o = 1; o < 32; o <<= 1) {
        int t = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o) v += t;
    }
    if (lane == 31) totals[warp] = v;
    __syncthreads();
    if (warp == 0) {
        int t = lane < blockDim.x / 32 ? totals[lane] : 0;
        for (int o = 1; o < 32; o <<= 1) {
            int u = __shfl_up_sync(0xffffffffu, t, o);
            if (lane >= o) t += u;
        }
        totals[lane] = t;
    }
    __syncthreads();
    if (warp > 0) v += totals[warp - 1];
    if (i < n) out[i] = v;
}
