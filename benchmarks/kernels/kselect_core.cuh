// Warp-wide sorting network pieces of the FAISS-style k-select kernels, shared by the flat
// kernels (kselect.cu) and the Tensor-struct ones (structs/kselect_tensor.cu).
//
// Register layout of a warp-distributed list of length 32*R: element
// e = r*32 + lane lives in register r of lane `lane`. Compare-exchange with a
// partner at distance d < 32 is a __shfl_xor_sync; d >= 32 is a register swap.
#pragma once
#include <cfloat>

namespace kselect {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kWarpSize = 32;

// Lane-crossing compare-exchange: this lane keeps the min or the max of its
// (key, index) pair and the partner lane's pair. Strict compares keep ties put.
__device__ __forceinline__ void lane_exchange(float& key, int& idx, int lane_mask, bool keep_min) {
  const float other_key = __shfl_xor_sync(kFullMask, key, lane_mask);
  const int other_idx = __shfl_xor_sync(kFullMask, idx, lane_mask);
  const bool take = keep_min ? (other_key < key) : (other_key > key);
  if (take) {
    key = other_key;
    idx = other_idx;
  }
}

// In-lane compare-exchange of registers a < b of the distributed list.
__device__ __forceinline__ void reg_exchange(float& ka, int& ia, float& kb, int& ib, bool ascending) {
  const bool swap = ascending ? (kb < ka) : (ka < kb);
  if (swap) {
    const float tk = ka; ka = kb; kb = tk;
    const int ti = ia; ia = ib; ib = ti;
  }
}

// One stage of a bitonic network over the 32*R list: compare element e with
// e ^ stride, ascending where (e & size) == 0.
template <int R>
__device__ __forceinline__ void bitonic_stage(float (&key)[R], int (&idx)[R], int lane, int size, int stride) {
  if (stride >= kWarpSize) {
    const int reg_stride = stride / kWarpSize;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int p = r ^ reg_stride;
      if (p > r) {
        reg_exchange(key[r], idx[r], key[p], idx[p], ((r * kWarpSize) & size) == 0);
      }
    }
  } else {
    const bool lower = (lane & stride) == 0;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const bool ascending = ((r * kWarpSize + lane) & size) == 0;
      lane_exchange(key[r], idx[r], stride, ascending == lower);
    }
  }
}

// Full bitonic sort (ascending) of the warp-distributed 32*R list.
template <int R>
__device__ __forceinline__ void warp_bitonic_sort(float (&key)[R], int (&idx)[R], int lane) {
#pragma unroll
  for (int size = 2; size <= R * kWarpSize; size <<= 1) {
#pragma unroll
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      bitonic_stage<R>(key, idx, lane, size, stride);
    }
  }
}

// Sort a bitonic 32*R list ascending (half-cleaner cascade).
template <int R>
__device__ __forceinline__ void warp_bitonic_merge(float (&key)[R], int (&idx)[R], int lane) {
#pragma unroll
  for (int stride = (R * kWarpSize) >> 1; stride > 0; stride >>= 1) {
    bitonic_stage<R>(key, idx, lane, 2 * R * kWarpSize, stride);
  }
}

// Merge the (unsorted) thread queues into the sorted warp queue, keeping the
// 32*R smallest. Sorting the thread queues first lets us pair warp element i
// with thread-queue element n-1-i (lane ^ 31), which yields a bitonic list
// holding the n smallest of the union; one bitonic merge re-sorts it.
template <int R, int T>
__device__ __forceinline__ void merge_thread_queues(float (&wk)[R], int (&wi)[R], float (&tk)[T], int (&ti)[T],
                                                    int lane) {
  warp_bitonic_sort<T>(tk, ti, lane);
  constexpr int kPairs = T < R ? T : R;
#pragma unroll
  for (int j = 0; j < kPairs; ++j) {
    const float other_key = __shfl_xor_sync(kFullMask, tk[j], kWarpSize - 1);
    const int other_idx = __shfl_xor_sync(kFullMask, ti[j], kWarpSize - 1);
    if (other_key < wk[R - 1 - j]) {
      wk[R - 1 - j] = other_key;
      wi[R - 1 - j] = other_idx;
    }
  }
  warp_bitonic_merge<R>(wk, wi, lane);
}

}  // namespace kselect
