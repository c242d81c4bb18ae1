// PUSCH CFO / TA estimator taking its work the way Aerial cuPHY's cfoTaEstLowMimoKernel
// does: one `const __grid_constant__` dynamic descriptor by value (24 bytes: a pointer to an
// array of per-UE-group parameter structs in device memory, the group count as a uint16,
// and a float** to per-group output pointers). Each parameter struct holds tensor
// descriptors ({void* addr; int type; int strides[N]}, strides in elements) and the small
// per-group fields (antennas, layers, DMRS symbols, subcarriers, scales).
//
// The arithmetic is the suite's flat cfo_ta_est (../cfo_ta_est.cu): one CTA per (layer,
// UE group), threads stride over (antenna, subcarrier), warp shuffles then shared memory
// reduce conj(H[t]) * H[t+1] (CFO) and conj(H[sc]) * H[sc+1] (TA), thread 0 takes atan2f.
// Here every size, stride and address is read through the descriptors.
#include <cstdint>

namespace pusch {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kMaxWarps = 32;

template <int N>
struct TensorDescr {
  void* addr;
  int32_t type;  // element type code (0 = complex float here)
  int32_t strides[N];
};

struct CfoTaEstUeGrpPrms {
  TensorDescr<4> tInfoHEst;    // H[ant][layer][dmrs symbol][subcarrier], float2
  TensorDescr<1> tInfoCfoRot;  // summed CFO rotation per layer, float2
  TensorDescr<1> tInfoTaRot;   // summed TA rotation per layer, float2
  uint16_t nRxAnt;
  uint8_t nLayers;
  uint8_t nDmrsSyms;
  uint16_t nSc;
  float cfoScale;  // Hz per radian
  float taScale;   // seconds per radian
};

struct CfoTaEstDynDescr {
  const CfoTaEstUeGrpPrms* pUeGrpPrms;  // nUeGrps structs in device memory
  uint16_t nUeGrps;
  float** ppEst;  // 2 per group: CFO estimate [layer] (Hz), TA estimate [layer] (s)
};

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

__global__ void cfoTaEstDescrKernel(const __grid_constant__ CfoTaEstDynDescr dynDescr) {
  __shared__ float4 partial[kMaxWarps];
  const int group = blockIdx.y;
  if (group >= dynDescr.nUeGrps) {
    return;
  }
  const CfoTaEstUeGrpPrms& prm = dynDescr.pUeGrpPrms[group];
  const int layer = blockIdx.x;
  if (layer >= prm.nLayers) {
    return;
  }
  const float2* H = static_cast<const float2*>(prm.tInfoHEst.addr);
  const int* st = prm.tInfoHEst.strides;
  const int n_sc = prm.nSc;
  const int n_dmrs = prm.nDmrsSyms;
  float2 cfo = make_float2(0.0f, 0.0f);
  float2 ta = make_float2(0.0f, 0.0f);

  const int work = prm.nRxAnt * n_sc;
  for (int w = threadIdx.x; w < work; w += blockDim.x) {
    const int ant = w / n_sc;
    const int sc = w - ant * n_sc;
    const bool has_next_sc = sc + 1 < n_sc;
    const long long base = static_cast<long long>(ant) * st[0] + static_cast<long long>(layer) * st[1] +
                           static_cast<long long>(sc) * st[3];
    float2 prev = H[base];
    if (has_next_sc) {
      acc_conj_mul(ta, prev, H[base + st[3]]);
    }
    for (int t = 1; t < n_dmrs; ++t) {
      const long long off = base + static_cast<long long>(t) * st[2];
      const float2 cur = H[off];
      acc_conj_mul(cfo, prev, cur);
      if (has_next_sc) {
        acc_conj_mul(ta, cur, H[off + st[3]]);
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
      float2* cfo_rot = static_cast<float2*>(prm.tInfoCfoRot.addr);
      float2* ta_rot = static_cast<float2*>(prm.tInfoTaRot.addr);
      cfo_rot[layer * prm.tInfoCfoRot.strides[0]] = make_float2(s.x, s.y);
      ta_rot[layer * prm.tInfoTaRot.strides[0]] = make_float2(s.z, s.w);
      dynDescr.ppEst[2 * group][layer] = atan2f(s.y, s.x) * prm.cfoScale;
      dynDescr.ppEst[2 * group + 1][layer] = atan2f(s.w, s.z) * prm.taScale;
    }
  }
}

}  // namespace pusch
