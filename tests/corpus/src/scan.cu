// Prefix scans: warp-shuffle inclusive scan and shared-memory block scan.
#include <cuda_runtime.h>

// Block-wide inclusive scan: warp scans via __shfl_up_sync + shared warp totals.
extern "C" __global__ void block_inclusive_scan(int *__restrict__ out,
                                                int *__restrict__ block_sums,
                                                const int *__restrict__ in, int n) {
    __shared__ int warp_tot[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    int v = (i < n) ? in[i] : 0;
    for (int off = 1; off < 32; off <<= 1) {
        int t = __shfl_up_sync(0xffffffffu, v, off);
        if (lane >= off) v += t;
    }
    if (lane == 31) warp_tot[wid] = v;
    __syncthreads();
    if (wid == 0) {
        int nw = blockDim.x >> 5;
        int t = (lane < nw) ? warp_tot[lane] : 0;
        for (int off = 1; off < 32; off <<= 1) {
            int u = __shfl_up_sync(0xffffffffu, t, off);
            if (lane >= off) t += u;
        }
        warp_tot[lane] = t;
    }
    __syncthreads();
    if (wid > 0) v += warp_tot[wid - 1];
    if (i < n) out[i] = v;
    if (threadIdx.x == blockDim.x - 1) block_sums[blockIdx.x] = v;
}

// Hillis-Steele exclusive scan in double-buffered shared memory (float).
extern "C" __global__ void hillis_steele_exclusive(float *__restrict__ out,
                                                   const float *__restrict__ in,
                                                   int n) {
    __shared__ float buf[2][512];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    int src = 0;
    buf[0][tid] = (i < n && tid > 0) ? in[i - 1] : 0.0f;
    __syncthreads();
    for (int off = 1; off < (int)blockDim.x; off <<= 1) {
        int dst = src ^ 1;
        float v = buf[src][tid];
        if (tid >= off) v += buf[src][tid - off];
        buf[dst][tid] = v;
        __syncthreads();
        src = dst;
    }
    if (i < n) out[i] = buf[src][tid];
}
