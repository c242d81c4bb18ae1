// Held-out kernel (tests/test_compiler_output_legal.py), second batch: never in the calibration set, and measured only once the generator was frozen.
#include <cuda_fp16.h>

// Leaky-ReLU backward in half precision with a float accumulation of the gradient norm.
extern "C" __global__ void relu_grad_half(__half *__restrict__ dx, float *__restrict__ norm, const __half *__restrict__ x,
                                          const __half *__restrict__ dy, float slope, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float g = 0.f;
    if (i < n) {
        __half xv = x[i], gv = dy[i];
        __half r = __hgt(xv, __float2half(0.f)) ? gv : __hmul(gv, __float2half(slope));
        dx[i] = r;
        g = __half2float(r);
    }
    g *= g;
    for (int o = 16; o > 0; o >>= 1) g += __shfl_xor_sync(0xffffffffu, g, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(norm, g);
}
