// Control flow: early exit, if/else chains, while loops, predication, switch.
#include <cuda_runtime.h>

// Early exit + if/else chain.
extern "C" __global__ void clamp_piecewise(float *__restrict__ out,
                                           const float *__restrict__ in,
                                           float lo, float hi, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = in[i];
    float r;
    if (v < lo) {
        r = lo - 0.5f * (lo - v);
    } else if (v > hi) {
        r = hi + 0.25f * (v - hi);
    } else {
        r = v * v;
    }
    out[i] = r;
}

// Data-dependent while loop (Collatz step count) -> divergent loop.
extern "C" __global__ void collatz_steps(int *__restrict__ steps,
                                         const unsigned *__restrict__ start,
                                         int max_steps, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned x = start[i];
    int s = 0;
    while (x > 1u && s < max_steps) {
        if (x & 1u) {
            x = 3u * x + 1u;
        } else {
            x >>= 1;
        }
        ++s;
    }
    steps[i] = s;
}

// Short branches that ptxas turns into predicated instructions / SEL.
extern "C" __global__ void predicated_select(int *__restrict__ out,
                                             const int *__restrict__ a,
                                             const int *__restrict__ b,
                                             int threshold, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int x = a[i];
        int y = b[i];
        int r = x;
        if (x > threshold) r = y - x;
        if (y < 0) r = -r;
        if ((x ^ y) & 4) r += 7;
        out[i] = r;
    }
}

// Dense switch on a runtime opcode -> jump table (BRX) candidate.
extern "C" __global__ void switch_interpreter(float *__restrict__ out,
                                              const int *__restrict__ ops,
                                              const float *__restrict__ a,
                                              const float *__restrict__ b,
                                              int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = a[i];
    float y = b[i];
    float r;
    switch (ops[i]) {
    case 0: r = x + y; break;
    case 1: r = x - y; break;
    case 2: r = x * y; break;
    case 3: r = fmaxf(x, y); break;
    case 4: r = fminf(x, y); break;
    case 5: r = x * x + y; break;
    case 6: r = fabsf(x - y); break;
    case 7: r = x * 0.5f + y * 0.25f; break;
    case 8: r = __int_as_float(__float_as_int(x) ^ __float_as_int(y)); break;
    case 9: r = x > y ? x : -y; break;
    case 10: r = (x + 1.0f) * (y - 1.0f); break;
    case 11: r = x * y * y; break;
    default: r = 0.0f; break;
    }
    out[i] = r;
}
