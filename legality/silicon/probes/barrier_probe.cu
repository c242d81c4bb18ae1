// Barrier probes (legality/barrier_probe.py): every thread stores a value that changes with
// the input, the block synchronizes, and every thread reads the value another warp stored.
// A read that issues before the other warp's store is visible returns the poisoned shared
// memory (timing.poison) or a stale value: wrong bytes, over many blocks.
extern "C" __global__ void bar_sync_lds(const float* __restrict__ in, float* __restrict__ out, int shift)
{
    __shared__ float tile[1024];
    const int t = threadIdx.x;
    const int g = blockIdx.x * blockDim.x + t;
    const int partner = (t + shift) & (blockDim.x - 1);
    tile[t] = in[g] * 3.0f + 1.0f;
    __syncthreads();
    out[g] = tile[partner];
}

// The same through BAR.RED (__syncthreads_count): the count is stored too.
extern "C" __global__ void bar_red_lds(const float* __restrict__ in, float* __restrict__ out, int shift)
{
    __shared__ float tile[1024];
    const int t = threadIdx.x;
    const int g = blockIdx.x * blockDim.x + t;
    const int partner = (t + shift) & (blockDim.x - 1);
    const float v = in[g] * 3.0f + 1.0f;
    tile[t] = v;
    const int n = __syncthreads_count(v > 1.0f);
    out[g] = tile[partner] + (float)n;
}
