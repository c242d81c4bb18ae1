// Two instantiations of one template kernel in one cubin: a launch spec names one of them.
template <int BLOCK>
__global__ void rms_norm_f32(const float* __restrict__ x, float* __restrict__ y, int cols, float eps) {
  __shared__ float partial[BLOCK];
  const float* row = x + (size_t)blockIdx.x * cols;
  float sum = 0.0f;
  for (int c = threadIdx.x; c < cols; c += BLOCK) sum += row[c] * row[c];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  float scale = rsqrtf(partial[0] / cols + eps);
  for (int c = threadIdx.x; c < cols; c += BLOCK) y[(size_t)blockIdx.x * cols + c] = row[c] * scale;
}

template __global__ void rms_norm_f32<32>(const float*, float*, int, float);
template __global__ void rms_norm_f32<1024>(const float*, float*, int, float);
