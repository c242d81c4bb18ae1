// A single-pass sum with a last-block counter the kernel does NOT reset: each CTA writes its
// partial sum, fences, and takes a ticket with atomicAdd; the CTA that draws the last
// ticket adds the partials in block order (deterministic) and writes the total. Libraries
// written this way (cuPHY's multi-CTA estimators, CUB's single-pass patterns) expect the
// caller to clear the counter before every launch; a launch spec says so with a `zeros`
// buffer. The kernel is a template taking its arguments as one struct by value, so its
// symbol is mangled (`lastBlockSum<256>`) and the counter is reached through a pointer
// inside the struct.
#include <cstdint>

namespace reduce {

struct SumArgs {
  const float* in;
  float* partial;     // one float per CTA
  unsigned* ticket;   // must be 0 before the launch
  float* result;
  int64_t n;
};

template <int Threads>
__global__ void lastBlockSum(SumArgs args) {
  __shared__ float sm[Threads];
  __shared__ bool is_last;
  float acc = 0.0f;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * Threads + threadIdx.x; i < args.n;
       i += static_cast<int64_t>(Threads) * gridDim.x) {
    acc += args.in[i];
  }
  sm[threadIdx.x] = acc;
  __syncthreads();
#pragma unroll
  for (int s = Threads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      sm[threadIdx.x] += sm[threadIdx.x + s];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    args.partial[blockIdx.x] = sm[0];
    __threadfence();
    is_last = atomicAdd(args.ticket, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (is_last && threadIdx.x == 0) {
    __threadfence();
    float total = 0.0f;
    const volatile float* partial = args.partial;
    for (unsigned b = 0; b < gridDim.x; ++b) {
      total += partial[b];
    }
    *args.result = total;
  }
}

template __global__ void lastBlockSum<256>(SumArgs);

}  // namespace reduce
