// Non-inlined device functions: CALL.REL / RET in SASS.
#include <cuda_runtime.h>

// Deliberately out-of-line helper with a loop inside.
__device__ __noinline__ float poly_eval(const float *__restrict__ c, int deg, float x) {
    float r = c[deg];
    for (int k = deg - 1; k >= 0; --k) r = r * x + c[k];
    return r;
}

// Second out-of-line helper, called from a branch.
__device__ __noinline__ int gcd_u(int a, int b) {
    while (b != 0) {
        int t = a % b;
        a = b;
        b = t;
    }
    return a;
}

extern "C" __global__ void call_poly(float *__restrict__ out,
                                     const float *__restrict__ x,
                                     const float *__restrict__ coeffs, int deg,
                                     int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = poly_eval(coeffs, deg, x[i]) + poly_eval(coeffs, deg, -x[i]);
}

extern "C" __global__ void call_gcd(int *__restrict__ out,
                                    const int *__restrict__ a,
                                    const int *__restrict__ b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int x = a[i], y = b[i];
        out[i] = (x > 0 && y > 0) ? gcd_u(x, y) : 0;
    }
}
