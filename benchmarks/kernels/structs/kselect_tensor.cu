// FAISS-style k-select as FAISS's headers declare it: a template kernel in faiss::gpu,
// named by its C++ signature (`warpSelect<float, long, false, 32, 2, 128>`), taking its
// matrices as Tensor structs BY VALUE (data pointer, then int64 strides, then int64
// sizes: 40 bytes each for 2 dimensions), plus the queue's initial key and index and k.
// The selection itself is the suite's warp-select (../kselect_core.cuh): one warp per row,
// per-lane thread queues merged into a register-resident warp queue. Rows, row length and
// row pitch come from the Tensors' sizes and strides; indices are written as IndexType
// (int64: FAISS's idx_t), keys and indices start from initK / initV as in FAISS.
#include <cstdint>

#include "../kselect_core.cuh"

namespace faiss {
namespace gpu {

namespace traits {
template <typename T>
struct DefaultPtrTraits {
  typedef T* PtrType;
};
}  // namespace traits

using idx_t = int64_t;

// The members FAISS's Tensor<T, Dim, InnerContig, IndexT, PtrTraits> holds, in its order.
template <typename T, int Dim, bool InnerContig = false, typename IndexT = idx_t,
          template <typename U> class PtrTraits = traits::DefaultPtrTraits>
struct Tensor {
  typename PtrTraits<T>::PtrType data_;
  IndexT stride_[Dim];
  IndexT size_[Dim];

  __device__ __forceinline__ T* row(IndexT r) const { return data_ + r * stride_[0]; }
};

template <typename K, typename IndexType, bool Dir, int NumWarpQ, int NumThreadQ, int ThreadsPerBlock>
__global__ void warpSelect(Tensor<K, 2, true> in, Tensor<K, 2, true> outK, Tensor<IndexType, 2, true> outV,
                           K initK, IndexType initV, int k) {
  static_assert(!Dir, "this suite selects the k smallest (Dir = false)");
  using namespace kselect;
  constexpr int R = NumWarpQ / kWarpSize;
  constexpr int kRowsPerBlock = ThreadsPerBlock / kWarpSize;
  const int lane = threadIdx.x & (kWarpSize - 1);
  const idx_t row = static_cast<idx_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarpSize;
  if (row >= in.size_[0]) {
    return;  // the whole warp leaves together, so full-mask shuffles stay valid
  }
  float wk[R];
  int wi[R];
  float tk[NumThreadQ];
  int ti[NumThreadQ];
#pragma unroll
  for (int r = 0; r < R; ++r) { wk[r] = initK; wi[r] = static_cast<int>(initV); }
#pragma unroll
  for (int t = 0; t < NumThreadQ; ++t) { tk[t] = initK; ti[t] = static_cast<int>(initV); }
  float kth = initK;  // current worst element of the warp queue
  int queued = 0;

  const K* row_in = in.row(row);
  const int n = static_cast<int>(in.size_[1]);
  const int limit = n & ~(kWarpSize - 1);
  for (int i = lane; i < limit; i += kWarpSize) {
    const float v = row_in[i];
    if (v < kth) {
#pragma unroll
      for (int t = NumThreadQ - 1; t > 0; --t) { tk[t] = tk[t - 1]; ti[t] = ti[t - 1]; }
      tk[0] = v; ti[0] = i; ++queued;
    }
    if (__any_sync(kFullMask, queued == NumThreadQ)) {
      merge_thread_queues<R, NumThreadQ>(wk, wi, tk, ti, lane);
#pragma unroll
      for (int t = 0; t < NumThreadQ; ++t) { tk[t] = initK; ti[t] = static_cast<int>(initV); }
      queued = 0;
      kth = __shfl_sync(kFullMask, wk[R - 1], kWarpSize - 1);
    }
  }
  const int tail = limit + lane;
  if (tail < n) {
    const float v = row_in[tail];
    if (v < kth) {
#pragma unroll
      for (int t = NumThreadQ - 1; t > 0; --t) { tk[t] = tk[t - 1]; ti[t] = ti[t - 1]; }
      tk[0] = v; ti[0] = tail;
    }
  }
  merge_thread_queues<R, NumThreadQ>(wk, wi, tk, ti, lane);

  K* out_k = outK.row(row);
  IndexType* out_v = outV.row(row);
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int e = r * kWarpSize + lane;
    if (e < k) {
      out_k[e] = wk[r];
      out_v[e] = static_cast<IndexType>(wi[r]);
    }
  }
}

// The two instantiations FAISS's WarpSelect dispatch uses for k <= 32 and k <= 128
// (queue pairs (32, 2) and (128, 4): FAISS uses 3 for the thread queue at 128; a power
// of two keeps the thread-queue sort a plain bitonic network).
template __global__ void warpSelect<float, idx_t, false, 32, 2, 128>(Tensor<float, 2, true>, Tensor<float, 2, true>,
                                                                     Tensor<idx_t, 2, true>, float, idx_t, int);
template __global__ void warpSelect<float, idx_t, false, 128, 4, 128>(Tensor<float, 2, true>, Tensor<float, 2, true>,
                                                                      Tensor<idx_t, 2, true>, float, idx_t, int);

}  // namespace gpu
}  // namespace faiss
