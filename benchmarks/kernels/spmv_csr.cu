// CSR sparse matrix-vector product y = A x, "CSR-vector" scheme (one warp per
// row, as in Bell & Garland and cuSPARSE's short-row path). Each nonzero is a
// three-step dependent chain: row_ptr -> col_idx[j] -> x[col_idx[j]] (an
// irregular gather), then a warp butterfly reduction.

namespace {
constexpr unsigned kFullMask = 0xffffffffu;
}  // namespace

extern "C" __global__ void spmv_csr_vector(const int* row_ptr, const int* col_idx, const float* vals, const float* x,
                                           float* y, int n_rows) {
  const int lane = threadIdx.x & 31;
  const int row = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  if (row >= n_rows) {
    return;
  }
  const int begin = row_ptr[row];
  const int end = row_ptr[row + 1];
  float sum = 0.0f;
  for (int j = begin + lane; j < end; j += 32) {
    sum += vals[j] * x[col_idx[j]];
  }
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) {
    sum += __shfl_xor_sync(kFullMask, sum, m);
  }
  if (lane == 0) {
    y[row] = sum;
  }
}
