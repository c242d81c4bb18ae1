// Two RMSNorm kernels over rows of n_cols floats: out = x * rsqrt(mean(x^2) + eps) * w.
//
// rms_norm_f32: in the style of ggml-cuda norm.cu (fused multiply variant):
// one CTA per row, strided scalar sum of squares, warp butterfly reduce, a
// 32-slot shared-memory hop between warps, then a strided scale-and-store pass.
//
// rmsnorm_triton_style: shaped like the SASS Triton emits for an RMSNorm row
// of N = 4096 with num_warps = 8: 256 threads, each owning 4 consecutive
// floats per 1024-column chunk, a reduce pass of float4 loads, and a normalise
// pass unrolled into 4 chunks. No __restrict__: out may alias x and w as far
// as ptxas knows, so each chunk's loads must stay after the previous chunk's
// store - the pattern a SASS scheduler with alias information could improve.

namespace {

constexpr unsigned kFullMask = 0xffffffffu;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) {
    v += __shfl_xor_sync(kFullMask, v, m);
  }
  return v;
}

// Sum over the CTA: warp reduce, one smem slot per warp, warp reduce again.
// Every thread gets the total.
__device__ __forceinline__ float block_sum(float v, float* slots) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int n_warps = (blockDim.x + 31) >> 5;
  v = warp_sum(v);
  if (n_warps == 1) {
    return v;
  }
  if (lane == 0) {
    slots[warp] = v;
  }
  __syncthreads();
  v = lane < n_warps ? slots[lane] : 0.0f;
  return warp_sum(v);
}

constexpr int kTritonThreads = 256;
constexpr int kVec = 4;
constexpr int kChunkCols = kTritonThreads * kVec;  // 1024
constexpr int kChunks = 4;                          // BLOCK = 4096
constexpr int kBlockCols = kChunkCols * kChunks;

}  // namespace

extern "C" __global__ void rms_norm_f32(const float* x, const float* w, float* dst, int ncols, float eps) {
  __shared__ float slots[32];
  const long long row = blockIdx.x;
  const float* xr = x + row * ncols;
  float* dr = dst + row * ncols;
  float sq = 0.0f;
  for (int col = threadIdx.x; col < ncols; col += blockDim.x) {
    const float v = xr[col];
    sq += v * v;
  }
  sq = block_sum(sq, slots);
  const float scale = rsqrtf(sq / static_cast<float>(ncols) + eps);
  for (int col = threadIdx.x; col < ncols; col += blockDim.x) {
    dr[col] = scale * xr[col] * w[col];
  }
}

// Requires blockDim.x == 256 and n_cols % 4 == 0 (16-byte aligned rows).
extern "C" __global__ void rmsnorm_triton_style(const float* x, const float* w, float* out, int n_cols, float eps) {
  __shared__ float slots[32];
  const long long row = blockIdx.x;
  const float* xr = x + row * n_cols;
  float* orow = out + row * n_cols;
  const int lane_col = threadIdx.x * kVec;

  float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  for (int base = 0; base < n_cols; base += kBlockCols) {
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int col = base + c * kChunkCols + lane_col;
      if (col < n_cols) {
        const float4 v = *reinterpret_cast<const float4*>(xr + col);
        acc.x += v.x * v.x;
        acc.y += v.y * v.y;
        acc.z += v.z * v.z;
        acc.w += v.w * v.w;
      }
    }
  }
  const float sq = block_sum((acc.x + acc.y) + (acc.z + acc.w), slots);
  // Triton lowers `/` on fp32 to div.full.f32 (approximate, no slow path).
  const float rstd = rsqrtf(__fdividef(sq, static_cast<float>(n_cols)) + eps);

  for (int base = 0; base < n_cols; base += kBlockCols) {
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int col = base + c * kChunkCols + lane_col;
      if (col < n_cols) {
        const float4 xv = *reinterpret_cast<const float4*>(xr + col);
        const float4 wv = *reinterpret_cast<const float4*>(w + col);
        float4 o;
        o.x = xv.x * rstd * wv.x;
        o.y = xv.y * rstd * wv.y;
        o.z = xv.z * rstd * wv.z;
        o.w = xv.w * rstd * wv.w;
        *reinterpret_cast<float4*>(orow + col) = o;
      }
    }
  }
}
