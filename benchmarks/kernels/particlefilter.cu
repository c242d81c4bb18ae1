// Particle-filter resampling kernels in the style of Rodinia 3.1
// particlefilter (ex_particle_CUDA_float_seq.cu), in single precision.
//
// normalize_weights: every thread divides its weight by the global sum; global
// thread 0 builds the CDF serially (Rodinia's cdfCalc: a chain of N dependent
// load -> divide -> add -> store steps); each block draws u1 from the LCG and
// writes the systematic-resampling points u[i] = u1 + i/N.
// Unlike Rodinia, the kernel is out-of-place and reads `seed` without writing
// it back: Rodinia's in-place version races between blocks (block 0 builds the
// CDF from weights other blocks may not have normalised yet), which makes its
// output launch-order dependent and unverifiable.
//
// find_index: each particle linearly scans the CDF for the first entry >= u[i]
// (divergent early exit, O(N^2) loads in total) and gathers its position.

namespace {

// Park-Miller-style LCG of Rodinia's d_randu, in unsigned arithmetic (no
// signed overflow), reduced to 31 bits.
__device__ __forceinline__ unsigned lcg_next(unsigned state) {
  return (1103515245u * state + 12345u) & 0x7fffffffu;
}

}  // namespace

extern "C" __global__ void normalize_weights(const float* weights, int N, const float* partial_sums,
                                             float* norm_weights, float* CDF, float* u, const int* seed) {
  __shared__ float sum_s;
  __shared__ float u1_s;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (threadIdx.x == 0) {
    sum_s = partial_sums[0];
    u1_s = (static_cast<float>(lcg_next(static_cast<unsigned>(seed[0]))) / 2147483647.0f) / static_cast<float>(N);
  }
  __syncthreads();
  const float sum = sum_s;
  if (i < N) {
    norm_weights[i] = weights[i] / sum;
  }
  if (i == 0) {
    // Serial CDF as in Rodinia's cdfCalc. CDF may alias weights as far as the
    // compiler knows, so each load waits for the previous store.
    CDF[0] = weights[0] / sum;
    for (int x = 1; x < N; ++x) {
      CDF[x] = weights[x] / sum + CDF[x - 1];
    }
  }
  if (i < N) {
    u[i] = u1_s + static_cast<float>(i) / static_cast<float>(N);
  }
}

extern "C" __global__ void find_index(const float* arrayX, const float* arrayY, const float* CDF, const float* u,
                                      float* xj, float* yj, float* weights, int N) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= N) {
    return;
  }
  int index = -1;
  for (int x = 0; x < N; ++x) {
    if (CDF[x] >= u[i]) {
      index = x;
      break;
    }
  }
  if (index == -1) {
    index = N - 1;
  }
  xj[i] = arrayX[index];
  yj[i] = arrayY[index];
  weights[i] = 1.0f / static_cast<float>(N);
}
