// Held-out kernel (tests/test_compiler_output_legal.py), first batch: never in the calibration set (its verdicts guided which families the generator grew, not the generated kernels).
#include <cuda_fp16.h>

// 2-D five-point FP64 stencil with a variable coefficient.
extern "C" __global__ void stencil5_f64(double *__restrict__ out, const double *__restrict__ in,
                                        const double *__restrict__ coef, int nx, int ny, double dt) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 1 || y < 1 || x >= nx - 1 || y >= ny - 1) return;
    size_t c = (size_t)y * nx + x;
    double lap = in[c - 1] + in[c + 1] + in[c - nx] + in[c + nx] - 4.0 * in[c];
    out[c] = in[c] + dt * coef[c] * lap;
}
