// Double precision: DFMA / DADD / DMUL, double2 vector loads.
#include <cuda_runtime.h>

// Horner evaluation of a degree-7 polynomial in double precision.
extern "C" __global__ void dpoly_horner(double *__restrict__ out,
                                        const double *__restrict__ x,
                                        const double *__restrict__ coeffs, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        double v = x[i];
        double r = coeffs[7];
        #pragma unroll
        for (int k = 6; k >= 0; --k) r = fma(r, v, coeffs[k]);
        out[i] = r;
    }
}

// daxpy over double2 vectors (128-bit loads).
extern "C" __global__ void daxpy_double2(double2 *__restrict__ y,
                                         const double2 *__restrict__ x,
                                         double a, int n2) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n2) {
        double2 xv = x[i];
        double2 yv = y[i];
        yv.x = a * xv.x + yv.x;
        yv.y = a * xv.y + yv.y;
        y[i] = yv;
    }
}

// Double dot product: grid-stride partials, shared reduction.
extern "C" __global__ void ddot_partial(double *__restrict__ partial,
                                        const double *__restrict__ a,
                                        const double *__restrict__ b, int n) {
    __shared__ double sm[256];
    double acc = 0.0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += blockDim.x * gridDim.x)
        acc += a[i] * b[i];
    sm[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sm[threadIdx.x] += sm[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = sm[0];
}

// Kahan-compensated double summation (DADD chains that must not be reassociated).
extern "C" __global__ void kahan_sum_f64(double *__restrict__ out,
                                         const double *__restrict__ in,
                                         int per_thread, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int begin = t * per_thread;
    if (begin >= n) return;
    int end = min(begin + per_thread, n);
    double sum = 0.0, comp = 0.0;
    for (int i = begin; i < end; ++i) {
        double y = in[i] - comp;
        double s = sum + y;
        comp = (s - sum) - y;
        sum = s;
    }
    out[t] = sum + comp * 0.5;
}
