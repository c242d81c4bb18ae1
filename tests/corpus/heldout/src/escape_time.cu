// Held-out kernel (tests/test_compiler_output_legal.py), first batch: never in the calibration set (its verdicts guided which families the generator grew, not the generated kernels).
#include <cuda_fp16.h>

// Escape-time iteration (Mandelbrot), data-dependent float loop.
extern "C" __global__ void escape_time(int *__restrict__ iters, float x0, float y0, float step, int w, int maxit) {
    int px = blockIdx.x * blockDim.x + threadIdx.x;
    int py = blockIdx.y;
    float cr = x0 + px * step, ci = y0 + py * step;
    float zr = 0.0f, zi = 0.0f;
    int it = 0;
    while (it < maxit && zr * zr + zi * zi < 4.0f) {
        float t = zr * zr - zi * zi + cr;
        zi = 2.0f * zr * zi + ci;
        zr = t;
        ++it;
    }
    if (px < w) iters[py * w + px] = it;
}
