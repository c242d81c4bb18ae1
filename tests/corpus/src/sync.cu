// Memory fences, volatile accesses, and warp vote functions.
#include <cuda_runtime.h>

// Single-pass sum: last block (detected via fence + atomic ticket) finishes.
extern "C" __global__ void last_block_sum(float *__restrict__ result,
                                          volatile float *partial,
                                          unsigned *__restrict__ ticket,
                                          const float *__restrict__ in, int n) {
    __shared__ float sm[256];
    __shared__ bool is_last;
    float acc = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += blockDim.x * gridDim.x)
        acc += in[i];
    sm[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sm[threadIdx.x] += sm[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = sm[0];  // volatile store
        __threadfence();
        unsigned t = atomicInc(ticket, gridDim.x);
        is_last = (t == gridDim.x - 1);
    }
    __syncthreads();
    if (is_last && threadIdx.x == 0) {
        float total = 0.0f;
        for (unsigned b = 0; b < gridDim.x; ++b) total += partial[b];  // volatile loads
        *result = total;
        *ticket = 0u;
    }
}

// Producer/consumer flag handshake with volatile spin and __threadfence.
extern "C" __global__ void flag_handoff(volatile int *flag, volatile float *mailbox,
                                        float *__restrict__ out, float value) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        mailbox[0] = value;
        __threadfence();
        flag[0] = 1;
    } else if (blockIdx.x == 1 && threadIdx.x == 0) {
        while (flag[0] == 0) { }
        __threadfence();
        out[0] = mailbox[0] * 2.0f;
    }
}

// Warp votes: __ballot_sync, __any_sync, __all_sync, and __activemask.
extern "C" __global__ void warp_vote_stats(unsigned *__restrict__ ballots,
                                           int *__restrict__ flags,
                                           const float *__restrict__ x,
                                           float threshold, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = (i < n) ? x[i] : 0.0f;
    unsigned b = __ballot_sync(0xffffffffu, v > threshold);
    int any_neg = __any_sync(0xffffffffu, v < 0.0f);
    int all_fin = __all_sync(0xffffffffu, isfinite(v));
    if ((threadIdx.x & 31) == 0) {
        int w = i >> 5;
        ballots[w] = b;
        flags[w] = (any_neg ? 1 : 0) | (all_fin ? 2 : 0) | (__popc(b) << 2);
    }
}

// Divergent region followed by __syncwarp and an __activemask-based vote.
extern "C" __global__ void divergent_syncwarp(int *__restrict__ out,
                                              const int *__restrict__ in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = (i < n) ? in[i] : 0;  // no early exit: all lanes reach the match
    if (v & 1) {
        unsigned m = __activemask();
        v += __popc(m);
    } else {
        v -= 3;
    }
    __syncwarp();
    unsigned agree = __match_any_sync(0xffffffffu, v & 7);
    if (i < n) out[i] = v + __popc(agree);
}
