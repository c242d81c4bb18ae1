// An ATen-style kernel: a template in an anonymous namespace inside at::native. nvcc names
// the anonymous namespace per compile (_GLOBAL__N__<hash>_<file>_cu_<hash>_<number>), so a
// PTX made by a separate nvcc run (here with other defines) carries another suffix than the
// cubin of the library's build.
#ifdef LIBRARY_BUILD
static int library_only_helper(int v) { return v + 1; }
#endif

namespace at {
namespace native {
namespace {

template <typename T>
__global__ void row_scale_kernel(const T* __restrict__ x, T* __restrict__ y, int cols) {
  __shared__ T total;
  if (threadIdx.x == 0) total = x[(size_t)blockIdx.x * cols];
  __syncthreads();
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    size_t i = (size_t)blockIdx.x * cols + c;
    y[i] = x[i] * total;
  }
}

template __global__ void row_scale_kernel<float>(const float*, float*, int);

}  // namespace
}  // namespace native
}  // namespace at
