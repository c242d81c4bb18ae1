// 5G NR PUSCH carrier-frequency-offset (CFO) and timing-advance (TA)
// estimator in the style of NVIDIA Aerial cuPHY cfoTaEstLowMimoKernel.
//
// Input: DMRS channel estimates H[group][ant][layer][dmrs_sym][sc] (float2).
// CFO: the phase of sum conj(H[t][sc]) * H[t+1][sc] over adjacent DMRS symbols.
// TA:  the phase of sum conj(H[t][sc]) * H[t][sc+1] over adjacent subcarriers.
// One CTA per (layer, UE group): threads stride over (antenna, subcarrier)
// pairs, reduce with warp shuffles then shared memory, and thread 0 converts
// the summed rotations with atan2f. cuPHY splits PRBs over several CTAs and
// elects a last CTA with atomics; we keep one CTA per layer so a launch needs
// no pre-zeroed counters and is repeatable.

namespace {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kMaxWarps = 32;

// acc += conj(a) * b
__device__ __forceinline__ void acc_conj_mul(float2& acc, float2 a, float2 b) {
  acc.x += a.x * b.x + a.y * b.y;
  acc.y += a.x * b.y - a.y * b.x;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) {
    v += __shfl_xor_sync(kFullMask, v, m);
  }
  return v;
}

}  // namespace

extern "C" __global__ void cfo_ta_est(const float2* H, float* cfo_est, float* ta_est, float2* cfo_rot,
                                      float2* ta_rot, int n_ant, int n_layers, int n_dmrs, int n_sc,
                                      float cfo_scale, float ta_scale) {
  __shared__ float4 partial[kMaxWarps];
  const int layer = blockIdx.x;
  const int group = blockIdx.y;
  float2 cfo = make_float2(0.0f, 0.0f);
  float2 ta = make_float2(0.0f, 0.0f);

  const int work = n_ant * n_sc;
  for (int w = threadIdx.x; w < work; w += blockDim.x) {
    const int ant = w / n_sc;
    const int sc = w - ant * n_sc;
    const bool has_next_sc = sc + 1 < n_sc;
    const long long base =
        ((static_cast<long long>(group * n_ant + ant) * n_layers + layer) * n_dmrs) * n_sc + sc;
    float2 prev = H[base];
    if (has_next_sc) {
      acc_conj_mul(ta, prev, H[base + 1]);
    }
    for (int t = 1; t < n_dmrs; ++t) {
      const long long off = base + static_cast<long long>(t) * n_sc;
      const float2 cur = H[off];
      acc_conj_mul(cfo, prev, cur);
      if (has_next_sc) {
        acc_conj_mul(ta, cur, H[off + 1]);
      }
      prev = cur;
    }
  }

  float4 s = make_float4(warp_sum(cfo.x), warp_sum(cfo.y), warp_sum(ta.x), warp_sum(ta.y));
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int n_warps = (blockDim.x + 31) >> 5;
  if (lane == 0) {
    partial[warp] = s;
  }
  __syncthreads();
  if (warp == 0) {
    s = lane < n_warps ? partial[lane] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    s = make_float4(warp_sum(s.x), warp_sum(s.y), warp_sum(s.z), warp_sum(s.w));
    if (lane == 0) {
      const int out = group * n_layers + layer;
      cfo_rot[out] = make_float2(s.x, s.y);
      ta_rot[out] = make_float2(s.z, s.w);
      cfo_est[out] = atan2f(s.y, s.x) * cfo_scale;
      ta_est[out] = atan2f(s.w, s.z) * ta_scale;
    }
  }
}
