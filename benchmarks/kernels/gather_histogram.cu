// Histogram of gathered keys: for each i, key = keys[perm[i]] (a pointer-chase
// style gather whose address comes from a previous load), hashed into one of
// n_bins (a power of two) shared-memory bins with atomicAdd. CTA b owns the
// contiguous tile [b*tile, (b+1)*tile), tile = ceil(n / gridDim.x), and writes
// its own partial histogram row, so no pre-zeroed global memory is needed, a
// launch is repeatable, and the result depends on the grid but not the block
// size. The full histogram is the column sum.

namespace {

// Multiplicative mixing so adjacent keys spread over bins.
__device__ __forceinline__ unsigned mix_key(unsigned key) {
  key ^= key >> 16;
  key *= 0x45d9f3bu;
  key ^= key >> 16;
  return key;
}

}  // namespace

extern "C" __global__ void gather_histogram(const int* perm, const unsigned* keys, unsigned* partial, int n,
                                            int n_bins) {
  extern __shared__ unsigned bins[];
  for (int b = threadIdx.x; b < n_bins; b += blockDim.x) {
    bins[b] = 0u;
  }
  __syncthreads();
  const unsigned mask = static_cast<unsigned>(n_bins - 1);
  const int tile = (n + gridDim.x - 1) / gridDim.x;
  const int begin = blockIdx.x * tile;
  const int end = min(n, begin + tile);
  for (int i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const unsigned key = keys[perm[i]];
    atomicAdd(&bins[mix_key(key) & mask], 1u);
  }
  __syncthreads();
  unsigned* out = partial + static_cast<long long>(blockIdx.x) * n_bins;
  for (int b = threadIdx.x; b < n_bins; b += blockDim.x) {
    out[b] = bins[b];
  }
}
