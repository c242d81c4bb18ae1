// EmbeddingBag forward (sum and mean) in the style of PyTorch
// aten/src/ATen/native/cuda/EmbeddingBag.cu: block (32, 8), each warp-row of
// the block owns one 32-wide feature chunk of one bag at a time (grid-stride
// over bags * ceil(dim / 32) chunks) and walks the bag's indices serially:
// load index (int64) -> compute row address -> gather weight -> accumulate.
// Rows equal to padding_idx are skipped and do not count towards the mean.

namespace {

template <bool kMean>
__device__ __forceinline__ void embedding_bag_forward(const long long* indices, const long long* offsets,
                                                      const float* weight, float* output, long long num_indices,
                                                      long long num_bags, long long dim, long long padding_idx) {
  const long long chunks_per_bag = (dim + blockDim.x - 1) / blockDim.x;
  const long long num_chunks = num_bags * chunks_per_bag;
  const long long chunk_stride = static_cast<long long>(gridDim.x) * blockDim.y;
  for (long long chunk = static_cast<long long>(blockIdx.x) * blockDim.y + threadIdx.y; chunk < num_chunks;
       chunk += chunk_stride) {
    const long long feature = (chunk % chunks_per_bag) * blockDim.x + threadIdx.x;
    if (feature >= dim) {
      continue;
    }
    const long long bag = chunk / chunks_per_bag;
    const long long begin = offsets[bag];
    const long long end = bag + 1 < num_bags ? offsets[bag + 1] : num_indices;
    const float* weight_feature = weight + feature;
    float sum = 0.0f;
    long long count = 0;
    for (long long e = begin; e < end; ++e) {
      const long long row = indices[e];
      if (row != padding_idx) {
        sum += weight_feature[row * dim];
        ++count;
      }
    }
    if (kMean) {
      sum = count != 0 ? sum / static_cast<float>(count) : 0.0f;
    }
    output[bag * dim + feature] = sum;
  }
}

}  // namespace

extern "C" __global__ void embedding_bag_sum(const long long* indices, const long long* offsets, const float* weight,
                                             float* output, long long num_indices, long long num_bags,
                                             long long dim, long long padding_idx) {
  embedding_bag_forward<false>(indices, offsets, weight, output, num_indices, num_bags, dim, padding_idx);
}

extern "C" __global__ void embedding_bag_mean(const long long* indices, const long long* offsets, const float* weight,
                                              float* output, long long num_indices, long long num_bags,
                                              long long dim, long long padding_idx) {
  embedding_bag_forward<true>(indices, offsets, weight, output, num_indices, num_bags, dim, padding_idx);
}
